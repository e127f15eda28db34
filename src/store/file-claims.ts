/** Which instance took a file from a shared inbox: decided by the file_claims primary key, not the file system alone. */
import type { Database } from './db.js';

/** Records that this instance takes the inbox file `fileKey`; only the first instance to record it gets true. */
export async function claimFileInDatabase(db: Database, fileKey: string, instanceId: string, now: number): Promise<boolean> {
  const inserted = (await db('file_claims')
    .insert({ file_key: fileKey.slice(0, 700), instance_id: instanceId, claimed_at: now })
    .onConflict('file_key')
    .ignore()
    .returning('file_key')) as unknown[];
  return inserted.length === 1;
}

export async function releaseFileClaim(db: Database, fileKey: string): Promise<void> {
  await db('file_claims')
    .where({ file_key: fileKey.slice(0, 700) })
    .delete();
}

/** Forgets every file claim (one instance at start: any claim left was its own, interrupted). */
export async function releaseAllFileClaims(db: Database): Promise<void> {
  await db('file_claims').delete();
}

/** Forgets claims older than a lease: the file was renamed long ago, or its claimer died before renaming it. */
export async function releaseStaleFileClaims(db: Database, claimedBefore: number): Promise<void> {
  await db('file_claims').where('claimed_at', '<', claimedBefore).delete();
}
