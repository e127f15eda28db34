/**
 * The part of unzipper's documented API that ./scan.ts uses (the package ships no types): `Parse` reads a zip
 * as a stream, handing over its entries in the order they are stored.
 */
declare module 'unzipper' {
  import type { Duplex, Readable } from 'node:stream';

  export interface Entry extends Readable {
    /** The entry's path in the zip. */
    path: string;
    type: 'Directory' | 'File';
    /** The entry's local header: its general-purpose flags and CRC-32 (0 when flag 0x08 defers it to after the data). */
    vars: { flags: number; crc32: number };
    /** Reads the entry's bytes to nowhere, so the zip stream goes on to the next entry. */
    autodrain(): unknown;
  }

  const unzipper: {
    Parse(options: { forceStream: true }): Duplex & AsyncIterable<Entry>;
  };
  export default unzipper;
}
