#!/usr/bin/env node
/**
 * Writes the .xlsx samples from the CSV ones, as a clerk's workbook holds
 * them: `payouts-valid.xlsx` (the rows of payouts-valid.csv under their own
 * references SAMPLE-XV-…, identifiers as text cells, amounts as number
 * cells with thousands separators shown, one account as a number shown
 * zero-padded) and `payouts-with-errors.xlsx` (what a spreadsheet does to
 * cells: a reference turned into a date, an account and an amount too long
 * for a number cell, and text errors). Run from the repository root:
 * `node samples/xlsx-samples.mjs [--out DIR]` (default: samples).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';

const WHEN = new Date(Date.UTC(2026, 0, 1));
const outAt = process.argv.indexOf('--out');
const OUT = outAt > 0 ? process.argv[outAt + 1] : 'samples';

function workbook() {
  const wb = new ExcelJS.Workbook();
  wb.creator = 'payoutd samples';
  wb.created = WHEN;
  wb.modified = WHEN;
  return wb;
}

/** A sheet of text cells but where `cell` says otherwise: [value, numFmt]. */
function addSheet(wb, header, rows, cell = () => null) {
  const ws = wb.addWorksheet('Payouts', { views: [{ state: 'frozen', ySplit: 1 }] });
  ws.addRow(header).font = { bold: true };
  rows.forEach((record, r) => {
    const row = ws.addRow(record);
    record.forEach((value, c) => {
      const typed = cell(header[c], value, r);
      const target = row.getCell(c + 1);
      if (typed === null) {
        target.value = value;
        target.numFmt = '@';
      } else {
        target.value = typed[0];
        if (typed[1]) target.numFmt = typed[1];
      }
    });
  });
  ws.columns.forEach((column) => (column.width = 18));
}

const valid = parse(readFileSync('samples/payouts-valid.csv'), { bom: true });
const [header, ...rows] = valid;
const at = (name) => header.indexOf(name);
const validRows = rows.map((r) => r.map((v, c) => (c === at('merchantReferenceId') ? v.replace('SAMPLE-V-', 'SAMPLE-XV-') : v)));

const wbValid = workbook();
addSheet(wbValid, header, validRows, (column, value) => {
  if (column === 'payoutAmount') return [Number(value), '#,##0.00'];
  // A number cell shown with leading zeros reads as shown.
  if (column === 'beneficiary.accountNumber' && value === '000123456789') return [123456789, '000000000000'];
  return null;
});
await wbValid.xlsx.writeFile(`${OUT}/payouts-valid.xlsx`);

const base = ['', 'USDT', 'PHP', '100.00', 'Maria', 'Santos', 'PH', 'PASSPORT', 'P1234567A', 'Maria Santos', '1234567890', 'BOPIPHMM'];
const errorRows = [
  // 2: a reference a spreadsheet turned into a date (typed 1-7, shown 7-Jan).
  ['DATE', ...base.slice(1)],
  // 3: an 18-digit CLABE in a number cell: its last digits are gone.
  ['SAMPLE-XE-002', 'USDT', 'MXN', '100.00', 'Maria', 'Santos', 'MX', 'PASSPORT', 'P1234567A', 'Maria Santos', 'LONG', '012'],
  // 4: an amount with more digits than a number cell holds exactly.
  ['SAMPLE-XE-003', ...base.slice(1, 3), 'INEXACT', ...base.slice(4)],
  // 5: an amount typed as text with a decimal comma and thousands dots.
  ['SAMPLE-XE-004', ...base.slice(1, 3), '1.234,56', ...base.slice(4)],
  // 6: an account number pasted from a CSV a spreadsheet had saved in scientific notation.
  ['SAMPLE-XE-005', ...base.slice(1, 10), '1.23457E+11', 'BOPIPHMM'],
  // 7: an account number too short for PHP.
  ['SAMPLE-XE-006', ...base.slice(1, 10), '12345', 'BOPIPHMM'],
];
const wbErrors = workbook();
addSheet(wbErrors, header, errorRows, (column, value) => {
  if (value === 'DATE') return [new Date(Date.UTC(2026, 0, 7)), 'd-mmm'];
  if (value === 'LONG') return [121800012345678980, '0'];
  if (value === 'INEXACT') return [1234.567890123456, '0.00'];
  if (column === 'payoutAmount' && /^\d+(\.\d+)?$/.test(value)) return [Number(value), '0.00'];
  return null;
});
await wbErrors.xlsx.writeFile(`${OUT}/payouts-with-errors.xlsx`);
console.log(`wrote ${OUT}/payouts-valid.xlsx and ${OUT}/payouts-with-errors.xlsx`);
