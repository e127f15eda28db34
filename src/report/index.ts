/** The outbox files finance reads: acknowledgement, result, summary, interim report, .xlsx twins, reconciliation, retry files. */
export * from './types.js';
export { ReportError } from './errors.js';
export { spreadsheetSafeCell, unescapeSpreadsheetCell } from './cells.js';
export {
  ACK_COLUMNS,
  RESULT_COLUMNS,
  SUMMARY_COLUMNS,
  outboxFileName,
  CORRECTION_COLUMN,
  resultColumns,
  resultFileName,
  retryFileName,
  fileRejectionRecord,
  resultRecord,
  reasonText,
  withServiceNote,
} from './format.js';
export { csvText, csvChunks } from './csv.js';
export { SummaryAccumulator, summarize } from './summary.js';
export { writeFileAtomic, isTempName } from './atomic.js';
export {
  writeAckFile,
  writeAckRowsAhead,
  writeRejectionAckFile,
  writeResultFiles,
  writeCorrectedResultFile,
  writeInterimReport,
  ackCurrencyTotals,
} from './writers.js';
export type { AckRowsAhead } from './writers.js';
export type { ResultFiles } from './writers.js';
export {
  AckTotalsAccumulator,
  ackMoneyText,
  disputedRowText,
  endedRowText,
  type AckCurrencyTotal,
  type AckMoneyRow,
} from './ack-totals.js';
export { currencyDecimals } from '../domain/decimals.js';
export {
  decimalsFormat,
  displayNumber,
  xlsxCellValue,
  xlsxColumns,
  xlsxPathFor,
  writeXlsxFile,
  writeResultXlsx,
  writeCorrectedResultXlsx,
  writeInterimReportXlsx,
  wallClockDate,
  ACK_TOTALS_COLUMNS,
  writeAckXlsx,
  writeSummaryXlsx,
  type XlsxOptions,
} from './xlsx.js';
export {
  RECONCILIATION_COLUMNS,
  parseReportInstant,
  reportPeriod,
  requestedPeriod,
  reconciliationFileName,
  reconciliationTotalsPath,
  writeReconciliationReport,
  writeReconciliationXlsx,
} from './reconciliation.js';
export type { ReconciliationRow, ReportedPrunedBatch, ReportPeriod } from './reconciliation.js';
export { byRetention, downloadedResultFile, itsRowDetails, type DetailsRemoved } from './retention-notes.js';
export { RETRY_COLUMNS, retryBase, retryReference, writeRetryFile, writeRetryFileAt, writeRetryXlsx } from './retry.js';
export type { RetrySource, RetryFile } from './retry.js';
export {
  notSentStatus,
  remainderLine,
  uploadContinuedRecords,
  writeRemainderFile,
  writeRemainderXlsx,
  writeUploadContinuedFile,
  writeUploadContinuedXlsx,
} from './continued.js';
export type { InputLine, NotSentStatus, ReadOutcome, RemainderFile, UploadContinuedNotice } from './continued.js';
