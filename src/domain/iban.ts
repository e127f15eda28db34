/** IBAN checks (ISO 13616): country prefix, the registry's per-country length and the mod-97 check digits. */

/** IBAN length per country, from the SWIFT IBAN registry. */
const LENGTHS =
  'AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28 ' +
  'EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HN28 HR21 HU28 IE22 IL23 IQ23 IS26 ' +
  'IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 ' +
  'NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 ' +
  'SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30';

export const IBAN_LENGTHS: ReadonlyMap<string, number> = new Map(
  LENGTHS.split(' ').map((entry) => [entry.slice(0, 2), Number.parseInt(entry.slice(2), 10)] as const),
);

export type IbanProblem =
  | { kind: 'format' }
  | { kind: 'country'; country: string }
  | { kind: 'length'; country: string; expected: number; found: number }
  | { kind: 'checksum' };

/** The IBAN in electronic form: spaces removed, upper case. */
export function compactIban(text: string): string {
  return text.replace(/ /g, '').toUpperCase();
}

/** mod 97 of the IBAN rearranged (first four characters moved to the end, letters as 10..35). */
export function ibanMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    // Digits add one decimal place, letters (A=10 .. Z=35) add two.
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + (code - 48)) % 97;
    else remainder = (remainder * 100 + (code - 55)) % 97;
  }
  return remainder;
}

/** Checks a compact IBAN; null when valid. */
export function ibanProblem(iban: string): IbanProblem | null {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) return { kind: 'format' };
  const country = iban.slice(0, 2);
  const expected = IBAN_LENGTHS.get(country);
  if (expected === undefined) return { kind: 'country', country };
  if (iban.length !== expected) return { kind: 'length', country, expected, found: iban.length };
  return ibanMod97(iban) === 1 ? null : { kind: 'checksum' };
}
