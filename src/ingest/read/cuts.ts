/**
 * Where a large batch file is cut to be read in parts: right after the
 * first line feed at or after each even share of its size, with the number
 * of line breaks before each cut (a lone CR, an LF and a CRLF are one break
 * each, as src/ingest/csv/lines.ts counts them), so a part numbers its lines
 * as a read of the whole file would.
 *
 * Nothing here looks at quotes: a cut that falls inside a quoted value
 * holding a line break is found out by reading the part before it, which
 * then ends inside quotes (a file error), and the file is read again in one
 * part. Every other cut is a record boundary.
 */
import { open } from 'node:fs/promises';

const LF = 0x0a;
const CR = 0x0d;

export interface Cut {
  /** First byte of the part after the cut. */
  at: number;
  /** Line breaks before it. */
  lineOffset: number;
}

/**
 * The cuts that split a file of `size` bytes into at most `parts` parts, in
 * order; fewer when the file has no line feed after a share (a file of one
 * long line, or with lone CRs only) or a part would be empty.
 */
export async function cutsOf(path: string, size: number, parts: number): Promise<Cut[]> {
  const targets: number[] = [];
  for (let k = 1; k < parts; k++) targets.push(Math.floor((size * k) / parts));
  const cuts: Cut[] = [];
  if (targets.length === 0) return cuts;
  let base = 0;
  let breaks = 0;
  // A CR ending the previous chunk: a break of its own unless this chunk starts with its LF.
  let crAtEnd = false;
  // One buffer, read into again and again: the half of a large file scanned leaves no garbage behind.
  const file = await open(path, 'r');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  try {
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, base);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      if (crAtEnd && chunk[0] !== LF) breaks++;
      crAtEnd = false;
      let next = targets[cuts.length];
      let cr = chunk.indexOf(CR);
      for (let lf = chunk.indexOf(LF); lf !== -1; lf = chunk.indexOf(LF, lf + 1)) {
        // CRs before this LF are breaks of their own, but the one right before it (a CRLF).
        for (; cr !== -1 && cr < lf; cr = chunk.indexOf(CR, cr + 1)) if (cr !== lf - 1) breaks++;
        breaks++;
        if (next !== undefined && base + lf >= next) {
          const at = base + lf + 1;
          if (at < size && (cuts.length === 0 || at > (cuts[cuts.length - 1] as Cut).at)) cuts.push({ at, lineOffset: breaks });
          next = targets[cuts.length];
          // A later share may fall before this cut (very long lines): its cut is the next line feed.
          while (next !== undefined && next < at) {
            targets.splice(cuts.length, 1);
            next = targets[cuts.length];
          }
          if (next === undefined) return cuts;
        }
      }
      // CRs after the last LF; one ending the chunk waits for the next chunk's first byte.
      for (; cr !== -1; cr = chunk.indexOf(CR, cr + 1)) {
        if (cr === chunk.length - 1) crAtEnd = true;
        else breaks++;
      }
      base += chunk.length;
    }
    return cuts;
  } finally {
    await file.close();
  }
}
