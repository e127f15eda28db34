/**
 * `delimiter: 'auto'`: commas, semicolons and tabs outside quotes counted on the header line, the most
 * frequent wins (a tie goes to the comma, then the semicolon). Semicolons are what Excel writes as "CSV" where
 * the decimal mark is a comma; tabs are its "Text (Tab delimited)" and "Unicode Text".
 */
import { open } from 'node:fs/promises';

export type Delimiter = ',' | ';' | '\t';

/** In the order a tie is decided. */
const DELIMITERS: readonly Delimiter[] = [',', ';', '\t'];

/** The first non-empty line of the text (BOM and leading blank lines skipped), cut at a line break outside quotes. */
export function headerLine(text: string): string {
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (start < text.length && (text[start] === '\n' || text[start] === '\r')) start++;
  let inQuotes = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') inQuotes = !inQuotes;
    else if (!inQuotes && (c === '\n' || c === '\r')) return text.slice(start, i);
  }
  return text.slice(start);
}

export function sniffDelimiter(text: string): Delimiter {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let inQuotes = false;
  for (const c of headerLine(text)) {
    if (c === '"') inQuotes = !inQuotes;
    else if (!inQuotes && counts.has(c)) counts.set(c, (counts.get(c) as number) + 1);
  }
  let best: Delimiter = ',';
  for (const d of DELIMITERS) if ((counts.get(d) as number) > (counts.get(best) as number)) best = d;
  return best;
}

/** Reads at most `maxBytes` from the start of the file and sniffs its delimiter. */
export async function sniffFileDelimiter(path: string, maxBytes: number): Promise<Delimiter> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
    // Lenient decoding is fine here: the streaming pass rejects bad UTF-8 with its offset.
    return sniffDelimiter(new TextDecoder('utf-8').decode(buffer.subarray(0, bytesRead)));
  } finally {
    await handle.close();
  }
}
