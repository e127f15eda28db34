/**
 * Free text the payout service wrote (an error's msg, a record's failure reason), made fit for logs, stored
 * reasons, result files and the console. A service, or a proxy in front of it, may echo the request in its error
 * text: its headers carry the API key and the access token, its body the beneficiary's account number and the
 * sender's ID number. Log redaction goes by key names and never sees inside such a text, so it is cleaned here,
 * where the client first reads it: first of the values the client knows it sent, in whatever form an echo writes
 * them, then of whatever looks secret or like an account number. Codes and words are kept: finance must still
 * read why the service refused.
 */
import { maskAccountNumber } from '../domain/payout.js';
import { SECRET_KEYS } from '../log/index.js';
import { currencyDecimals } from '../domain/decimals.js';
import { IBAN_LENGTHS } from '../domain/iban.js';

/** What a secret of the text is replaced with: the mark the logs use. */
export const REDACTED = '[redacted]';

/** Personal values a request carried, found in its body by their field names. */
export interface SentValues {
  /** Masked as the logs mask an account number. */
  accountNumbers: readonly string[];
  /** Replaced by REDACTED: ID numbers, and any other value under a secret or personal name. */
  others: readonly string[];
  /** The request's merchantReferenceId: never masked, finance finds the row by it. */
  references: readonly string[];
}

/**
 * Most characters of a text cleaned and kept: far more than any caller keeps or finance reads, and the patterns
 * below cost more on a longer one than an answer is worth.
 */
export const CLEANED_CHARS = 4096;

const NOTHING_SENT: SentValues = { accountNumbers: [], others: [], references: [] };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const SECRET_NAMES = [...new Set(SECRET_KEYS.map((k) => k.toLowerCase()))];
const KEY_NAMES = SECRET_NAMES.map(escapeRegExp).join('|');

/** An account number as the logs mask it; any other secret or personal value replaced. */
function maskValue(key: string, value: string): string {
  return key.toLowerCase() === 'accountnumber' ? maskAccountNumber(value) : REDACTED;
}

/**
 * The secret key a header or element name ends in, if any: such names come prefixed and dashed (`X-Api-Key`,
 * `ns:accountNumber`, `beneficiaryAccountNumber`).
 */
function secretKeyOf(name: string): string | undefined {
  const flat = name.toLowerCase().replace(/[-_]/g, '');
  return SECRET_NAMES.find((k) => flat.endsWith(k));
}

/** The personal values of a request body (JSON): those of fields named as secret or personal, at any depth. */
export function sentValues(body: string): SentValues {
  const sent = { accountNumbers: [] as string[], others: [] as string[], references: [] as string[] };
  const walk = (value: unknown, key: string): void => {
    const name = key.toLowerCase();
    if (typeof value === 'string') {
      if (SECRET_NAMES.includes(name)) (name === 'accountnumber' ? sent.accountNumbers : sent.others).push(value);
      if (name === 'merchantreferenceid') sent.references.push(value);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, Array.isArray(value) ? key : k);
    }
  };
  try {
    walk(JSON.parse(body), '');
  } catch {
    // Not JSON: nothing known to look for. The answer it came with must still be read, cleaned by the patterns.
  }
  return sent;
}

/**
 * The forms a value takes in an echo: as sent, inside a JSON string once or twice, URL-encoded (a space as %20 or +).
 * A value URL encoding refuses (a lone surrogate) has no URL form: cleaning must never throw.
 */
function writtenForms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const forms = [value, json, JSON.stringify(json).slice(1, -1)];
  try {
    const url = encodeURIComponent(value);
    forms.push(url, url.replaceAll('%20', '+'));
  } catch {
    // URIError: the JSON forms are all an echo could have written.
  }
  return forms;
}

function withoutSeparators(value: string): string {
  return value.replace(/[\s./-]/g, '');
}

/** Fewest characters of a sent value looked for in free text: a shorter one is a count, a code or part of a date. */
const MIN_SENT_CHARS = 5;

/**
 * Every occurrence of a personal value sent, standing alone (not joined to a letter or digit, also not through a
 * `.`, `,`, `-` or `:`): in any of its written forms, or its characters re-grouped with single spaces or dashes
 * (a match is then judged by isSentValue).
 */
function sentValuePattern(value: string): RegExp {
  const compact = withoutSeparators(value);
  const forms = [...new Set([...writtenForms(value), ...writtenForms(compact)])].sort((a, b) => b.length - a.length);
  const escaped = forms.map(escapeRegExp);
  if (/^[\p{L}\p{N}]+$/u.test(compact)) escaped.push([...compact].map(escapeRegExp).join('[ -]?'));
  const [before, after] = [String.raw`(?<![\p{L}\p{N}][.,:-]?)`, String.raw`(?![.,:-]?[\p{L}\p{N}])`];
  return new RegExp(`${before}(?:${escaped.join('|')})${after}`, 'giu');
}

/**
 * Whether `match`, found by sentValuePattern for `value`, is the value: a written form of it, or its characters
 * in groups of three or four parted by single spaces or dashes (`765-4321`), as an account number is written. Not
 * a date (`2026-11-30` for 20261130).
 */
function isSentValue(match: string, value: string): boolean {
  const forms = [...writtenForms(value), ...writtenForms(withoutSeparators(value))].map((f) => f.toLowerCase());
  if (forms.includes(match.toLowerCase())) return true;
  const groups = match.split(/[ -]/);
  return groups.slice(0, -1).every((g) => g.length === 3 || g.length === 4);
}

/**
 * A field of one of those names with its value, as JSON writes it (`"idValue":"…"`, also with its quotes
 * escaped once or more: JSON inside a JSON string) or as a form or query writes it (`idValue=…`, also under a
 * bracket, as written or URL-encoded: `beneficiary%5BaccountNumber%5D=…`). Groups: the key's quote, the key
 * (either form), the value's quote, a quoted value, a bare value. A quoted value runs to its closing quote or
 * the end of the text (one cut short has none).
 */
const FIELD = new RegExp(
  String.raw`(?:(?<!\\)(\\*["'])(${KEY_NAMES})\1\s*:|(?:(?<![\p{L}\p{N}_])|(?<=%5B))(${KEY_NAMES})(?:\]|%5D)?=)\s*` +
    String.raw`(?:(?<!\\)(\\*["'])((?:(?!\4)[\s\S])*)|([^\s"',;&}\]\\]+))`,
  'giu',
);

/**
 * A header line of a secret name (`X-Api-Key: …`, `Authorization: Token …`) at the start of a line, written or
 * escaped (`\n`). Groups: the name, the scheme, the value. Only at a line's start: mid-sentence, `token: expired`
 * is words. See headerValue for the value.
 */
const HEADER_LINE = /(?:^|(?<=\\[rn]))[ \t]*([A-Za-z][\w-]*)[ \t]*:[ \t]*(?:(Bearer|Token|Basic|Digest)[ \t]+)?([^\s,;"'<>\\]+)/gimu;

/**
 * An XML element of a secret name (`<accountNumber>…</accountNumber>`, `<ns:apiKey>`), closed: a lone tag is a
 * placeholder (`Bearer <accessToken>`). Groups: the name, the content.
 */
const ELEMENT = /<(?:[\w.-]+:)?([\w-]+)(?:\s[^<>]*)?>([^<]*)(?=<\/(?:[\w.-]+:)?\1\s*>)/gu;

/**
 * The value of a header line named `key`, masked. Without a scheme, a value of letters only is a word of a refusal
 * (`apiKey: missing`, `accountNumber: must not be empty`), kept: a credential or number holds digits or signs.
 */
function headerValue(key: string, scheme: string | undefined, value: string): string {
  if (scheme !== undefined) return REDACTED;
  return /^\p{L}+$/u.test(value) ? value : maskValue(key, value);
}

/** An Authorization header's credentials, whoever's (a token older than the client remembers); not a `<placeholder>`. */
const BEARER = /\b(Bearer)\s+[^\s"',;\\<>]+/giu;

/**
 * A run that may be an account number: digits in groups parted by single dashes, an IBAN written in groups of
 * four, or letters and digits (in groups parted by single spaces, each holding a digit). Judged by numberLike.
 * A dashed run must not hang on to a word (`INV-2026-0001`) or a decimal.
 */
const NUMBER_RUN = new RegExp(
  String.raw`(?<![\p{L}\p{N}])(?:(?<![\p{L}\p{N}][-.])\p{Nd}+(?:-\p{Nd}+)+(?![-.]?[\p{L}\p{N}])` +
    String.raw`|[A-Za-z]{2}\d{2}(?: [A-Za-z0-9]{4})+(?: [A-Za-z0-9]{1,3})?` +
    String.raw`|(?=[\p{L}\p{N}]*\p{Nd})[\p{L}\p{N}]+(?: (?=[\p{L}\p{N}]*\p{Nd})[\p{L}\p{N}]+)*)(?![\p{L}\p{N}])`,
  'gu',
);

/** A date written with dashes (`2026-01-05`, `05-01-2026`): not an account number. */
const DASHED_DATE = /^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}-\d{1,2}-\d{4})$/;

/**
 * Fewest digits of a run taken for an account number. Below it: codes ("2002"), amounts, dates and counts, which
 * a refusal needs to stay readable. Every IBAN and most account numbers have more; a shorter one is masked only
 * as the value of a field named accountNumber, or as the one the request carried.
 */
const ACCOUNT_DIGITS = 8;

/**
 * A run with digits enough for an account number and at most two letters (an account or ID number: `ID98765432`),
 * or one shaped as an IBAN (a country of the IBAN registry, two check digits, its length). A payout id or reference
 * with more letters (`PO15209D51884C3C7439E904`) is kept, so finance can read a refusal naming it.
 */
function numberLike(compact: string): boolean {
  const digits = compact.replace(/\P{Nd}/gu, '').length;
  if (digits >= ACCOUNT_DIGITS && compact.length - digits <= 2) return true;
  return IBAN_LENGTHS.get(compact.slice(0, 2).toUpperCase()) === compact.length && /^\p{Nd}{2}$/u.test(compact.slice(2, 4));
}

/**
 * Before the run: the name of an amount or a time (`payoutAmount 100000000`, `"X-TIMESTAMP":"1796064234196"`,
 * `<payoutAmount>`), a currency code (`PHP 100000000`), or words that lead to a limit (`a maximum of 100000000`,
 * `150000000 > 100000000`).
 */
const AFTER_AMOUNT_NAME =
  /(?:(?:amount|\b(?:timestamp|time)\b)\\*["']?\s*[:=>]?(?:\s*of)?|\b(?:(?:limit|max(?:imum)?|min(?:imum)?)(?:\s+(?:of|is))?|than|exceeds?)|(?<!\S)[<>]=?)\s*\\*["']?$/iu;
/**
 * After the run: a fraction (`100000000.50`), a comparison with another amount (`150000000 > 100000000`, not
 * `< 2 days`), or a space and a currency code.
 */
const BEFORE_FRACTION_OR_BOUND = /^(?:\.\d|\s*[<>]=?\s*(?:\d{8}|\d+\.\d))/;
const BEFORE_CODE = /^ ([A-Z]{3,4})(?![\p{L}\p{N}])/u;
/** Before the run: a currency code and a space (`PHP 100000000`). */
const AFTER_CODE = /(?<![\p{L}\p{N}])([A-Z]{3,4}) $/u;

/**
 * Whether the run at text[start, end) is written as an amount or a time: kept, as the refusal of an amount out
 * of range must show it. An account number is not written so.
 */
function writtenAsAmount(text: string, start: number, end: number): boolean {
  const before = text.slice(Math.max(0, start - 40), start);
  if (BEFORE_FRACTION_OR_BOUND.test(text.slice(end, end + 40)) || AFTER_AMOUNT_NAME.test(before)) return true;
  const isCurrency = (code: string | undefined): boolean => code !== undefined && currencyDecimals(code) !== undefined;
  return (
    isCurrency(BEFORE_CODE.exec(text.slice(end, end + 6))?.[1]) ||
    isCurrency(AFTER_CODE.exec(text.slice(Math.max(0, start - 6), start))?.[1])
  );
}

/**
 * `text` with every secret of `secrets` (the API key, tokens, signing keys the client holds) replaced by REDACTED
 * and every value of `sent` (the request's own account numbers and ID numbers) masked, in each form an echo may
 * write them; then the values of fields, header lines and XML elements named as secret or personal (SECRET_KEYS)
 * masked (an account number as the logs mask it, any other replaced), bearer credentials replaced, and anything
 * else that looks like an account number or IBAN, and is not written as an amount or a time, masked as the logs
 * mask account numbers. The request's own merchantReferenceId is kept. Only the first CLEANED_CHARS of the
 * text are kept. Pure; callers cut the result to the length they keep.
 */
export function cleanServiceText(text: string, secrets: readonly string[], sent: SentValues = NOTHING_SENT): string {
  let out = text;
  // Longest first: a secret holding another must not be left in part.
  const byLength = (a: string, b: string): number => b.length - a.length;
  for (const form of [...new Set(secrets.filter((s) => s !== '').flatMap(writtenForms))].sort(byLength)) {
    out = out.replaceAll(form, REDACTED);
  }
  // Cut after the secrets, so none is left in part at the cut; the patterns below then see a bounded text. A word
  // or number the cut goes through goes too: the digits left of an account number could be too few to be seen as one.
  if (out.length > CLEANED_CHARS) out = out.slice(0, CLEANED_CHARS).replace(/[\p{L}\p{N}]+$/u, '');
  const isReference = (run: string): boolean => sent.references.some((r) => r.toLowerCase() === run.toLowerCase());
  const values = [
    ...sent.accountNumbers.map((v) => ({ v, masked: maskAccountNumber(withoutSeparators(v)) })),
    ...sent.others.map((v) => ({ v, masked: REDACTED })),
  ];
  for (const { v, masked } of values.filter(({ v }) => withoutSeparators(v).length >= MIN_SENT_CHARS).sort((a, b) => byLength(a.v, b.v))) {
    const short = withoutSeparators(v).length < ACCOUNT_DIGITS;
    out = out.replace(sentValuePattern(v), (match: string, start: number, all: string) => {
      // A short value may also be an amount or a limit the refusal names.
      const kept = !isSentValue(match, v) || isReference(match) || (short && writtenAsAmount(all, start, start + match.length));
      return kept ? match : masked;
    });
  }
  out = out.replace(FIELD, (whole: string, ...groups: unknown[]) => {
    const [, key, formKey, , quoted, bare] = groups as (string | undefined)[];
    const value = quoted ?? bare ?? '';
    if (value === '') return whole;
    // The value ends the match: what comes before it (key, separator, opening quote) stays.
    return `${whole.slice(0, whole.length - value.length)}${maskValue(key ?? formKey ?? '', value)}`;
  });
  out = out.replace(HEADER_LINE, (whole: string, name: string, scheme: string | undefined, value: string) => {
    const key = secretKeyOf(name);
    return key === undefined ? whole : `${whole.slice(0, whole.length - value.length)}${headerValue(key, scheme, value)}`;
  });
  out = out.replace(ELEMENT, (whole: string, name: string, content: string) => {
    const key = secretKeyOf(name);
    const value = content.trim();
    if (key === undefined || value === '') return whole;
    const at = whole.length - content.length + content.indexOf(value);
    return `${whole.slice(0, at)}${maskValue(key, value)}${whole.slice(at + value.length)}`;
  });
  out = out.replace(BEARER, `$1 ${REDACTED}`);
  return out.replace(NUMBER_RUN, (run: string, start: number, all: string) => {
    const compact = run.replace(/[ -]/g, '');
    const account = numberLike(compact) && !DASHED_DATE.test(run) && !isReference(run) && !writtenAsAmount(all, start, start + run.length);
    return account ? maskAccountNumber(compact) : run;
  });
}
