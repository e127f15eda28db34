/**
 * What the approval end-to-end tests share: real users of this machine
 * (named in /etc/passwd) as uploader and approvers, batch files of PHP rows
 * with known totals, dropping a batch or an approval file owned by a given
 * user (chown: the tests run as root), and reading the reply files.
 */
import { readFileSync } from 'node:fs';
import { chown, mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeRows, toCsv, type BatchRow } from './batch-files.js';
import { waitFor } from './harness.js';

/** chown needs root; elsewhere the tests say so and are skipped. */
export const IS_ROOT = process.getuid?.() === 0;
export const WHY_SKIPPED = 'file owners are set with chown, which needs root';

export interface SystemUser {
  name: string;
  uid: number;
}

/** `n` users of this machine other than root and nobody, from /etc/passwd (daemon, bin, sys, … on Debian). */
export function machineUsers(n: number): SystemUser[] {
  const users = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length > 3 && /^[a-z_][a-z0-9_-]*$/.test(f[0] as string))
    .map((f) => ({ name: f[0] as string, uid: Number(f[2]) }))
    .filter((u) => u.uid > 0 && u.uid < 65534);
  const seen = new Set<number>();
  const distinct = users.filter((u) => !seen.has(u.uid) && seen.add(u.uid));
  if (distinct.length < n) throw new Error(`this machine has ${distinct.length} users besides root; the approval tests need ${n}`);
  return distinct.slice(0, n);
}

/** A uid no user of this machine has. */
export function unknownUid(): number {
  const used = new Set(
    readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((l) => Number(l.split(':')[2])),
  );
  let uid = 54_321;
  while (used.has(uid)) uid++;
  return uid;
}

/** `count` valid PHP rows of `amount` each (accounts that neither cancel nor hold in the sandbox). */
export function phpRows(prefix: string, count: number, amount: string): BatchRow[] {
  return makeRows(prefix, count).map((r, k) => ({
    ...r,
    payoutCurrency: 'PHP',
    payoutAmount: amount,
    country: 'PH',
    accountNumber: `0012345${String(k + 1).padStart(3, '0')}42`,
    bankCode: 'BOPIPHMM',
  }));
}

export function phpCsv(prefix: string, count: number, amount: string): string {
  return toCsv(phpRows(prefix, count, amount));
}

/** Writes `content` elsewhere, gives it to `uid`, then renames it into `dir` (how an SFTP upload lands). */
export async function dropOwned(staging: string, dir: string, name: string, content: string | Uint8Array, uid: number): Promise<void> {
  await mkdir(staging, { recursive: true });
  const tmp = join(staging, `${Date.now()}-${Math.random().toString(16).slice(2)}-${name}`);
  await writeFile(tmp, content);
  await chown(tmp, uid, uid);
  await rename(tmp, join(dir, name));
}

/** The approval file text finance writes: the decision, and the batch id and the SHA-256 from the ack. */
export function approvalText(batchId: string, sha256: string, extra = '', decision: 'approve' | 'reject' = 'approve'): string {
  return `decision: ${decision}\nbatch: ${batchId}\nsha256: ${sha256}\n${extra}`;
}

export interface Reply {
  name: string;
  fields: Record<string, string>;
}

/** Waits for the reply to the approval file `name` (the `skip`-th one when it was dropped more than once). */
export async function waitForReply(outbox: string, name: string, skip = 0, timeoutMs = 15_000): Promise<Reply> {
  return waitFor(
    async () => {
      const replies = (await readdir(outbox)).filter((n) => n.endsWith(`_${name}.reply.txt`)).sort();
      const found = replies[skip];
      if (!found) return null;
      const text = await readFile(join(outbox, found), 'utf8');
      const fields = Object.fromEntries(
        text
          .split('\n')
          .filter((l) => l.includes(': '))
          .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
      );
      return { name: found, fields };
    },
    `the reply to ${name}`,
    timeoutMs,
  );
}
