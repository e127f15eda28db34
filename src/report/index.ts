/** The outbox files finance reads: acknowledgement, result, summary, interim report. */
export * from './types.js';
export { ReportError } from './errors.js';
export type { ReportErrorCode } from './errors.js';
export { spreadsheetSafeCell, unescapeSpreadsheetCell } from './cells.js';
export {
  ACK_COLUMNS,
  RESULT_COLUMNS,
  SUMMARY_COLUMNS,
  ackFileName,
  resultFileName,
  summaryFileName,
  ackRecord,
  fileRejectionRecord,
  resultRecord,
  summaryRecord,
} from './format.js';
export { csvText, csvChunks, RECORD_DELIMITER, UTF8_BOM } from './csv.js';
export type { CsvChunkOptions } from './csv.js';
export { SummaryAccumulator, summarize, isSummableAmount } from './summary.js';
export { writeFileAtomic, isTempName } from './atomic.js';
export type { FileChunk } from './atomic.js';
export { writeAckFile, writeRejectionAckFile, writeResultFiles, writeInterimReport } from './writers.js';
export type { ResultFiles, InterimReport } from './writers.js';
