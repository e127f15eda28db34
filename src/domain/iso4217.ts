/**
 * ISO 4217 active currency codes with their minor units (List One), without funds and metals. ISO, not CLDR
 * (IDR has 2); a deployment that must differ sets `minorUnits` in the validation rules.
 */

const ZERO = 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF';
const THREE = 'BHD IQD JOD KWD LYD OMR TND';
const FOUR = 'CLF UYW';
// ANG stays while the Netherlands Antilles guilder is phased out for XCG.
const TWO = [
  'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD',
  'CAD CDF CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL',
  'GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD',
  'LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN',
  'PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB',
  'TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG',
].join(' ');

function table(): ReadonlyMap<string, number> {
  const map = new Map<string, number>();
  const add = (codes: string, digits: number): void => {
    for (const code of codes.split(' ')) map.set(code, digits);
  };
  add(TWO, 2);
  add(ZERO, 0);
  add(THREE, 3);
  add(FOUR, 4);
  return map;
}

/** Currency code -> number of minor-unit digits. */
export const ISO_4217_MINOR_UNITS: ReadonlyMap<string, number> = table();
