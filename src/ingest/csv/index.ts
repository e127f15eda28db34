/** Streaming CSV batch parsing: format options, header mapping, control totals, the file parser. */
export { readBatchFileOnThread, FileReadFailure, type ReadRowValues } from './read-thread.js';
export { parseBatchFile, BatchReadError, ReadRow, reasonOf, type BatchParseResult } from './parse-batch.js';
export { UNTERMINATED_REASON, unterminatedFileProblem } from './complete.js';
export { batchFormatSchema, DEFAULT_BATCH_FORMAT, type BatchFormatOptions, type BatchFormatOptionsInput } from './options.js';
export { parseSidecarText } from './control.js';
export { headerLine, sniffDelimiter, sniffFileDelimiter } from './delimiter.js';
export { lineAtByte } from './lines.js';
export { continuationOf, headerRecord, restRecords, type RestTally } from './continued.js';
export { firstInvalidUtf8, incompleteTailLength } from './utf8.js';
export { batchFileKind } from './text-source.js';
export type { RetryOriginals } from './retry-rows.js';
