/**
 * Named points where the chaos test may kill the daemon (PAYOUTD_FAULT_KILL_AT=<point>:<n>), to prove that a
 * crash exactly there loses and repeats nothing. Off unless set; code receives a plain callback.
 */
export type FaultPointName =
  | 'after-intent'
  | 'after-create-response'
  | 'after-record'
  | 'mid-result-file'
  | 'mid-read'
  | 'after-correction-intent'
  | 'after-correction-file';

/**
 * mid-read: a chunk of a batch's rows is committed and the batch is still being read (VALIDATING).
 * after-correction-intent / after-correction-file: a corrected result file is recorded / its CSV is in the outbox.
 */
export const FAULT_POINTS: readonly FaultPointName[] = [
  'after-intent',
  'after-create-response',
  'after-record',
  'mid-result-file',
  'mid-read',
  'after-correction-intent',
  'after-correction-file',
];

export type FaultPoint = (name: FaultPointName) => void;

/** A fault point from `<point>:<n>`; null for an empty or malformed spec (so a typo never kills). */
export function faultPointFromSpec(
  spec: string | undefined,
  kill: () => void = () => process.kill(process.pid, 'SIGKILL'),
): FaultPoint | null {
  const m = /^([a-z-]+):(\d+)$/.exec(spec?.trim() ?? '');
  if (!m || !FAULT_POINTS.includes(m[1] as FaultPointName)) return null;
  const target = m[1] as FaultPointName;
  const nth = Number.parseInt(m[2] as string, 10);
  let seen = 0;
  return (name) => {
    if (name === target && ++seen === nth) kill();
  };
}
