/**
 * The outbox files of a batch, for download. Only names found by listing
 * the outbox that start with the batch's outbox name are ever opened, and
 * never through a link: a name in a URL is looked up, not joined to a path.
 */
import { constants, type Stats } from 'node:fs';
import { open, readdir, lstat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

export interface OutboxFile {
  name: string;
  size: number;
  mtimeMs: number;
}

/** Regular files of the outbox named `<prefix>.*` (temp files of writes in progress start with a dot and are left out). */
export async function batchFiles(outbox: string, prefix: string): Promise<OutboxFile[]> {
  const names = await readdir(outbox).catch(() => [] as string[]);
  const out: OutboxFile[] = [];
  for (const name of names) {
    if (!name.startsWith(`${prefix}.`)) continue;
    const st: Stats | null = await lstat(join(outbox, name)).catch(() => null);
    if (st?.isFile()) out.push({ name, size: st.size, mtimeMs: st.mtimeMs });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Opens one of the batch's files by name (as listed), or null; never follows a link. */
export async function openBatchFile(outbox: string, prefix: string, name: string): Promise<{ handle: FileHandle; size: number } | null> {
  const listed = (await batchFiles(outbox, prefix)).find((f) => f.name === name);
  if (!listed) return null;
  const handle = await open(join(outbox, listed.name), constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
  if (!handle) return null;
  const st = await handle.stat();
  if (!st.isFile()) {
    await handle.close();
    return null;
  }
  return { handle, size: st.size };
}

export function contentTypeOf(name: string): string {
  if (name.endsWith('.xlsx')) return 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
  if (name.endsWith('.csv')) return 'text/csv; charset=utf-8';
  return 'application/octet-stream';
}

/** A Content-Disposition for a download, the name as ASCII and as UTF-8 (RFC 6266). */
export function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
