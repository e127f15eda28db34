/** Errors the outbox writers raise; messages name lines, never row contents. */
import { PayoutdError } from '../domain/errors.js';

export type ReportErrorCode =
  | 'REPORT_BAD_FILE_NAME' // a file name that is not a plain base name
  | 'REPORT_ROW_ORDER' // rows not in strictly increasing line order
  | 'REPORT_NOT_TERMINAL' // a PENDING row reached a final result file
  | 'REPORT_BAD_ROW' // a status or verdict outside the known set
  | 'REPORT_ACK_TOTALS' // an ack whose rows were written ahead, given without their totals
  | 'REPORT_TWIN_ROWS'; // an .xlsx twin would not hold the rows its CSV was written with

export class ReportError extends PayoutdError {
  override readonly name = 'ReportError';
  declare readonly code: ReportErrorCode;

  constructor(code: ReportErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
