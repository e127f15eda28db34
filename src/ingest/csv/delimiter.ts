/** `delimiter: 'auto'`: commas and semicolons outside quotes counted on the header line; a tie means comma. */
import { open } from 'node:fs/promises';

export type Delimiter = ',' | ';';

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
  const line = headerLine(text);
  let commas = 0;
  let semicolons = 0;
  let inQuotes = false;
  for (const c of line) {
    if (c === '"') inQuotes = !inQuotes;
    else if (!inQuotes && c === ',') commas++;
    else if (!inQuotes && c === ';') semicolons++;
  }
  return semicolons > commas ? ';' : ',';
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
