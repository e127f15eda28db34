/**
 * Whether `payoutd migrate --accept-service-change` may put another payout service in place of the recorded one,
 * decided from the rows of the database that the recorded service made or may have made. Pure: no SQL, no HTTP.
 *
 * Only the service a create was sent to can tell what became of it:
 * - CREATING or UNKNOWN: a create was sent and its outcome is not known. It is resolved by asking that service
 *   about the row's reference; the new service finds none and, after submit.notFoundGraceMs, the row is created
 *   there again: paid on both services.
 * - PENDING: the row holds a payout id of the recorded service. The new service is asked about that id: it knows
 *   none (polled as not found for good, the batch never ends, what the old service settled is never learned) or
 *   another payout by that id (taken for the row's: reported paid, cancelled or refused as another's is).
 * So the change waits until none of them is left; rows not sent yet (READY) are sent to the new service.
 */
import type { RowState } from './lifecycle.js';

/** The row states whose payout only the service the create was sent to can settle. */
export const ON_SERVICE_STATES = ['CREATING', 'UNKNOWN', 'PENDING'] as const satisfies readonly RowState[];
export type OnServiceState = (typeof ON_SERVICE_STATES)[number];

/** A row in one of ON_SERVICE_STATES, as the refusal names it. */
export interface OnServiceRow {
  batchId: string;
  fileName: string;
  line: number;
  state: OnServiceState;
}

export interface ServiceChangeFacts {
  /** The recorded service, as messages describe it; null for a database made before migration 0033 (none recorded). */
  recorded: string | null;
  /** The service the configuration names, as messages describe it. */
  configured: string;
  /** How many rows are in each of ON_SERVICE_STATES. */
  counts: Readonly<Record<OnServiceState, number>>;
  /** The first of those rows by batch and line: the list a refusal shows (the caller bounds it). */
  listed: readonly OnServiceRow[];
  /** Rows READY: valid, accepted or being accepted, and never sent (or found absent on the recorded service). */
  notSent: number;
}

export type ServiceChangeDecision = { accepted: true; message: string } | { accepted: false; message: string };

/** The decision, and the words the operator reads either way. */
export function serviceChangeDecision(facts: ServiceChangeFacts): ServiceChangeDecision {
  const open = openOnService(facts.counts);
  if (open === 0) {
    const change =
      facts.recorded === null
        ? `payout service recorded: ${facts.configured}`
        : `payout service changed from ${facts.recorded} to ${facts.configured}`;
    const notSent = facts.notSent > 0 ? `; its ${facts.notSent} payouts not sent yet (READY) are sent to the new service` : '';
    return { accepted: true, message: `${change}${notSent}` };
  }
  const sentTo = facts.recorded ?? 'the payout service they were made on (not recorded: a database made before migration 0033)';
  const byState = ON_SERVICE_STATES.filter((s) => facts.counts[s] > 0)
    .map((s) => `${facts.counts[s]} ${s}`)
    .join(', ');
  const rest = open - facts.listed.length;
  const listing = `${rowsByBatch(facts.listed)}${rest > 0 ? `; and ${rest} more` : ''}`;
  const run =
    facts.recorded === null
      ? `If ${facts.configured} is the service they were made on, start payoutd: its first start records it once it finds a few of them. Otherwise run payoutd with the configuration naming the service they were made on`
      : `Run payoutd with the configuration naming ${facts.recorded}`;
  return {
    accepted: false,
    message:
      `the payout service is not changed: ${open} payouts were sent to ${sentTo} and are not final there (${byState}: ${listing}). ` +
      `Only that service can tell what became of them: on ${facts.configured} a create whose outcome is unknown would be sent ` +
      `again (paid on both services) and a pending payout would never be settled. ${run} until payoutd status shows no row ` +
      `CREATING, UNKNOWN or PENDING, stop it, then run payoutd migrate --accept-service-change with this configuration again`,
  };
}

/** How many rows only the recorded service can settle. */
export function openOnService(counts: Readonly<Record<OnServiceState, number>>): number {
  return ON_SERVICE_STATES.reduce((n, s) => n + counts[s], 0);
}

/** "batch B1 (pay.csv) line 2 UNKNOWN, line 3 PENDING; batch B2 (b.csv) line 4 CREATING", in the order given. */
function rowsByBatch(rows: readonly OnServiceRow[]): string {
  const batches = new Map<string, { fileName: string; lines: string[] }>();
  for (const r of rows) {
    const b = batches.get(r.batchId) ?? { fileName: r.fileName, lines: [] };
    b.lines.push(`line ${r.line} ${r.state}`);
    batches.set(r.batchId, b);
  }
  return [...batches].map(([id, b]) => `batch ${id} (${b.fileName}) ${b.lines.join(', ')}`).join('; ');
}
