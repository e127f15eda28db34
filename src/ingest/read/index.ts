/** Reading a claimed batch file into the rows the intake stores, in parts on reader threads when it is large. */
export {
  readBatchInParts,
  readBatchInThread,
  readerThreads,
  type BatchRead,
  type BatchReadOptions,
  type PartsSettings,
} from './read-batch.js';
export { ReaderThreads } from './reader-threads.js';
export { AckDraftFile, ackDraftPaths, removeAckDrafts, removeAllAckDrafts, removeBatchAckDrafts } from './ack-draft.js';
export { cutsOf, type Cut } from './cuts.js';
export { ackDraftOf, readRowsOf, reasonOf, type ReadRows } from './rows.js';
