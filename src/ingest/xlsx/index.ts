/** .xlsx batches: a sheet's rows, each cell as the text a clerk sees or why it cannot be read. */
export { cellText, controlCellHides, exactNumberText, type CellProblem } from './cells.js';
export { phoneticGuideMessage } from './scan.js';
export { sheetRows, SheetRefusal, type SheetRow } from './workbook.js';
