/**
 * Zip archives read into their entries and written back in another order: workbooks whose parts are stored
 * in an order no spreadsheet writes, as a tool that re-zips a workbook can leave them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { crc32, deflateRawSync } from 'node:zlib';
import unzipper from 'unzipper';

/** The entries of a zip file, in the order they are stored. */
export async function zipEntries(path: string): Promise<Map<string, Buffer>> {
  const entries = new Map<string, Buffer>();
  const zip = unzipper.Parse({ forceStream: true });
  zip.end(await readFile(path));
  for await (const entry of zip) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    entries.set(entry.path, Buffer.concat(chunks));
  }
  return entries;
}

/**
 * Writes `entries` as a zip (deflated, as spreadsheets write them), in their order; those named in `stored` are
 * stored as they are (method 0), so their bytes sit in the file where a test put them. With `descriptors`, each
 * part's checksum and sizes follow its data (flag 0x08, as LibreOffice and streaming writers do), its header's zero.
 */
export async function writeZip(
  path: string,
  entries: [string, Buffer][],
  stored: readonly string[] = [],
  { descriptors = false }: { descriptors?: boolean } = {},
): Promise<void> {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const nameBytes = Buffer.from(name, 'utf8');
    const method = stored.includes(name) ? 0 : 8;
    const packed = method === 0 ? data : deflateRawSync(data);
    // Version needed 2.0, the flags, the method (8: deflate, 0: stored), then CRC-32 and both sizes.
    const fields = (header: Buffer, at: number, known: boolean): void => {
      header.writeUInt16LE(20, at);
      header.writeUInt16LE(descriptors ? 0x08 : 0, at + 2);
      header.writeUInt16LE(method, at + 4);
      header.writeUInt32LE(known ? crc32(data) : 0, at + 10);
      header.writeUInt32LE(known ? packed.length : 0, at + 14);
      header.writeUInt32LE(known ? data.length : 0, at + 18);
      header.writeUInt16LE(nameBytes.length, at + 22);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    fields(local, 4, !descriptors);
    const descriptor = Buffer.alloc(descriptors ? 16 : 0);
    if (descriptors) {
      descriptor.writeUInt32LE(0x08074b50, 0);
      descriptor.writeUInt32LE(crc32(data), 4);
      descriptor.writeUInt32LE(packed.length, 8);
      descriptor.writeUInt32LE(data.length, 12);
    }
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    fields(central, 6, true);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed, descriptor);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length + descriptor.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  await writeFile(path, Buffer.concat([...locals, directory, end]));
}

/** Rewrites a zip with the entries `first` at its start and `last` at its end, the rest between as they were. */
export async function reorderZip(path: string, first: string[], last: string[] = []): Promise<void> {
  const entries = await zipEntries(path);
  const named = (names: string[]): [string, Buffer][] =>
    names.map((n) => {
      const data = entries.get(n);
      if (data === undefined) throw new Error(`${path} has no entry ${n}`);
      return [n, data];
    });
  const middle = [...entries].filter(([n]) => !first.includes(n) && !last.includes(n));
  await writeZip(path, [...named(first), ...middle, ...named(last)]);
}
