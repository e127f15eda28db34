/**
 * The lifecycles of a batch file and of each of its rows (a PayoutIntent),
 * and the only moves between their states. The store refuses any other move,
 * so a bug cannot, say, send a create for a row that already has a payout.
 *
 * Row states:
 *   VALIDATED      read and valid, but its reference was held when it was read: the
 *                  batch's acceptance decides (DUPLICATE, INVALID, or READY if let go)
 *   INVALID        failed validation (final, not paid)
 *   DUPLICATE      reference already taken by an accepted row of an earlier batch, or a retry of a payout
 *                  another row pays or may still pay, or the original of such a retry (final, not paid)
 *   NOT_SUBMITTED  valid, but its file was rejected (final, not paid)
 *   READY          valid and holding its reference from the moment it is read; a create
 *                  may be sent once its batch is accepted (ACTIVE), not before. While the
 *                  batch is read, the acceptance may still make it INVALID (its reference
 *                  is on a later line too), DUPLICATE (a retry of a payout another row pays
 *                  or may pay) or NOT_SUBMITTED (the file is rejected)
 *   CREATING       intent recorded; a create is (or may be) on the wire
 *   UNKNOWN        the create's outcome is unknown; only a query may move it on
 *   PENDING        the service holds a payout for it
 *   PAID, CANCELLED  the service's terminal statuses (final)
 *   REJECTED       the service refused the create for good (final, not paid)
 */
export type RowState =
  | 'VALIDATED'
  | 'INVALID'
  | 'DUPLICATE'
  | 'NOT_SUBMITTED'
  | 'READY'
  | 'CREATING'
  | 'UNKNOWN'
  | 'PENDING'
  | 'PAID'
  | 'CANCELLED'
  | 'REJECTED';

export const FINAL_ROW_STATES: readonly RowState[] = ['INVALID', 'DUPLICATE', 'NOT_SUBMITTED', 'PAID', 'CANCELLED', 'REJECTED'];

/** States in which a row owns its merchantReferenceId (it was, or will be, sent). */
export const REFERENCE_HOLDING_STATES: readonly RowState[] = ['READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID', 'CANCELLED', 'REJECTED'];

/** Every other state: the row was never sent and never will be, so its reference stays free for another row. */
export const REFERENCE_FREE_STATES: readonly RowState[] = ['VALIDATED', 'INVALID', 'DUPLICATE', 'NOT_SUBMITTED'];

const ROW_MOVES: Readonly<Record<RowState, readonly RowState[]>> = {
  VALIDATED: ['READY', 'INVALID', 'DUPLICATE', 'NOT_SUBMITTED'],
  INVALID: [],
  DUPLICATE: [],
  NOT_SUBMITTED: [],
  // UNKNOWN: a webhook named a payout under its reference after a create of it was tried.
  READY: ['CREATING', 'NOT_SUBMITTED', 'INVALID', 'DUPLICATE', 'UNKNOWN'],
  // A create's answer, or a crash that leaves it unknown.
  CREATING: ['PENDING', 'PAID', 'CANCELLED', 'REJECTED', 'UNKNOWN', 'READY'],
  // Only a query decides: found (adopt its status) or provably absent (READY again).
  UNKNOWN: ['PENDING', 'PAID', 'CANCELLED', 'READY', 'REJECTED'],
  // REJECTED: the payout its create was answered with is another's (a reference the service already held).
  PENDING: ['PAID', 'CANCELLED', 'REJECTED'],
  PAID: [],
  CANCELLED: [],
  REJECTED: [],
};

/** Every row state, in the order of the lifecycle above. */
export const ROW_STATES = Object.keys(ROW_MOVES) as readonly RowState[];

export function isFinalRowState(state: RowState): boolean {
  return FINAL_ROW_STATES.includes(state);
}

export function canMoveRow(from: RowState, to: RowState): boolean {
  return from === to || ROW_MOVES[from].includes(to);
}

/**
 * Batch states:
 *   RECEIVED    claimed from the inbox and stored; not yet read
 *   VALIDATING  being read into rows (restarted from scratch after a crash)
 *   REJECTED    nothing of it will be paid (bad file, invalid rows under reject-file, a changed upload)
 *   DUPLICATE   the same bytes as an earlier batch; nothing of it will be paid
 *   ACTIVE      rows are being created and followed
 *   COMPLETE    every row final and the result file written
 */
export type BatchState = 'RECEIVED' | 'VALIDATING' | 'REJECTED' | 'DUPLICATE' | 'ACTIVE' | 'COMPLETE';

const BATCH_MOVES: Readonly<Record<BatchState, readonly BatchState[]>> = {
  RECEIVED: ['VALIDATING', 'REJECTED', 'DUPLICATE'],
  VALIDATING: ['VALIDATING', 'REJECTED', 'ACTIVE'],
  ACTIVE: ['COMPLETE', 'REJECTED'],
  REJECTED: [],
  DUPLICATE: [],
  COMPLETE: [],
};

/** Every batch state, in the order of its lifecycle. */
export const BATCH_STATES = Object.keys(BATCH_MOVES) as readonly BatchState[];

/** Batch states nothing moves on from. A batch reaches one with its rows final, or none of them sent. */
export const FINAL_BATCH_STATES: readonly BatchState[] = ['REJECTED', 'DUPLICATE', 'COMPLETE'];

/** The states of a batch still being read or acknowledged: nothing of it can be sent yet. */
export const BEING_READ_BATCH_STATES: readonly BatchState[] = ['RECEIVED', 'VALIDATING'];

/** A batch still being read or acknowledged (RECEIVED, VALIDATING): nothing of it can be sent yet. */
export function isBeingRead(state: string): boolean {
  return (BEING_READ_BATCH_STATES as readonly string[]).includes(state);
}

export function canMoveBatch(from: BatchState, to: BatchState): boolean {
  return BATCH_MOVES[from].includes(to);
}
