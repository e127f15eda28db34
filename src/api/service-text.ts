/**
 * Free text the payout service wrote (an error's msg, a record's failure reason), made fit for logs, stored
 * reasons, result files and the console. A service, or a proxy in front of it, may echo the request in its error
 * text: its headers carry the API key and the access token, its body the beneficiary's account number and the
 * sender's ID number. Log redaction goes by key names and never sees inside such a text, so it is cleaned here,
 * where the client first reads it. Codes and words are kept: finance must still read why the service refused.
 */
import { maskAccountNumber } from '../domain/payout.js';
import { SECRET_KEYS } from '../log/index.js';
import { currencyDecimals } from '../domain/decimals.js';
import { IBAN_LENGTHS } from '../domain/iban.js';

/** What a secret of the text is replaced with: the mark the logs use. */
export const REDACTED = '[redacted]';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const KEY_NAMES = [...new Set(SECRET_KEYS.map((k) => k.toLowerCase()))].map(escapeRegExp).join('|');

/**
 * A field of one of those names with its value, as JSON writes it (`"idValue":"…"`, also with its quotes
 * escaped once: JSON inside a JSON string) or as a form or query writes it (`idValue=…`). Groups: the key's
 * quote, the key (either form), the value's quote, a quoted value, a bare value. A quoted value runs to its
 * closing quote or the end of the text (one cut short has none).
 */
const FIELD = new RegExp(
  String.raw`(?:(\\?["'])(${KEY_NAMES})\1\s*:|(?<![\p{L}\p{N}_])(${KEY_NAMES})=)\s*` +
    String.raw`(?:(\\?["'])((?:(?!\4)[\s\S])*)|([^\s"',;&}\]\\]+))`,
  'giu',
);

/** An Authorization header's credentials, whoever's (a token older than the client remembers); not a `<placeholder>`. */
const BEARER = /\b(Bearer)\s+[^\s"',;\\<>]+/giu;

/**
 * A run that may be an account number: an IBAN written in groups of four, or letters and digits (in groups
 * parted by single spaces, each holding a digit). Judged by numberLike.
 */
const NUMBER_RUN = new RegExp(
  String.raw`(?<![\p{L}\p{N}])(?:[A-Za-z]{2}\d{2}(?: [A-Za-z0-9]{4})+(?: [A-Za-z0-9]{1,3})?` +
    String.raw`|(?=[\p{L}\p{N}]*\p{Nd})[\p{L}\p{N}]+(?: (?=[\p{L}\p{N}]*\p{Nd})[\p{L}\p{N}]+)*)(?![\p{L}\p{N}])`,
  'gu',
);

/**
 * Fewest digits of a run taken for an account number. Below it: codes ("2002"), amounts, dates and counts, which
 * a refusal needs to stay readable. Every IBAN and most account numbers have more; a shorter one is masked only
 * as the value of a field named accountNumber.
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
 * Before the run: the name of an amount (`payoutAmount 100000000`, `"payoutAmount":100000000`), a currency code
 * (`PHP 100000000`), or words that lead to a limit (`a maximum of 100000000`, `150000000 > 100000000`).
 */
const AFTER_AMOUNT_NAME =
  /(?:amount\\?["']?\s*[:=]?(?:\s*of)?|\b(?:(?:limit|max(?:imum)?|min(?:imum)?)(?:\s+(?:of|is))?|than|exceeds?)|[<>]=?)\s*\\?["']?$/iu;
/** After the run: a fraction (`100000000.50`), or a space and a currency code (`100000000 PHP`). */
const BEFORE_FRACTION = /^\.\d/;
const BEFORE_CODE = /^ ([A-Z]{3,4})(?![\p{L}\p{N}])/u;
/** Before the run: a currency code and a space (`PHP 100000000`). */
const AFTER_CODE = /(?<![\p{L}\p{N}])([A-Z]{3,4}) $/u;

/**
 * Whether the run at text[start, end) is written as an amount: kept, as the refusal of an amount out of range
 * must show it. An account number is not written so.
 */
function writtenAsAmount(text: string, start: number, end: number): boolean {
  if (BEFORE_FRACTION.test(text.slice(end, end + 2)) || AFTER_AMOUNT_NAME.test(text.slice(Math.max(0, start - 40), start))) return true;
  const isCurrency = (code: string | undefined): boolean => code !== undefined && currencyDecimals(code) !== undefined;
  return (
    isCurrency(BEFORE_CODE.exec(text.slice(end, end + 6))?.[1]) ||
    isCurrency(AFTER_CODE.exec(text.slice(Math.max(0, start - 6), start))?.[1])
  );
}

/**
 * `text` with every secret of `secrets` (the API key, tokens, signing keys the client holds) replaced by
 * REDACTED, the values of fields named as secret or personal (SECRET_KEYS) masked (an account number as the logs
 * mask it, any other replaced), bearer credentials replaced, and anything else that looks like an account number
 * or IBAN, and is not written as an amount, masked as the logs mask account numbers. Pure; callers cut the result
 * to the length they keep.
 */
export function cleanServiceText(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longest first: a secret holding another must not be left in part.
  for (const secret of [...new Set(secrets)].filter((s) => s !== '').sort((a, b) => b.length - a.length)) {
    out = out.replaceAll(secret, REDACTED);
  }
  out = out.replace(FIELD, (whole: string, ...groups: unknown[]) => {
    const [, key, formKey, , quoted, bare] = groups as (string | undefined)[];
    const value = quoted ?? bare ?? '';
    if (value === '') return whole;
    const masked = (key ?? formKey)?.toLowerCase() === 'accountnumber' ? maskAccountNumber(value) : REDACTED;
    // The value ends the match: what comes before it (key, separator, opening quote) stays.
    return `${whole.slice(0, whole.length - value.length)}${masked}`;
  });
  out = out.replace(BEARER, `$1 ${REDACTED}`);
  return out.replace(NUMBER_RUN, (run: string, start: number, all: string) => {
    const compact = run.replaceAll(' ', '');
    return numberLike(compact) && !writtenAsAmount(all, start, start + run.length) ? maskAccountNumber(compact) : run;
  });
}
