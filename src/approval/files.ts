/**
 * Approval files, the way finance approves over SFTP: `<batch id>.approve`
 * or `<batch id>.reject` dropped into `paths.approvals`, holding the
 * decision, the batch id and the SHA-256 from the ack (and a comment, or the
 * reason of a rejection). The approver is the file's owner, which the SFTP
 * server sets from the login; a rename or a hard link keeps the owner, so
 * the decision is read from the content and must agree with the name, and
 * the file must be one only its owner can write (one hard link, not
 * writable by group or others). Each file is taken once (a rename into the
 * state directory: with several instances only one gets it), kept there as
 * a copy of the bytes read, decided by decideApproval, and answered in the
 * outbox with a reply file, whether it was applied or refused and why.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir, rename, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../report/index.js';
import { isIgnoredName, newClaimId, outboxSafeName } from '../ingest/inbox/index.js';
import { decideApproval, READY_WAIT_MS, type ApprovalDeps, type ApprovalResult } from './decide.js';
import { ApprovalError, isApprovalError, PRIVATE_FILE_HOWTO } from './errors.js';
import { getBatch } from '../store/index.js';
import { isBeingRead } from '../domain/lifecycle.js';
import { safeError } from '../log/index.js';

export interface ApprovalFileOptions {
  /** paths.approvals. */
  dir: string;
  /** Where taken files are kept (under the state directory, on the approvals folder's filesystem). */
  takenDir: string;
  /** Where reply files go (the outbox). */
  replyDir: string;
  /** A file must be unchanged this long before it is read (an upload in progress is not). */
  stableForMs: number;
  /** Larger files are refused unread. */
  maxFileBytes: number;
  bom: boolean;
}

/** What one approval file said. */
export interface ApprovalFileContent {
  /** Every `decision:` line's value, lower-cased, in file order. */
  decisions: string[];
  batchId: string | null;
  sha256: string | null;
  comment: string | null;
  reason: string | null;
  /** The `round:` line: the approval round the approver was shown (from 1); NaN when not a whole number from 1. */
  round: number | null;
}

const BATCH_ID = /\bB\d{8}-\d{6}-[0-9a-f]{6}\b/;
const SHA256 = /\b[0-9a-fA-F]{64}\b/;
/** `<batch id>.approve`, or `<batch id>.<anything>.approve` (two approvers dropping at once need two names). */
const NAME = /^([^.]+)(?:\..*)?\.(approve|reject)$/;

/**
 * Reads `decision: …`, `batch: …`, `sha256: …`, `round: …`, `comment: …`, `reason: …` lines; the batch id and the hash are
 * also found bare, anywhere (a copy and paste of the ack's cells). Pure.
 */
export function parseApprovalFile(text: string): ApprovalFileContent {
  const out: ApprovalFileContent = { decisions: [], batchId: null, sha256: null, comment: null, reason: null, round: null };
  for (const raw of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const line = raw.trim();
    const kv = /^([A-Za-z0-9_-]+)\s*[:=]\s*(.*)$/.exec(line);
    const key = kv?.[1]?.toLowerCase();
    const value = kv?.[2]?.trim() ?? '';
    if (key === 'decision') out.decisions.push(value.toLowerCase());
    else if (key === 'comment') out.comment = value || null;
    else if (key === 'reason') out.reason = value || null;
    else if (key === 'round') out.round = /^[1-9]\d{0,8}$/.test(value) ? Number(value) : NaN;
    else {
      out.batchId ??= BATCH_ID.exec(line)?.[0] ?? null;
      out.sha256 ??= SHA256.exec(line)?.[0]?.toLowerCase() ?? null;
    }
  }
  return out;
}

/**
 * The decision written inside must be the one the name gives: the owner (the approver) wrote the content, while
 * anyone with write access to the folder can rename or hard-link a file, which keeps its owner.
 */
function checkStatedDecision(name: string, kind: 'approve' | 'reject', content: ApprovalFileContent): void {
  const stated = [...new Set(content.decisions)];
  if (stated.length === 0) {
    throw new ApprovalError(
      'APPROVAL_BAD_FILE',
      `${name} holds no "decision:" line: the decision must be stated inside, not only in the name; write "decision: approve" ` +
        `in a <batch id>.approve, "decision: reject" and a reason in a <batch id>.reject, and drop it again`,
    );
  }
  if (stated.length > 1) {
    throw new ApprovalError(
      'APPROVAL_BAD_FILE',
      `${name} states more than one decision (${stated.join(', ')}); keep one line "decision: ${kind}" and drop it again`,
    );
  }
  const [said] = stated as [string];
  if (said !== 'approve' && said !== 'reject') {
    throw new ApprovalError(
      'APPROVAL_BAD_FILE',
      `${name} says "decision: ${said}", which is neither approve nor reject; write "decision: ${kind}" and drop it again`,
    );
  }
  if (said !== kind) {
    throw new ApprovalError(
      'APPROVAL_DECISION_MISMATCH',
      `${name} is named .${kind} but says "decision: ${said}" inside: a file renamed or linked after it was written is ` +
        `not applied; nothing was decided. Whoever wrote it drops it again as <batch id>.${said}, and tells the approvers if they did not rename it`,
    );
  }
  if (kind === 'approve' && content.reason !== null) {
    throw new ApprovalError(
      'APPROVAL_BAD_FILE',
      `${name} approves but holds a "reason:" line, which only a rejection has; to reject, drop <batch id>.reject ` +
        `with "decision: reject"; to approve, remove the reason line (a "comment:" line is kept) and drop it again`,
    );
  }
}

/**
 * What is wrong with an approvals folder of this mode, with the fix, or null. Write access for group or others
 * without the sticky bit lets one user rename or delete another's approval file (an approver's rejection, say).
 */
export function approvalsFolderRisk(dir: string, mode: number): string | null {
  if ((mode & 0o022) === 0 || (mode & 0o1000) !== 0) return null;
  const octal = (mode & 0o7777).toString(8).padStart(4, '0');
  return (
    `paths.approvals: ${dir} (mode ${octal}) is writable by other users without the sticky bit, so one user can rename or ` +
    `delete another's approval file; set the sticky bit: chmod +t ${dir} (mode 3770 with the setgid SFTP group, as systemd/payoutd.tmpfiles.conf makes it)`
  );
}

/**
 * Why users other than a file's owner may write it, or null: a second hard link (a name someone else may hold, to
 * write through it or link it in again; the sticky bit does not stop a link to a file one may read and write), or
 * write access for group or others. Its owner is then no proof of who wrote it.
 */
export function othersMayWrite(st: { nlink: number | bigint; mode: number | bigint }): string | null {
  if (Number(st.nlink) > 1) return `has ${st.nlink} hard links (other names for the same file)`;
  const mode = Number(st.mode);
  if ((mode & 0o022) === 0) return null;
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return `is writable by ${mode & 0o020 ? 'its group' : 'other users'} (mode ${octal})`;
}

/**
 * The log's words for a refused shared file. It may be a forgery: a second link on an approver's file can mean
 * someone else holds a name for it and wrote this decision through it; who owns it, its mode and links say whose.
 */
function sharedFileLog(e: ApprovalError): string {
  const { owner, mode, links, inode } = e.details;
  const linked =
    Number(links) > 1
      ? ` A second link on a file of ${owner} can mean someone else holds a link to it and wrote this decision through it: ` +
        `find the other name (find <inbox> <approvals folder> -inum ${inode}) and ask ${owner} whether they wrote it.`
      : ` Anyone who could write it may have written this decision: ask ${owner} whether they wrote it.`;
  return `approval file refused: ${e.message} (owner ${owner}, mode ${mode}, ${links} link(s)).${linked}`;
}

/** Reply file contents: a few `key: value` lines finance reads in any editor. */
function replyText(fields: Record<string, string>): string {
  return (
    Object.entries(fields)
      .map(([k, v]) => `${k}: ${v.replace(/[\r\n]+/g, ' ')}`)
      .join('\n') + '\n'
  );
}

interface Seen {
  size: number;
  mtimeMs: number;
  since: number;
}

export class ApprovalFiles {
  private readonly seen = new Map<string, Seen>();
  /** Files left for a later scan because their batch was not waiting yet, and since when (logged once). */
  private readonly waiting = new Map<string, number>();
  /** The folder's risk last logged (said once, not at every scan). */
  private riskSaid: string | null = null;

  constructor(
    private readonly deps: ApprovalDeps,
    private readonly o: ApprovalFileOptions,
  ) {}

  /** Looks at the approvals folder once: every file stable long enough is taken and decided. Returns how many. */
  async scan(): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.o.dir);
    } catch (err) {
      this.deps.logger?.error({ dir: this.o.dir, code: (err as NodeJS.ErrnoException).code }, 'cannot read the approvals folder');
      return 0;
    }
    await this.checkFolderMode();
    const now = this.deps.clock.now();
    const present = new Set(names);
    for (const name of this.seen.keys()) if (!present.has(name)) this.seen.delete(name);
    for (const name of this.waiting.keys()) if (!present.has(name)) this.waiting.delete(name);
    let n = 0;
    for (const name of names) {
      // Upload temp names and dotfiles are never taken (the client renames them when done).
      if (isIgnoredName(name)) continue;
      let st;
      try {
        st = await lstat(join(this.o.dir, name));
      } catch {
        continue; // gone meanwhile (another instance took it)
      }
      const last = this.seen.get(name);
      if (!last || last.size !== st.size || last.mtimeMs !== st.mtimeMs) {
        this.seen.set(name, { size: st.size, mtimeMs: st.mtimeMs, since: now });
        if (this.o.stableForMs > 0) continue;
      } else if (now - last.since < this.o.stableForMs) continue;
      if (await this.batchNotWaitingYet(name, now)) continue;
      this.seen.delete(name);
      if (await this.take(name)) n++;
    }
    return n;
  }

  /** Start-up refuses an unsafe folder; a chmod while running is logged (once) as an error. */
  private async checkFolderMode(): Promise<void> {
    let risk: string | null = null;
    try {
      risk = approvalsFolderRisk(this.o.dir, (await stat(this.o.dir)).mode);
    } catch {
      return; // readdir just read it: gone meanwhile, said at the next scan
    }
    if (risk !== null && risk !== this.riskSaid) this.deps.logger?.error({ dir: this.o.dir }, risk);
    this.riskSaid = risk;
  }

  /**
   * True while the batch the file is named for is still being read or acknowledged: the file stays for a later
   * scan, since its ack's first file appears a moment before the batch waits. After READY_WAIT_MS it is taken
   * all the same, and its reply says APPROVAL_NOT_READY rather than leaving finance without one.
   */
  private async batchNotWaitingYet(name: string, now: number): Promise<boolean> {
    const batchId = NAME.exec(name)?.[1];
    const batch = batchId === undefined ? undefined : await getBatch(this.deps.db, batchId);
    if (batch === undefined || !isBeingRead(batch.state)) return false;
    const since = this.waiting.get(name);
    if (since === undefined) {
      this.deps.logger?.info({ file: name, batchId }, 'approval file waits for its batch to be acknowledged');
      this.waiting.set(name, now);
      return true;
    }
    return now - since < READY_WAIT_MS;
  }

  /** Takes one file (a rename: whoever renames it first decides it), decides, replies. */
  private async take(name: string): Promise<boolean> {
    const { logger, clock } = this.deps;
    await mkdir(this.o.takenDir, { recursive: true });
    const claimId = newClaimId(clock.now());
    const taken = join(this.o.takenDir, `${claimId}__${outboxSafeName(name)}`);
    try {
      await rename(join(this.o.dir, name), taken);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // another instance took it
      throw err;
    }
    let reply: Record<string, string>;
    try {
      const decided = await this.decide(name, taken);
      reply = {
        file: name,
        result: 'APPLIED',
        outcome: decided.outcome,
        batch: decided.batchId,
        approver: decided.approver,
        message: decided.message,
      };
      logger?.info({ file: name, batchId: decided.batchId, approver: decided.approver, outcome: decided.outcome }, 'approval file applied');
    } catch (err) {
      const e = isApprovalError(err) ? err : new ApprovalError('APPROVAL_BAD_FILE', 'the approval could not be applied now; drop it again');
      if (!isApprovalError(err)) logger?.error({ file: name, err: safeError(err) }, 'approval file failed');
      const { inode: _inode, ...shown } = e.details; // the inode is for the administrator (the log), not finance
      reply = { file: name, result: 'REFUSED', code: e.code, ...shown, message: e.message };
      if (e.code === 'APPROVAL_FILE_SHARED') logger?.error({ file: name, code: e.code, ...e.details }, sharedFileLog(e));
      else logger?.warn({ file: name, code: e.code }, `approval file refused: ${e.message}`);
    }
    try {
      const replyName = `${claimId}_${outboxSafeName(name)}.reply.txt`;
      await writeFileAtomic(join(this.o.replyDir, replyName), [replyText(reply)], { mode: 0o640 });
    } catch (err) {
      logger?.error({ file: name, code: (err as NodeJS.ErrnoException).code }, 'cannot write the reply to an approval file');
    }
    return true;
  }

  /**
   * Reads the taken file through one handle, checked on that handle (no swap between the check and the read), and
   * keeps what was read in its place as payoutd's own file. The approver is the owner, so the owner's inode must be
   * one nobody else can write: a second hard link is a handle someone may keep (a dotfile in the folder, where the
   * sticky bit does not stop a link) to write another decision into it later and link it in again, still owned by
   * the approver; a file group or others may write can be rewritten by any of them. Either is refused.
   */
  private async readTaken(name: string, path: string): Promise<{ bytes: Buffer; uid: number }> {
    // The entry is payoutd's own now (renamed into the state directory); a device or a FIFO is never opened.
    const entry = await lstat(path);
    if (entry.isSymbolicLink())
      throw new ApprovalError('APPROVAL_BAD_FILE', `${name} is a symbolic link; drop the approval as a plain file`);
    if (!entry.isFile()) throw new ApprovalError('APPROVAL_BAD_FILE', `${name} is not a plain file; drop the approval as a plain file`);
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let bytes: Buffer;
    let st;
    try {
      st = await fh.stat();
      if (!st.isFile()) throw new ApprovalError('APPROVAL_BAD_FILE', `${name} is not a plain file; drop the approval as a plain file`);
      if (st.size === 0)
        throw new ApprovalError('APPROVAL_BAD_FILE', `${name} is empty: it must hold the batch id and the SHA-256 from the ack`);
      if (st.size > this.o.maxFileBytes) {
        throw new ApprovalError(
          'APPROVAL_BAD_FILE',
          `${name} is ${st.size} bytes, more than an approval file holds (${this.o.maxFileBytes}); it was not read`,
        );
      }
      // One byte more than allowed: a file grown since the stat is refused, not read whole.
      const buf = Buffer.alloc(this.o.maxFileBytes + 1);
      let got = 0;
      for (let n = -1; n !== 0 && got < buf.length; got += n) n = (await fh.read(buf, got, buf.length - got, got)).bytesRead;
      if (got > this.o.maxFileBytes) {
        throw new ApprovalError(
          'APPROVAL_BAD_FILE',
          `${name} grew past ${this.o.maxFileBytes} bytes while it was read; it was not applied`,
        );
      }
      bytes = buf.subarray(0, got);
    } finally {
      await fh.close();
    }
    // The audit copy is the bytes read, in a file of payoutd's own: the owner's inode leaves the state directory,
    // so nothing written into it later (through another link or a handle kept open) changes what the audit shows.
    await writeFileAtomic(path, [bytes], { mode: 0o640 });
    const why = othersMayWrite(st);
    if (why !== null) {
      const owner = await this.deps.users.nameOfUid(st.uid).catch(() => null);
      throw new ApprovalError(
        'APPROVAL_FILE_SHARED',
        `${name} ${why}: whoever may write it could have written this decision in its owner's name, so it is not applied ` +
          `and nothing was decided. Drop the decision again ${PRIVATE_FILE_HOWTO}; never chmod this file or another ` +
          `that was group-writable and drop it again: whoever could write it may still hold it open or hold a link to it`,
        {
          owner: owner === null ? `uid ${st.uid} (no user name)` : `${owner} (uid ${st.uid})`,
          mode: (st.mode & 0o7777).toString(8).padStart(4, '0'),
          links: String(st.nlink),
          inode: String(st.ino),
        },
      );
    }
    return { bytes, uid: st.uid };
  }

  private async decide(name: string, path: string): Promise<ApprovalResult> {
    const m = NAME.exec(name);
    if (!m) {
      throw new ApprovalError(
        'APPROVAL_BAD_FILE',
        `${name} is not an approval file name: name it <batch id>.approve or <batch id>.reject (or <batch id>.<your name>.approve)`,
      );
    }
    const [, nameBatch, kind] = m as unknown as [string, string, 'approve' | 'reject'];
    const { bytes, uid } = await this.readTaken(name, path);
    let text: string;
    try {
      if (bytes.includes(0)) throw new Error('NUL');
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new ApprovalError(
        'APPROVAL_BAD_FILE',
        `${name} is not text (binary content): it must hold the batch id and the SHA-256 from the ack`,
      );
    }
    const content = parseApprovalFile(text);
    if (content.batchId === null)
      throw new ApprovalError('APPROVAL_BAD_FILE', `${name} holds no batch id; copy it from the ack (batch: B…)`);
    if (content.batchId !== nameBatch) {
      throw new ApprovalError(
        'APPROVAL_BAD_FILE',
        `${name} is named for batch ${nameBatch} but holds batch ${content.batchId}; name and content must agree`,
      );
    }
    if (content.sha256 === null)
      throw new ApprovalError('APPROVAL_BAD_FILE', `${name} holds no SHA-256; copy it from the ack of batch ${nameBatch}`);
    checkStatedDecision(name, kind, content);
    if (Number.isNaN(content.round)) {
      throw new ApprovalError(
        'APPROVAL_BAD_FILE',
        `${name} has a "round:" line that is not a whole number from 1; copy the line "round: N" from the ack or payoutd status --batch ${nameBatch} and drop it again`,
      );
    }
    const approver = await this.deps.users.nameOfUid(uid);
    if (approver === null) {
      throw new ApprovalError(
        'APPROVAL_UNKNOWN_USER',
        `${name} is owned by uid ${uid}, which has no user name on this system: drop it as your own user`,
      );
    }
    return decideApproval(this.deps, {
      batchId: content.batchId,
      sha256: content.sha256,
      decision: kind,
      approver,
      approverUid: uid,
      via: 'sftp',
      comment: content.comment ?? undefined,
      reason: content.reason ?? content.comment ?? undefined,
      round: content.round,
    });
  }
}
