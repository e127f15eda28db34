/** .xlsx batches: a sheet's rows, each cell as the text a clerk sees or why it cannot be read. */
export { cellText, exactNumberText, FIELD_WORDS, type CellProblem, type SheetCell } from './cells.js';
export { sheetRows, SheetRefusal, type SheetRefusalCode, type SheetRow } from './workbook.js';
