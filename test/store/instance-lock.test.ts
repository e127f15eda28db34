/**
 * One daemon per SQLite state directory and per SQLite database file: `database.filename` can put the file
 * outside the state directory, so two daemons with their own state directories could otherwise share one file,
 * each believing it is alone (marking the other's creates UNKNOWN, taking over its reader leases).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireInstanceLocks, type InstanceLock } from '../../src/store/index.js';

describe('instance locks (SQLite)', () => {
  let dir = '';
  const held: InstanceLock[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-lock-'));
  });
  afterEach(async () => {
    for (const l of held.splice(0)) l.release();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a second daemon on the same database file from another state directory, naming the file and the holder', () => {
    const shared = join(dir, 'db', 'shared.sqlite');
    held.push(acquireInstanceLocks(join(dir, 'state-a'), shared));
    let refused: unknown;
    try {
      held.push(acquireInstanceLocks(join(dir, 'state-b'), shared));
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ code: 'DATABASE_FILE_LOCKED' });
    const message = (refused as Error).message;
    expect(message).toContain(`database file ${shared}`);
    expect(message).toContain(`pid ${process.pid}`);
    expect(message).toContain('database.filename');
    // The refused one let go of its state directory: another database file may use it.
    held.push(acquireInstanceLocks(join(dir, 'state-b'), join(dir, 'db', 'other.sqlite')));
  });

  it('refuses a second daemon on the same state directory first', () => {
    held.push(acquireInstanceLocks(join(dir, 'state'), join(dir, 'a.sqlite')));
    expect(() => acquireInstanceLocks(join(dir, 'state'), join(dir, 'b.sqlite'))).toThrow(
      expect.objectContaining({ code: 'STATE_DIR_LOCKED' }) as Error,
    );
  });

  it('frees both once released', () => {
    const shared = join(dir, 'shared.sqlite');
    acquireInstanceLocks(join(dir, 'state-a'), shared).release();
    held.push(acquireInstanceLocks(join(dir, 'state-b'), shared));
  });
});
