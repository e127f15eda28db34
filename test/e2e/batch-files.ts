/**
 * Batch files for the end-to-end tests: valid payout rows across the enabled
 * currencies, written as CSV text. Account numbers keep leading zeros, and
 * only the rows chosen to be cancelled end in the sandbox's cancel trigger
 * `0000` (none ends in the hold trigger `9999`), so each row's fate is known.
 */
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';

export const CSV_HEADER = FIELD_PATHS;

export interface BatchRow {
  merchantReferenceId: string;
  deductionCurrency: 'USDT' | 'USDC';
  payoutCurrency: string;
  /** As written in the CSV: trailing zeros on purpose, to see they survive. */
  payoutAmount: string;
  firstName: string;
  lastName: string;
  country: string;
  idType: string;
  idValue: string;
  accountName: string;
  accountNumber: string;
  bankCode: string;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** One template per currency; `i` varies the amount and the account so that no two rows are alike. */
const TEMPLATES: ((i: number) => Omit<BatchRow, 'merchantReferenceId' | 'deductionCurrency' | 'firstName' | 'lastName' | 'idType'>)[] = [
  (i) => ({
    payoutCurrency: 'PHP',
    payoutAmount: `${1000 + i}.50`,
    country: 'PH',
    idValue: `P${pad(i, 7)}A`,
    accountName: 'Juan Dela Cruz',
    accountNumber: `00${pad(i, 6)}42`,
    bankCode: 'BOPIPHMM',
  }),
  (i) => ({
    payoutCurrency: 'IDR',
    payoutAmount: `${150000 + i * 1000}`,
    country: 'ID',
    idValue: `3171${pad(i, 12)}`,
    accountName: 'Budi Santoso',
    accountNumber: `000${pad(i, 5)}31`,
    bankCode: '014',
  }),
  (i) => ({
    payoutCurrency: 'EUR',
    payoutAmount: `${10 + i}.00`,
    country: 'DE',
    idValue: `C01X${pad(i, 5)}`,
    accountName: 'Hans Müller',
    accountNumber: 'DE89370400440532013000',
    bankCode: 'COBADEFFXXX',
  }),
  (i) => ({
    payoutCurrency: 'USD',
    payoutAmount: `${25 + i}.5`,
    country: 'US',
    idValue: `D${pad(i, 7)}`,
    accountName: 'Smith, John',
    accountNumber: `000${pad(i, 6)}85`,
    bankCode: '021000021',
  }),
  (i) => ({
    payoutCurrency: 'BRL',
    payoutAmount: `${30 + i}.75`,
    country: 'BR',
    idValue: `123.456.${pad(i, 3)}-09`,
    accountName: 'João da Silva',
    accountNumber: `0${pad(i, 5)}23`,
    bankCode: '341',
  }),
  (i) => ({
    payoutCurrency: 'GBP',
    payoutAmount: `${40 + i}.10`,
    country: 'GB',
    idValue: `GB${pad(i, 6)}`,
    accountName: 'Oliver Jones',
    accountNumber: `0${pad(i, 5)}68`,
    bankCode: '401276',
  }),
  (i) => ({
    payoutCurrency: 'MXN',
    payoutAmount: `${500 + i}`,
    country: 'MX',
    idValue: `MX${pad(i, 8)}`,
    accountName: 'Lucía García',
    accountNumber: `0121800${pad(i, 9)}51`,
    bankCode: '012',
  }),
  (i) => ({
    payoutCurrency: 'INR',
    payoutAmount: `${800 + i}.25`,
    country: 'IN',
    idValue: `IN${pad(i, 8)}`,
    accountName: 'Priya Sharma',
    accountNumber: `00${pad(i, 7)}19`,
    bankCode: 'HDFC0001234',
  }),
];

const FIRST = ['Maria', 'Juan', 'Ana', 'Jose', 'Budi', 'Siti', 'John', 'Emily'];
const LAST = ['Santos', 'Reyes', 'Cruz', 'Santoso', 'Rahayu', 'Smith', 'Johnson', 'Silva'];
const ID_TYPES = ['PASSPORT', 'NATIONAL_ID', 'DRIVING_LICENSE', 'TAX_ID', 'RESIDENCE_PERMIT'];

export interface RowsOptions {
  /** Every Nth row (1-based) pays a PHP account ending in 0000, which the sandbox cancels. 0 = none. */
  cancelEvery?: number;
}

/** `count` valid rows with references `<prefix>-0001`, `<prefix>-0002`, ... */
export function makeRows(prefix: string, count: number, options: RowsOptions = {}): BatchRow[] {
  const cancelEvery = options.cancelEvery ?? 0;
  return Array.from({ length: count }, (_, k) => {
    const i = k + 1;
    const base = (TEMPLATES[k % TEMPLATES.length] as (typeof TEMPLATES)[number])(i);
    const cancel = cancelEvery > 0 && i % cancelEvery === 0;
    return {
      merchantReferenceId: `${prefix}-${pad(i, 4)}`,
      deductionCurrency: k % 3 === 2 ? 'USDC' : 'USDT',
      firstName: FIRST[k % FIRST.length] as string,
      lastName: LAST[k % LAST.length] as string,
      idType: ID_TYPES[k % ID_TYPES.length] as string,
      ...base,
      ...(cancel ? { payoutCurrency: 'PHP', payoutAmount: `${200 + i}.00`, country: 'PH', bankCode: 'MBTCPHMM' } : {}),
      ...(cancel ? { accountNumber: `00${pad(i, 4)}0000`, accountName: 'Closed Account' } : {}),
    };
  });
}

/** One PHP row to `account`: the sandbox cancels an account ending in 0000 and holds one ending in 9999 PENDING. */
export function phpRow(ref: string, amount: string, account: string): BatchRow {
  return {
    merchantReferenceId: ref,
    deductionCurrency: 'USDT',
    payoutCurrency: 'PHP',
    payoutAmount: amount,
    firstName: 'Maria',
    lastName: 'Santos',
    country: 'PH',
    idType: 'PASSPORT',
    idValue: 'P1234567A',
    accountName: 'Juan Dela Cruz',
    accountNumber: account,
    bankCode: 'BOPIPHMM',
  };
}

/** True for rows the sandbox will cancel (its default cancel suffix). */
export function isCancelRow(row: BatchRow): boolean {
  return row.accountNumber.endsWith('0000');
}

function cell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A row's values in header order. */
export function rowCells(r: BatchRow): string[] {
  return [
    r.merchantReferenceId,
    r.deductionCurrency,
    r.payoutCurrency,
    r.payoutAmount,
    r.firstName,
    r.lastName,
    r.country,
    r.idType,
    r.idValue,
    r.accountName,
    r.accountNumber,
    r.bankCode,
  ];
}

/** The CSV text of a batch (LF line ends, RFC 4180 quoting). */
export function toCsv(rows: readonly BatchRow[]): string {
  return [CSV_HEADER.join(','), ...rows.map((r) => rowCells(r).map(cell).join(','))].join('\n') + '\n';
}
