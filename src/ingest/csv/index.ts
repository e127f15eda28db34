/** Streaming CSV batch parsing: format options, header mapping, control totals, the file parser. */
export { parseBatchFile, BatchReadError, ReadRow, reasonOf, type BatchParseResult, type ParseBatchOptions } from './parse-batch.js';
export { UNTERMINATED_REASON, endsInsideRow, unterminatedFileProblem, type FileEnd } from './complete.js';
export { batchFormatSchema, DEFAULT_BATCH_FORMAT, type BatchFormatOptions, type BatchFormatOptionsInput } from './options.js';
export {
  CONTROL_MARKER,
  MAX_SIDECAR_BYTES,
  ControlBlock,
  compareControls,
  isControlRecord,
  parseSidecarText,
  readSidecar,
  type ControlTotals,
  type FoundTotals,
} from './control.js';
export { headerLine, sniffDelimiter, sniffFileDelimiter, type Delimiter } from './delimiter.js';
export { headerLookup, resolveHeader, type HeaderContext, type ResolvedHeader } from './header.js';
export { RecordLines, lineAtByte, lineAtByteOf } from './lines.js';
export {
  continuationOf,
  headerRecord,
  restRecords,
  type Continuation,
  type ReadOptions,
  type RestTally,
  type SourceRecord,
} from './continued.js';
export { InvalidUtf8Error, Utf8Check, firstInvalidUtf8, incompleteTailLength } from './utf8.js';
export { batchFileKind, textSource, TextDecodeError, type BatchFileKind, type TextSource } from './text-source.js';
export { checkRetryRows, type RetryOriginals, type RetryRowContext } from './retry-rows.js';
