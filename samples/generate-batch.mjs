#!/usr/bin/env node
// Writes a CSV payout batch of valid rows, deterministically and streaming,
// for load tests and demos. Plain Node ESM, no dependencies.
//
//   node samples/generate-batch.mjs --rows 1000000 --out big.csv
//        [--seed N] [--prefix REF] [--cancel-every N] [--control none|trailer|sidecar]
//
// --seed          PRNG seed (default 1); the same arguments give the same bytes.
// --prefix        merchantReferenceId prefix (default GEN); references are
//                 <prefix>-<9-digit row number>, so use a new prefix per batch.
// --cancel-every  every Nth row is a PHP payout to an account ending in 0000,
//                 which the sandbox cancels (default 0 = none). No other row
//                 ends in 0000 or 9999 (the sandbox's hold-PENDING trigger).
// --control       append control totals as #CONTROL trailer lines, or write
//                 them to <out>.ctl (default none). Totals are summed exactly
//                 in minor units with BigInt.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { prng } from './prng.mjs';

const HEADER = [
  'merchantReferenceId',
  'deductionCurrency',
  'payoutCurrency',
  'payoutAmount',
  'sender.firstName',
  'sender.lastName',
  'sender.country',
  'sender.idType',
  'sender.idValue',
  'beneficiary.accountName',
  'beneficiary.accountNumber',
  'beneficiary.bankCode',
];

const FIRST = ['Maria', 'Juan', 'Ana', 'Jose', 'Budi', 'Siti', 'John', 'Emily', 'Hans', 'Claire', 'João', 'Lucía', 'Priya', 'Arjun', 'Oliver', 'Amelia'];
const LAST = ['Santos', 'Reyes', 'Cruz', 'Santoso', 'Rahayu', 'Smith', 'Johnson', 'Müller', 'Dubois', 'Silva', 'García', 'Sharma', 'Patel', 'Jones', 'de Vries'];
const ID_TYPES = ['PASSPORT', 'NATIONAL_ID', 'DRIVING_LICENSE', 'TAX_ID', 'RESIDENCE_PERMIT'];
const CURRENCIES = ['PHP', 'IDR', 'EUR', 'USD', 'BRL', 'MXN', 'INR', 'GBP'];
const COUNTRY = { PHP: 'PH', IDR: 'ID', EUR: 'DE', USD: 'US', BRL: 'BR', MXN: 'MX', INR: 'IN', GBP: 'GB' };
const MINOR = { PHP: 2, IDR: 2, EUR: 2, USD: 2, BRL: 2, MXN: 2, INR: 2, GBP: 2 };
const PHP_BANKS = ['BOPIPHMM', 'MBTCPHMM', 'BNORPHMM'];
const IDR_BANKS = ['014', '008', '002', '009'];
const BRL_BANKS = ['001', '341', '237', '104'];
const MXN_BANKS = ['002', '012', '014', '072'];
const EUR_BICS = ['COBADEFFXXX', 'DEUTDEFF', 'BNPAFRPP', 'ABNANL2A'];

function usage(message) {
  process.stderr.write(`${message}\nusage: node samples/generate-batch.mjs --rows N --out FILE [--seed N] [--prefix REF] [--cancel-every N] [--control none|trailer|sidecar]\n`);
  process.exit(2);
}

function intOption(value, name, min) {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number.parseInt(value, 10) < min) usage(`--${name} must be a whole number >= ${min}, got ${JSON.stringify(value)}`);
  return Number.parseInt(value, 10);
}


function csvField(value) {
  return /[",;\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function digits(rand, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(rand() * 10));
  return s;
}

function pick(rand, list) {
  return list[Math.floor(rand() * list.length)];
}

/** Account numbers must not hit the sandbox triggers by accident. */
function avoidTriggers(account) {
  return account.endsWith('0000') || account.endsWith('9999') ? `${account.slice(0, -1)}${account.endsWith('0000') ? '1' : '8'}` : account;
}

function mod97(text) {
  let r = 0;
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    r = code >= 65 ? (r * 100 + (code - 55)) % 97 : (r * 10 + (code - 48)) % 97;
  }
  return r;
}

/** A German IBAN with correct check digits: DE + check + 8-digit bank code + 10-digit account. */
function germanIban(rand) {
  for (;;) {
    const bban = digits(rand, 18);
    const check = String(98 - mod97(`${bban}DE00`)).padStart(2, '0');
    const iban = `DE${check}${bban}`;
    if (!iban.endsWith('0000') && !iban.endsWith('9999')) return iban;
  }
}

/** An ABA routing number with a valid prefix and checksum. */
function abaRouting(rand) {
  const prefixes = ['01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12', '21', '22', '26', '31', '32'];
  const body = pick(rand, prefixes) + digits(rand, 6);
  const w = [3, 7, 1, 3, 7, 1, 3, 7];
  let sum = 0;
  for (let i = 0; i < 8; i++) sum += Number(body[i]) * w[i];
  return body + String((10 - (sum % 10)) % 10);
}

function ifsc(rand) {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  let code = '';
  for (let i = 0; i < 4; i++) code += letters[Math.floor(rand() * 26)];
  return `${code}0${digits(rand, 6)}`;
}

function beneficiary(rand, currency) {
  switch (currency) {
    case 'PHP':
      return [avoidTriggers(digits(rand, 10 + Math.floor(rand() * 4))), pick(rand, PHP_BANKS)];
    case 'IDR':
      return [avoidTriggers(digits(rand, 10)), pick(rand, IDR_BANKS)];
    case 'EUR':
      return [germanIban(rand), pick(rand, EUR_BICS)];
    case 'USD':
      return [avoidTriggers(digits(rand, 12)), abaRouting(rand)];
    case 'BRL':
      return [avoidTriggers(digits(rand, 9)), pick(rand, BRL_BANKS)];
    case 'MXN': {
      const bank = pick(rand, MXN_BANKS);
      return [avoidTriggers(bank + digits(rand, 15)), bank];
    }
    case 'INR':
      return [avoidTriggers(digits(rand, 12)), ifsc(rand)];
    case 'GBP':
      return [avoidTriggers(digits(rand, 8)), digits(rand, 6)];
    default:
      throw new Error(`no generator for ${currency}`);
  }
}

/** Amount in minor units (BigInt) and as text with the currency's decimals. */
function amount(rand, currency) {
  const whole = currency === 'IDR' ? 10_000 + Math.floor(rand() * 5_000_000) : 1 + Math.floor(rand() * 5_000);
  const cents = currency === 'IDR' ? 0 : Math.floor(rand() * 100);
  const minor = BigInt(whole) * 100n + BigInt(cents);
  return { minor, text: cents === 0 ? String(whole) : `${whole}.${String(cents).padStart(2, '0')}` };
}

function minorToText(minor, digitsAfter) {
  const s = minor.toString().padStart(digitsAfter + 1, '0');
  return digitsAfter === 0 ? s : `${s.slice(0, -digitsAfter)}.${s.slice(-digitsAfter)}`;
}

async function main() {
  const { values } = parseArgs({
    options: {
      rows: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      prefix: { type: 'string' },
      'cancel-every': { type: 'string' },
      control: { type: 'string' },
    },
    strict: true,
  });
  const rows = intOption(values.rows, 'rows', 0);
  if (rows === undefined) usage('--rows is required');
  if (!values.out) usage('--out is required');
  const seed = intOption(values.seed, 'seed', 0) ?? 1;
  const prefix = values.prefix ?? 'GEN';
  if (!/^[A-Za-z0-9._:-]{1,50}$/.test(prefix)) usage('--prefix may hold letters, digits and . _ : - (at most 50)');
  const cancelEvery = intOption(values['cancel-every'], 'cancel-every', 0) ?? 0;
  const control = values.control ?? 'none';
  if (!['none', 'trailer', 'sidecar'].includes(control)) usage('--control must be none, trailer or sidecar');

  const rand = prng(seed);
  const out = createWriteStream(values.out);
  const write = async (text) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  const totals = new Map();
  await write(`${HEADER.join(',')}\n`);
  for (let i = 1; i <= rows; i++) {
    const cancel = cancelEvery > 0 && i % cancelEvery === 0;
    const currency = cancel ? 'PHP' : pick(rand, CURRENCIES);
    const first = pick(rand, FIRST);
    const last = pick(rand, LAST);
    const { minor, text } = amount(rand, currency);
    let [account, bank] = beneficiary(rand, currency);
    if (cancel) account = `${account.slice(0, -4)}0000`;
    // Now and then a "Last, First" account name, so the file exercises quoting.
    const accountName = rand() < 0.1 ? `${last}, ${first}` : `${first} ${last}`;
    const fields = [
      `${prefix}-${String(i).padStart(9, '0')}`,
      rand() < 0.5 ? 'USDT' : 'USDC',
      currency,
      text,
      first,
      last,
      COUNTRY[currency],
      pick(rand, ID_TYPES),
      `ID${digits(rand, 8)}`,
      accountName,
      account,
      bank,
    ];
    totals.set(currency, (totals.get(currency) ?? 0n) + minor);
    await write(`${fields.map(csvField).join(',')}\n`);
  }
  const controlLines = [`#CONTROL,rows,${rows}`];
  for (const currency of [...totals.keys()].sort()) {
    controlLines.push(`#CONTROL,total,${currency},${minorToText(totals.get(currency), MINOR[currency])}`);
  }
  if (control === 'trailer') await write(`${controlLines.join('\n')}\n`);
  out.end();
  await once(out, 'finish');
  if (control === 'sidecar') {
    const ctl = createWriteStream(`${values.out}.ctl`);
    ctl.end(`${controlLines.join('\n')}\n`);
    await once(ctl, 'finish');
  }
}

main().catch((err) => {
  process.stderr.write(`generate-batch: ${err.message}\n`);
  process.exit(1);
});
