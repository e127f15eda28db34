/**
 * Names in the drop folder: which are never candidates, the safe name a file gets in storage
 * (`<claimId>__<safeName>`, parsed back by parseStoredName) and the name its answers get in the outbox.
 */
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';

/** Temp names of upload clients (WinSCP, browsers, ad-hoc scripts); matched case-insensitively: ignoring a temp file is never harmful. */
const TEMP_SUFFIXES = ['.part', '.filepart', '.tmp', '.partial', '.crdownload'] as const;

/** Marker and sidecar suffixes, matched exactly (lower case): what is ignored is exactly what a claim consumes. */
export const DONE_SUFFIX = '.done';
export const CONTROL_SUFFIX = '.ctl';

/** A configured ignore pattern: a glob on the base name (`*`, `?`) or a RegExp tested on the base name. */
export type IgnorePattern = string | RegExp;
export type NameFilter = (name: string) => boolean;

/** Builds the filter for configured patterns, once. */
export function compileIgnore(patterns: readonly IgnorePattern[]): NameFilter {
  const regexps = patterns.map((p) => (typeof p === 'string' ? globToRegExp(p) : withoutState(p)));
  return (name) => regexps.some((re) => re.test(name));
}

function globToRegExp(glob: string): RegExp {
  const body = Array.from(glob, (ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
  return new RegExp(`^${body}$`, 'su');
}

// A /g or /y RegExp keeps lastIndex between test() calls and would skip every other match.
function withoutState(re: RegExp): RegExp {
  return new RegExp(re.source, re.flags.replace(/[gy]/g, ''));
}

/** A dotfile (upload clients' temp names, swap files); a name starting with `..` is taken like any other. */
export function isHiddenName(name: string): boolean {
  return name.startsWith('.') && !name.startsWith('..');
}

/** True for names that are never claimed. */
export function isIgnoredName(name: string, extra?: NameFilter): boolean {
  if (isHiddenName(name)) return true;
  const lower = name.toLowerCase();
  if (TEMP_SUFFIXES.some((suffix) => lower.endsWith(suffix))) return true;
  if (name.endsWith(DONE_SUFFIX) || name.endsWith(CONTROL_SUFFIX)) return true;
  return extra !== undefined && extra(name);
}

/** The longest safe name, in UTF-8 bytes: leaves room under the usual 255-byte limit for a claim or batch id and suffixes (`.ctl`, `.reason.txt`, `.summary.csv`). */
export const MAX_SAFE_NAME_BYTES = 120;

/**
 * A base name safe to store and to hand to any tool: letters, marks and digits of any script plus `._+=@,-`,
 * every other run becomes `_`; no leading dot, dash or underscore; at most MAX_SAFE_NAME_BYTES UTF-8 bytes.
 */
export function safeName(original: string): string {
  const replaced = original.normalize('NFC').replace(/[^\p{L}\p{M}\p{N}._+=@,-]+/gu, '_');
  const trimmed = replaced.replace(/^[._-]+/, '');
  const capped = capBytes(trimmed);
  return capped === '' ? 'file' : capped;
}

function capBytes(name: string): string {
  if (Buffer.byteLength(name) <= MAX_SAFE_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 12 ? name.slice(dot) : '';
  let budget = MAX_SAFE_NAME_BYTES - Buffer.byteLength(ext);
  let stem = '';
  for (const ch of name.slice(0, name.length - ext.length)) {
    budget -= Buffer.byteLength(ch);
    if (budget < 0) break;
    stem += ch;
  }
  return stem + ext;
}

/** A new claim id: the UTC second (storage sorts by time) and 48 random bits (two claims never share a name). */
export function newClaimId(nowMs: number, random: Uint8Array = randomBytes(6)): string {
  const stamp = new Date(nowMs).toISOString().slice(0, 19).replace(/[-:]/g, '');
  return `${stamp}Z-${Buffer.from(random).toString('hex')}`;
}

/** A base name that already starts with a claim id, as files in claimed/ do. */
export const STORED_NAME = /^\d{8}T\d{6}Z-[0-9a-f]{12}__/;

/** The name of a file in storage: `<claimId>__<safeName>`. */
export function storedName(claimId: string, originalName: string): string {
  return `${claimId}__${safeName(originalName)}`;
}

/** A stored name taken apart: the claim id, and the name as stored (the safe form; the original is in the batch record). */
export interface ParsedStoredName {
  claimId: string;
  storedAs: string;
}

/** The parts of `<claimId>__<safeName>`, or null for a name storage did not give. */
export function parseStoredName(name: string): ParsedStoredName | null {
  const match = STORED_NAME.exec(name);
  if (match === null) return null;
  const storedAs = name.slice(match[0].length);
  if (storedAs === '' || storedAs.includes('/')) return null;
  return { claimId: match[0].slice(0, -2), storedAs };
}

/**
 * The sender's name as it may appear in an outbox file name: kept as far as possible, but control, format and
 * separator characters become `_`, no leading dot or dash, at most MAX_SAFE_NAME_BYTES UTF-8 bytes.
 */
export function outboxSafeName(original: string): string {
  const replaced = original.replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}/\\]/gu, '_');
  const capped = capBytes(replaced.replace(/^[.-]+/, ''));
  return capped === '' ? 'batch' : capped;
}

/** A display form of a name that is not valid UTF-8: read as Latin-1, the likeliest encoding of such names. */
export function displayRawName(raw: Uint8Array): string {
  return Buffer.from(raw).toString('latin1');
}

/** True when the bytes are valid UTF-8 that round-trips through a JS string. */
export function isUtf8Name(raw: Uint8Array): boolean {
  const bytes = Buffer.from(raw);
  return Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
}
