/**
 * Canonical JSON (src/json/canonical.ts): the text both signature schemes
 * hash. Pins key order by code point, plain numbers with the
 * BigDecimal.toPlainString() rendering the module header promises, the
 * spec 5.3 fallbacks for empty and unparsable bodies, and `sortKeys: false`.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalStringify,
  DEFAULT_CANONICAL,
  genericCanonicalStringify,
  JsonNumber,
  MAX_EXPONENT,
  MAX_PLAIN_EXPONENT,
  minifyBodyText,
  minifyParsed,
  parseLossless,
  plainNumberText,
} from '../../src/json/index.js';
import { NOT_JSON, parseBody } from '../../src/sandbox/http.js';

const KEEP_ORDER = { sortKeys: false };
const n = (text: string) => new JsonNumber(text);

describe('canonicalStringify', () => {
  it('sorts keys at every level of nested objects and arrays, without whitespace', () => {
    const value = {
      b: [n('3'), { z: null, a: [true, false, 'x y'] }, []],
      a: { d: 'x', c: n('1.50'), e: {} },
    };
    expect(canonicalStringify(value)).toBe('{"a":{"c":1.50,"d":"x","e":{}},"b":[3,{"a":[true,false,"x y"],"z":null},[]]}');
    expect(DEFAULT_CANONICAL.sortKeys).toBe(true);
  });

  it('orders keys by code point, not by UTF-16 code unit', () => {
    const astral = '\u{1F600}'; // U+1F600, UTF-16 D83D DE00
    const fullwidth = '\uFF01'; // U+FF01
    // The trap: the default sort puts the astral key first (0xD83D < 0xFF01).
    expect([fullwidth, astral].sort()).toEqual([astral, fullwidth]);
    const value = { [astral]: 1, [fullwidth]: 2, é: 3, aa: 4, a: 5, B: 6, '': 7, '\uE000': 8 };
    expect(canonicalStringify(value)).toBe(`{"":7,"B":6,"a":5,"aa":4,"é":3,"\uE000":8,"${fullwidth}":2,"${astral}":1}`);
    expect(canonicalStringify({ outer: { [astral]: 1, [fullwidth]: 2 } })).toBe(`{"outer":{"${fullwidth}":2,"${astral}":1}}`);
  });

  it('writes unicode values as UTF-8 text and escapes what JSON requires', () => {
    expect(canonicalStringify({ name: 'José Müller 😀 中文' })).toBe('{"name":"José Müller 😀 中文"}');
    expect(canonicalStringify({ s: 'a"b\\c\n\t\u0001/' })).toBe('{"s":"a\\"b\\\\c\\n\\t\\u0001/"}');
  });

  it('writes nulls and skips undefined properties; undefined in an array is null', () => {
    expect(canonicalStringify({ a: null, b: undefined, c: 1 })).toBe('{"a":null,"c":1}');
    expect(canonicalStringify([undefined, null])).toBe('[null,null]');
    expect(canonicalStringify(null)).toBe('null');
  });

  it('renders JsonNumbers in plain form from their text', () => {
    const value = {
      a: n('0.1'),
      b: n('1e21'),
      c: n('1e-7'),
      d: n('1.5E+3'),
      e: n('12345678901234567890.123456789'),
      f: n('-0'),
      g: n('100.50'),
      h: n('9007199254740993'),
    };
    expect(canonicalStringify(value)).toBe(
      '{"a":0.1,"b":1000000000000000000000,"c":0.0000001,"d":1500,"e":12345678901234567890.123456789,"f":0,"g":100.50,"h":9007199254740993}',
    );
  });

  it('accepts safe integers and bigints as JS values', () => {
    expect(canonicalStringify({ i: 42, m: -7, z: -0, big: 2n ** 64n })).toBe('{"big":18446744073709551616,"i":42,"m":-7,"z":0}');
  });

  it('refuses a JS float, an unsafe integer and non-finite numbers', () => {
    expect(() => canonicalStringify({ amount: 0.1 })).toThrow(TypeError);
    expect(() => canonicalStringify({ amount: 0.1 })).toThrow(/JsonNumber/);
    expect(() => canonicalStringify([1500.5])).toThrow(TypeError);
    expect(() => canonicalStringify({ big: 2 ** 53 })).toThrow(TypeError);
    expect(() => canonicalStringify({ x: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalStringify({ x: Number.POSITIVE_INFINITY })).toThrow(TypeError);
  });

  it('refuses values JSON cannot carry', () => {
    expect(() => canonicalStringify({ f: () => 1 })).toThrow(TypeError);
    expect(() => canonicalStringify({ s: Symbol('x') })).toThrow(TypeError);
  });

  it('keeps insertion order with sortKeys: false', () => {
    expect(canonicalStringify({ b: 1, a: { d: 2, c: 3 } }, KEEP_ORDER)).toBe('{"b":1,"a":{"d":2,"c":3}}');
  });
});

describe('plainNumberText (BigDecimal.toPlainString of the lexeme)', () => {
  it.each([
    ['0', '0'],
    ['0.1', '0.1'],
    ['1e21', '1000000000000000000000'],
    ['1e-7', '0.0000001'],
    ['1.5E+3', '1500'],
    ['1E+0', '1'],
    ['-12e2', '-1200'],
    ['-1.5e-3', '-0.0015'],
    ['0.05e1', '0.5'],
    ['100e-2', '1.00'],
    ['0e5', '0'],
    ['12345678901234567890.123456789', '12345678901234567890.123456789'],
    ['-0', '0'],
    ['-0.0', '0.0'],
    ['100.50', '100.50'],
    ['1500.00', '1500.00'],
    ['9007199254740993', '9007199254740993'],
  ])('%s -> %s', (lexeme, plain) => {
    expect(plainNumberText(lexeme)).toBe(plain);
  });

  it.each(['', '01', '1.', '.5', '+1', '1e', '0x10', 'NaN', 'Infinity', '1,5', ' 1'])('refuses %j', (lexeme) => {
    expect(() => plainNumberText(lexeme)).toThrow(TypeError);
  });

  it('refuses an absurd exponent instead of building a huge string', () => {
    expect(() => plainNumberText('1e100000')).toThrow(RangeError);
  });

  it('writes out exponents up to the bound given and refuses any beyond, either way', () => {
    expect(MAX_PLAIN_EXPONENT).toBe(100);
    expect(plainNumberText('1e100', MAX_PLAIN_EXPONENT)).toBe(`1${'0'.repeat(100)}`);
    expect(plainNumberText('1e-100', MAX_PLAIN_EXPONENT)).toBe(`0.${'0'.repeat(99)}1`);
    for (const lexeme of ['1e101', '1E-101', '1e9999']) {
      expect(() => plainNumberText(lexeme, MAX_PLAIN_EXPONENT)).toThrow(expect.objectContaining({ code: 'EXPONENT_OUT_OF_RANGE' }));
    }
  });

  it('by default writes out what a service may send (a BigDecimal zero at scale 101), up to MAX_EXPONENT', () => {
    expect(MAX_EXPONENT).toBe(10_000);
    expect(plainNumberText('0E-101')).toBe(`0.${'0'.repeat(101)}`);
    expect(plainNumberText('1E-101')).toBe(`0.${'0'.repeat(100)}1`);
    expect(plainNumberText('1e10000')).toHaveLength(10_001);
    expect(() => plainNumberText('1e10001')).toThrow(expect.objectContaining({ code: 'EXPONENT_OUT_OF_RANGE' }));
    // A value built in code is written out as before; only received bodies are bound by MAX_PLAIN_EXPONENT.
    expect(canonicalStringify({ fee: n('0E-101') })).toBe(`{"fee":0.${'0'.repeat(101)}}`);
    expect(minifyBodyText(' {"fee": 0E-101}')).toBe('{"fee": 0E-101}');
  });
});

describe('minifyBodyText (received bodies, spec 5.3)', () => {
  it('re-minifies with sorted keys, keeping every number lexeme exact', () => {
    const text = `{
      "g": 0.1, "f": 100.50, "e": -0, "d": 12345678901234567890.123456789,
      "c": 1.5E+3, "b": 1e-7, "a": 1e21, "h": 9007199254740993, "n": null
    }`;
    expect(minifyBodyText(text)).toBe(
      '{"a":1000000000000000000000,"b":0.0000001,"c":1500,"d":12345678901234567890.123456789,"e":0,"f":100.50,"g":0.1,"h":9007199254740993,"n":null}',
    );
  });

  it('keeps the scale of 100.50 (toPlainString, not the wire normal form)', () => {
    expect(minifyBodyText('{"payoutAmount": 100.50}')).toBe('{"payoutAmount":100.50}');
  });

  it('equals canonicalStringify of the lossless parse', () => {
    const text = '{ "b": [1, {"y": 2.50, "x": "\u00e9"}], "a": true }';
    expect(minifyBodyText(text)).toBe(canonicalStringify(parseLossless(text)));
    expect(minifyBodyText(text)).toBe('{"a":true,"b":[1,{"x":"é","y":2.50}]}');
  });

  it('sorts non-ASCII keys of received text by code point', () => {
    expect(minifyBodyText('{"\\ud83d\\ude00": 1, "\\uff01": 2, "z": 3}')).toBe('{"z":3,"！":2,"😀":1}');
  });

  it('gives the empty string for an empty or blank body', () => {
    expect(minifyBodyText('')).toBe('');
    expect(minifyBodyText(' \r\n\t ')).toBe('');
  });

  it('gives the trimmed text of a body that is not JSON', () => {
    expect(minifyBodyText('  not json \n')).toBe('not json');
    expect(minifyBodyText(' {"a": 1,} ')).toBe('{"a": 1,}');
    expect(minifyBodyText('{"a": 1} trailing')).toBe('{"a": 1} trailing');
    expect(minifyBodyText('\t{"a":\n1')).toBe('{"a":\n1');
  });

  it('removes whitespace around strings but never inside them', () => {
    const text = ' \n {  "k e y" :  "  a  b\\t \\"q\\"  " , "w" : [ " " , "\\\\" ] }  \n';
    expect(minifyBodyText(text)).toBe('{"k e y":"  a  b\\t \\"q\\"  ","w":[" ","\\\\"]}');
  });

  it('normalizes string escapes when re-serializing', () => {
    expect(minifyBodyText('{"s": "\\u00e9\\/"}')).toBe('{"s":"é/"}');
  });

  it('keeps the written order with sortKeys: false and removes only whitespace', () => {
    const text = ' {\n  "b" : "x \\" y" ,\n  "a" : "\\\\" ,\n  "c" : [ 1.5E+3 , 100.50 , null ] ,\n  "s" : " in  side "\n}\n';
    expect(minifyBodyText(text, KEEP_ORDER)).toBe('{"b":"x \\" y","a":"\\\\","c":[1.5E+3,100.50,null],"s":" in  side "}');
  });

  it('applies the same empty and unparsable rules with sortKeys: false', () => {
    expect(minifyBodyText('', KEEP_ORDER)).toBe('');
    expect(minifyBodyText('  not json  ', KEEP_ORDER)).toBe('not json');
  });

  it('sortKeys: false reproduces the exact text a sender wrote with sortKeys: false', () => {
    const sent = canonicalStringify({ z: 'last?', a: [n('1500.5'), null], m: { y: true, x: 'é' } }, KEEP_ORDER);
    expect(sent).toBe('{"z":"last?","a":[1500.5,null],"m":{"y":true,"x":"é"}}');
    expect(minifyBodyText(sent, KEEP_ORDER)).toBe(sent);
  });

  it('round-trips text a sender wrote with sorted keys', () => {
    const sent = canonicalStringify({ b: n('0.0000001'), a: { d: null, c: 'ü' } });
    expect(minifyBodyText(sent)).toBe(sent);
  });
});

/**
 * Received text is minified before its signature is checked, so anyone can make the receiver minify anything:
 * a body of exponents must not grow into text many times its size.
 */
describe('minifyBodyText bounds what exponents add (unauthenticated input)', () => {
  const arrayOf = (lexeme: string, count: number) => `{"a":[${Array(count).fill(lexeme).join(',')}]}`;
  // As large as the webhook receiver accepts by default (64 KiB).
  const fill = (lexeme: string) => arrayOf(lexeme, Math.floor((64 * 1024 - 8) / (lexeme.length + 1)));

  it('signs a body of out-of-range exponents as its trimmed text', () => {
    const body = fill('1e9999');
    expect(minifyBodyText(` ${body}\n`)).toBe(body);
  });

  it('signs a body whose exponents would more than double it as its trimmed text, and writes out a few', () => {
    // Each 1e100 is within range on its own; together they would make the text about twenty times longer.
    const body = fill('1e100');
    expect(minifyBodyText(body)).toBe(body);
    expect(() => minifyParsed(parseLossless(body), body, DEFAULT_CANONICAL)).toThrow(
      expect.objectContaining({ name: 'NumberExpansionError', code: 'EXPANSION_OVER_LIMIT' }),
    );
    // A short body has room for a few, as a genuine one carries.
    const zeros = '0'.repeat(100);
    expect(minifyBodyText('{"rate": 1.2E-7, "big": [1e100, 1e100, 1e-100]}')).toBe(
      `{"big":[1${zeros},1${zeros},0.${zeros.slice(1)}1],"rate":0.00000012}`,
    );
  });

  it('gives the sandbox the same text and refuses the body there as not JSON', () => {
    const body = fill('1e100');
    const parsed = parseBody(body, DEFAULT_CANONICAL);
    expect(parsed.minified).toBe(minifyBodyText(body));
    expect(parsed.body).toBe(NOT_JSON);
  });
});

describe('parseLossless', () => {
  it('keeps every number as its text', () => {
    const parsed = parseLossless('{"a": 12345678901234567890.123456789, "b": 1e21}') as Record<string, unknown>;
    expect(parsed['a']).toBeInstanceOf(JsonNumber);
    expect(String(parsed['a'])).toBe('12345678901234567890.123456789');
    expect(String(parsed['b'])).toBe('1e21');
  });
});

/**
 * canonicalStringify takes a JSON.stringify fast path for plain objects whose
 * keys are already sorted. What it writes is signed and sent (request bodies),
 * so the fast path must never change a byte: every value here is written by
 * both and the texts must be equal.
 */
describe("canonicalStringify fast path gives the generic writer's bytes", () => {
  const request = (over: Partial<Record<string, unknown>> = {}): Record<string, unknown> => ({
    beneficiary: { accountName: 'Maria Dela Cruz', accountNumber: '1234567890', bankCode: 'BOPIPHMM' },
    deductionCurrency: 'USDT',
    merchantReferenceId: 'REF-0001',
    payoutAmount: '1500.5',
    payoutCurrency: 'PHP',
    sender: { country: 'PH', firstName: 'Juan', idType: 'PASSPORT', idValue: 'P1234567', lastName: 'Santos' },
    ...over,
  });
  const astral = '\u{1F600}';
  const cases: [string, unknown][] = [
    ['a request in sorted key order', request()],
    [
      'a request in the order a row is read',
      {
        merchantReferenceId: 'R1',
        deductionCurrency: 'USDC',
        payoutCurrency: 'EUR',
        payoutAmount: '10',
        sender: { firstName: 'A', lastName: 'B', country: 'DE', idType: 'TAX_ID', idValue: 'X' },
        beneficiary: { accountName: 'C', accountNumber: 'DE89370400440532013000', bankCode: 'COBADEFFXXX' },
      },
    ],
    [
      'unicode names',
      request({ sender: { country: 'DE', firstName: 'José Müller', idType: 'PASSPORT', idValue: '中文', lastName: `Ñandú ${astral}` } }),
    ],
    ['escapes and controls', request({ merchantReferenceId: 'a"b\\c\n\t\u0001\u001f\u007f\u2028\u2029/' })],
    ['a lone surrogate', request({ merchantReferenceId: '\ud800x\udfff' })],
    ['numbers as strings', request({ payoutAmount: '0.000001', payoutCurrency: '1e3' })],
    ['empty strings and empty objects', { '': '', a: {}, b: { c: {} } }],
    ['nulls and booleans', { a: null, b: true, c: false, d: { e: null } }],
    ['safe integers', { a: 0, b: -0, c: 9007199254740991, d: -42 }],
    ['undefined properties', { a: undefined, b: 'x', c: { d: undefined } }],
    ['unsorted keys', { b: 'x', a: 'y', c: { z: '1', y: '2' } }],
    ['keys by code point beyond ASCII', { [astral]: 'a', '\uFF01': 'b', é: 'c', a: 'd' }],
    ['integer-like keys', { b: 'x', '10': 'y', '2': 'z', a: { '1': 'p', '0': 'q' } }],
    ['JsonNumbers', { a: n('1.50'), b: n('1e3'), c: 'x' }],
    ['arrays', { a: ['x', 1, null, { c: 'd', b: 'e' }], b: [] }],
    ['a null-prototype object', Object.assign(Object.create(null) as object, { a: 'x', b: { c: 'y' } })],
    ['bigints', { a: 12345678901234567890n, b: 'x' }],
  ];
  for (const [name, value] of cases) {
    it(name, () => {
      const generic = genericCanonicalStringify(value);
      expect(canonicalStringify(value)).toBe(generic);
      expect(canonicalStringify(value, KEEP_ORDER)).toBe(genericCanonicalStringify(value, KEEP_ORDER));
    });
  }

  it('still refuses what the generic writer refuses', () => {
    expect(() => canonicalStringify({ a: 1.5 })).toThrow(TypeError);
    expect(() => canonicalStringify({ a: new Date(0) })).toThrow(TypeError);
    expect(() => canonicalStringify({ a: () => 1 })).toThrow(TypeError);
    expect(() => canonicalStringify({ a: { toJSON: () => 'x' } })).toThrow(TypeError);
  });

  it('matches over many generated requests', () => {
    const alphabet = ['a', 'Z', '0', ' ', '"', '\\', '\n', 'é', '中', astral, '\u0000', '\ud83d', '-', '.'];
    let seed = 7;
    const next = (k: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const text = (): string => Array.from({ length: next(12) }, () => alphabet[next(alphabet.length)] ?? '').join('');
    for (let i = 0; i < 500; i++) {
      const value = request({
        merchantReferenceId: text(),
        payoutAmount: `${next(100000)}.${next(100)}`,
        sender: { country: text(), firstName: text(), idType: text(), idValue: text(), lastName: text() },
        beneficiary: { accountName: text(), accountNumber: text(), bankCode: text() },
      });
      expect(canonicalStringify(value)).toBe(genericCanonicalStringify(value));
    }
  });
});
