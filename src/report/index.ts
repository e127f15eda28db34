/** The outbox files finance reads: acknowledgement, result, summary, interim report, .xlsx twins, reconciliation, retry files. */
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
  fileHoldRecord,
  fileNoteRecord,
  fileRejectionRecord,
  resultRecord,
  summaryRecord,
  reasonText,
} from './format.js';
export { csvText, csvChunks, RECORD_DELIMITER, UTF8_BOM } from './csv.js';
export type { CsvChunkOptions } from './csv.js';
export { SummaryAccumulator, summarize, isSummableAmount } from './summary.js';
export { writeFileAtomic, isTempName } from './atomic.js';
export type { FileChunk } from './atomic.js';
export { writeAckFile, writeRejectionAckFile, writeResultFiles, writeInterimReport } from './writers.js';
export type { ResultFiles, InterimReport, RowPages } from './writers.js';
export {
  STABLECOIN_DECIMALS,
  TEXT_FORMAT,
  currencyDecimals,
  decimalsFormat,
  displayNumber,
  xlsxCellValue,
  xlsxColumns,
  xlsxPathFor,
  resultXlsxFileName,
  summarySheet,
  writeXlsxFile,
  writeResultXlsx,
  writeInterimReportXlsx,
} from './xlsx.js';
export type { XlsxCellType, XlsxCellValue, XlsxColumn, XlsxOptions, XlsxReport, XlsxSheet } from './xlsx.js';
export {
  FinanceReportError,
  RECONCILIATION_COLUMNS,
  parseReportInstant,
  reportPeriod,
  reconciliationFileName,
  reconciliationTotalsPath,
  reconciliationStatus,
  reconciliationRecord,
  writeReconciliationReport,
  writeReconciliationXlsx,
} from './reconciliation.js';
export type { FinanceReportErrorCode, ReportPeriod, ReconciliationRow, ReconciliationFiles } from './reconciliation.js';
export {
  RETRY_COLUMNS,
  RETRY_BLOCKING_STATES,
  DEFAULT_REFERENCE_MAX_LENGTH,
  MAX_REPORTED_SKIPS,
  retryFileName,
  retryBase,
  retryReference,
  retryValues,
  retryRecord,
  writeRetryFile,
  writeRetryFileAt,
} from './retry.js';
export type { RetrySource, RetrySourceRow, RetryOptions, RetrySkip, RetryFile } from './retry.js';
export {
  UPLOAD_CONTINUED_COLUMNS,
  remainderFileName,
  remainderLine,
  uploadContinuedFileName,
  uploadContinuedRecords,
  writeRemainderFile,
  writeUploadContinuedFile,
} from './continued.js';
export type { InputLine, ReadOutcome, RemainderFile, UploadContinuedNotice } from './continued.js';
