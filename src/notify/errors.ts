/** Errors of notification delivery: each names the channel's problem, never a secret or a payload. */
import { PayoutdError } from '../domain/errors.js';

export class NotifyError extends PayoutdError {
  override readonly name = 'NotifyError';
}

/** A delivery error in a line for logs and the event's last_error: its code and message, cut short. */
export function deliveryErrorText(err: unknown): string {
  if (err instanceof PayoutdError) return `${err.code}: ${err.message}`.slice(0, 300);
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  const code = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'ERROR';
  return `${code}: ${String(e?.message ?? err)}`.slice(0, 300);
}
