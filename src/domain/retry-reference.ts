/**
 * Retry references: `<base>-R<n>` is round n of the payout `<base>` (made by report/retry.ts, checked at intake).
 * A base too long for its round is spelled `<start of base>-H<10 hex of sha256(base)>`: every spelling of one
 * base has the same hash, and the start kept is shorter the more digits the round has.
 */
import { createHash } from 'node:crypto';
import { BEING_READ_BATCH_STATES, isFinalRowState, REFERENCE_FREE_STATES } from './lifecycle.js';

const ROUND_SUFFIX = /^(.+)-R([1-9]\d{0,5})$/;
/** A base in its hashed spelling: the start kept, and the hash naming the whole base. */
const HASHED_BASE = /^(.*)-H([0-9a-f]{10})$/;
const HASH_HEX = 10;
/** The length of `-H<hash>`, which ends a base in its hashed spelling. */
export const HASHED_SUFFIX_LENGTH = 2 + HASH_HEX;

/** States of a row that was, or may still be, sent and not cancelled: a retry beside it may pay the same twice. */
export const RETRY_BLOCKING_STATES: ReadonlySet<string> = new Set(['VALIDATED', 'READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID']);

/** The default `merchantReferenceId.maxLength` of the validation rules. */
export const DEFAULT_REFERENCE_MAX_LENGTH = 64;

/** States of a row that was never sent and never will be: a reference used only by such rows is handed out again. */
const NEVER_SENT: ReadonlySet<string> = new Set(REFERENCE_FREE_STATES.filter(isFinalRowState));

/** The reference a retry derives from and the round this one already is (0 for an original). */
export function retryBase(reference: string): { base: string; round: number } {
  const m = ROUND_SUFFIX.exec(reference);
  return m?.[1] && m[2] ? { base: m[1], round: Number.parseInt(m[2], 10) } : { base: reference, round: 0 };
}

/** The references a retry row may retry: its base and each earlier round (none for an original). */
export function retriedReferences(reference: string): string[] {
  const { base, round } = retryBase(reference);
  return round === 0 ? [] : [base, ...Array.from({ length: round - 1 }, (_, i) => `${base}-R${i + 1}`)];
}

/** A base as its start and its hash: a hashed spelling keeps its own hash (hashing it again would name another base). */
function spelling(base: string): { start: string; hash: string } {
  const m = HASHED_BASE.exec(base);
  if (m?.[2] !== undefined) return { start: m[1] ?? '', hash: m[2] };
  return { start: base, hash: createHash('sha256').update(base, 'utf8').digest('hex').slice(0, HASH_HEX) };
}

/**
 * Round `round` of `base` in at most `maxLength` code points (the validation rules count code points): plain
 * when it fits, else hashed, the start cut to fit. Null when not even one character of the start fits.
 */
export function roundReference(base: string, round: number, maxLength: number): string | null {
  const plain = `${base}-R${round}`;
  if (Array.from(plain).length <= maxLength) return plain;
  const { start, hash } = spelling(base);
  const suffix = `-H${hash}-R${round}`;
  const keep = maxLength - suffix.length;
  return keep < 1 ? null : Array.from(start).slice(0, keep).join('') + suffix;
}

/** What a stored row keeps of a retry reference: its base as spelled, and the key every spelling of that base shares. */
export interface RetryRound {
  base: string;
  key: string;
}

/** The base and key of a retry reference; null for an original. */
export function retryRound(reference: string): RetryRound | null {
  // Every row of a file passes here as it is stored; nearly all are originals.
  if (!reference.includes('-R')) return null;
  const { base, round } = retryBase(reference);
  return round === 0 ? null : { base, key: spelling(base).hash };
}

/** Whether two bases (as retryRound gives them, their keys equal) are spellings of one: the shorter start begins the other. */
export function sameRetryBase(a: string, b: string): boolean {
  if (a === b) return true;
  const x = spelling(a);
  const y = spelling(b);
  return x.hash === y.hash && (x.start.startsWith(y.start) || y.start.startsWith(x.start));
}

/**
 * Stands for a row's state in a retry round's states when the payout service contradicts the row's recorded outcome
 * (a check owed, a note kept, REFERENCE_TAKEN): it may have been paid, so the round blocks a retry as one under way.
 */
export const CONTRADICTED_ROUND = 'CONTRADICTED';

/**
 * What the states of the rows using a candidate reference make of it: `retrying` (one of them was or may be
 * sent and not cancelled: the cancelled row is already being retried, or paid), `free` (unused, or used only
 * by rows never sent and never to be: a retry file dropped and refused gives its reference out again, so two
 * retry files of one cancellation still carry one reference), else `spent` (sent, and cancelled or refused).
 */
export function candidateUse(states: readonly string[] | undefined): { use: 'retrying'; state: string } | { use: 'free' | 'spent' } {
  const blocking = states?.find((s) => RETRY_BLOCKING_STATES.has(s) || s === CONTRADICTED_ROUND);
  if (blocking !== undefined) return { use: 'retrying', state: blocking };
  return (states ?? []).every((s) => NEVER_SENT.has(s)) ? { use: 'free' } : { use: 'spent' };
}

/** What to do with a cancelled row whose round stands for a payout that may be another one (its reference merely looks like a round). */
export const PAY_AS_OWN = 'pay it again in a file of your own with a new reference';

/** A row using a candidate reference, as the retry planner reads it. */
export interface RoundUse {
  merchant_reference_id: string;
  state: string;
  batch_state: string;
  /** The payout service contradicts its recorded outcome (a check owed, a note kept, REFERENCE_TAKEN): it may be paid. */
  contradicted: boolean;
}

/** What the retry planner reads of the stored rows. */
export interface RoundLookup<T extends RoundUse> {
  /** The rows using each of `references`; unused ones are absent. */
  roundsUsing(references: readonly string[]): Promise<ReadonlyMap<string, readonly T[]>>;
  /** The rows of every round of the bases of each of `keys` (baseKey), by key; keys without any are absent. */
  roundsOfKeys(keys: readonly string[]): Promise<ReadonlyMap<string, readonly T[]>>;
}

/** The key every spelling of `base` shares: the retry_key its rounds' rows keep (retryRound). */
export function baseKey(base: string): string {
  return spelling(base).hash;
}

/** Rounds tried beyond a row's own before giving up (each one a used reference). */
const MAX_EXTRA_ROUNDS = 50;
/** Candidates looked up per row per lookup. */
const LOOKAHEAD = 4;

/**
 * Where a cancelled payout goes on: its next free round, with `by` the last round sent since and not paid (whose
 * batch's retry file offers it; none: the row's own), or the round already retrying it (or contradicted, so maybe
 * paid), or no round at all (`why`).
 */
export type RoundPlan<T> =
  | { kind: 'free'; reference: string; by: T | undefined }
  | { kind: 'retrying'; reference: string; row: T; /** A round above the one its retry would take. */ later?: true }
  | { kind: 'none'; why: string };

/** How the rows using a round stand, contradicted ones counted as maybe paid. */
function roundUse<T extends RoundUse>(using: readonly T[]): ReturnType<typeof candidateUse> {
  return candidateUse(using.map((r) => (r.contradicted ? CONTRADICTED_ROUND : r.state)));
}

/** The row that makes a round retrying in `state`: a contradicted one first, since it may have been paid. */
function retryingRow<T extends RoundUse>(using: readonly T[], state: string): T {
  return using.find((r) => r.contradicted) ?? (using.find((r) => r.state === state) as T);
}

/**
 * The lowest round of `base` above `round` that is paid, being paid or contradicted, of any number, rows of files
 * still being read aside (a refusal of such a file frees the round): acceptance refuses every other round of a base
 * while one stands, so the free round below it would be refused.
 */
function laterRound<T extends RoundUse>(base: string, round: number, rows: readonly T[]): { reference: string; row: T } | null {
  const byRound = new Map<number, { reference: string; using: T[] }>();
  for (const r of rows) {
    if ((BEING_READ_BATCH_STATES as readonly string[]).includes(r.batch_state)) continue;
    const of = retryBase(r.merchant_reference_id);
    if (of.round <= round || !sameRetryBase(of.base, base)) continue;
    const at = byRound.get(of.round);
    if (at) at.using.push(r);
    else byRound.set(of.round, { reference: r.merchant_reference_id, using: [r] });
  }
  for (const n of [...byRound.keys()].sort((a, b) => a - b)) {
    const { reference, using } = byRound.get(n) as { reference: string; using: T[] };
    const use = roundUse(using);
    if (use.use === 'retrying') return { reference, row: retryingRow(using, use.state) };
  }
  return null;
}

/**
 * The plan of each of `references` (of rows recorded CANCELLED), in order: the one planner of the retry files and
 * of the advice naming them. Rounds above the row's own are looked up LOOKAHEAD at a time; a free one is given
 * only when no later round of the base stands (a round sent directly: X-R5 paid, X-R1 never used). `taken` holds
 * references given out already (a retry file's earlier rows).
 */
export async function planRetries<T extends RoundUse>(
  references: readonly string[],
  lookup: RoundLookup<T>,
  maxLength: number,
  taken = new Set<string>(),
): Promise<RoundPlan<T>[]> {
  const plans: RoundPlan<T>[] = [];
  let open = references.map((reference, at) => {
    // Only later rounds matter: an earlier round is what this row retried, not a retry of it.
    const { base, round } = retryBase(reference);
    return { at, base, round, next: round + 1, last: round + MAX_EXTRA_ROUNDS, by: undefined as T | undefined };
  });
  // Rows given a free round, with it: it stands only if no later round of their base does (below).
  const free: { c: (typeof open)[number]; reference: string }[] = [];
  while (open.length > 0) {
    const candidates = open.map((c) => Array.from({ length: LOOKAHEAD }, (_, i) => roundReference(c.base, c.next + i, maxLength)));
    const uses = await lookup.roundsUsing(candidates.flat().filter((r): r is string => r !== null));
    const decide = (c: (typeof open)[number], i: number): RoundPlan<T> | null => {
      for (const reference of candidates[i] ?? []) {
        const round = c.next++;
        if (reference === null) return { kind: 'none', why: `no retry reference fits in ${maxLength} characters (round ${round})` };
        const using = uses.get(reference) ?? [];
        const use = roundUse(using);
        if (use.use === 'retrying') return { kind: 'retrying', reference, row: retryingRow(using, use.state) };
        if (use.use === 'free' && !taken.has(reference)) {
          taken.add(reference);
          free.push({ c, reference });
          return { kind: 'free', reference, by: c.by };
        }
        // Spent: sent under it and not paid; a retry file of that round's batch offers the next one.
        if (use.use === 'spent') c.by = using.find((r) => r.state === 'CANCELLED' || r.state === 'REJECTED') ?? using[0];
      }
      return c.next > c.last ? { kind: 'none', why: `no unused retry reference within ${MAX_EXTRA_ROUNDS} rounds` } : null;
    };
    open = open.filter((c, i) => {
      const plan = decide(c, i);
      if (plan !== null) plans[c.at] = plan;
      return plan === null;
    });
  }
  if (free.length === 0) return plans;
  // The rounds between a row's own and its free one are spent or given out: any standing round is a later one.
  const keys = free.map(({ c }) => baseKey(c.base));
  const rounds = await lookup.roundsOfKeys([...new Set(keys)]);
  for (const [i, { c, reference }] of free.entries()) {
    const later = laterRound(c.base, c.round, rounds.get(keys[i] as string) ?? []);
    if (later === null) continue;
    taken.delete(reference);
    plans[c.at] = { kind: 'retrying', ...later, later: true };
  }
  return plans;
}
