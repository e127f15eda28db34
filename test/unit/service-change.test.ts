/**
 * The decision of `payoutd migrate --accept-service-change` (src/domain/service-change.ts): refused while any row
 * is CREATING, UNKNOWN or PENDING (only the service it was sent to can settle it), naming how many, the batches
 * and lines, and what to do; accepted otherwise, saying what becomes of the rows not sent yet.
 */
import { describe, expect, it } from 'vitest';
import { serviceChangeDecision, type OnServiceRow, type ServiceChangeFacts } from '../../src/domain/service-change.js';

const OLD = 'https://pay.example.com as merchant M1';
const NEW = 'https://pay2.example.com as merchant M1';
const NONE = { CREATING: 0, UNKNOWN: 0, PENDING: 0 };

function facts(over: Partial<ServiceChangeFacts>): ServiceChangeFacts {
  return { recorded: OLD, configured: NEW, counts: NONE, listed: [], notSent: 0, ...over };
}

const row = (batchId: string, line: number, state: OnServiceRow['state']): OnServiceRow => ({
  batchId,
  fileName: `${batchId}.csv`,
  line,
  state,
});

const WHAT_TO_DO =
  `Only that service can tell what became of them: on ${NEW} a create whose outcome is unknown would be sent again ` +
  `(paid on both services) and a pending payout would never be settled. Run payoutd with the configuration naming ${OLD} ` +
  'until payoutd status shows no row CREATING, UNKNOWN or PENDING, stop it, then run payoutd migrate --accept-service-change ' +
  'with this configuration again';

describe('accepting another payout service', () => {
  it('is refused while a create sent to the recorded service has no known outcome, naming the rows', () => {
    const d = serviceChangeDecision(
      facts({
        counts: { ...NONE, UNKNOWN: 2, CREATING: 1 },
        listed: [row('B1', 2, 'UNKNOWN'), row('B1', 3, 'CREATING'), row('B2', 7, 'UNKNOWN')],
      }),
    );
    expect(d).toEqual({
      accepted: false,
      message:
        `the payout service is not changed: 3 payouts were sent to ${OLD} and are not final there (1 CREATING, 2 UNKNOWN: ` +
        `batch B1 (B1.csv) line 2 UNKNOWN, line 3 CREATING; batch B2 (B2.csv) line 7 UNKNOWN). ${WHAT_TO_DO}`,
    });
  });

  it('is refused for a PENDING payout too: the new service does not know its payout id', () => {
    const d = serviceChangeDecision(facts({ counts: { ...NONE, PENDING: 1 }, listed: [row('B3', 4, 'PENDING')], notSent: 5 }));
    expect(d).toEqual({
      accepted: false,
      message: `the payout service is not changed: 1 payouts were sent to ${OLD} and are not final there (1 PENDING: batch B3 (B3.csv) line 4 PENDING). ${WHAT_TO_DO}`,
    });
  });

  it('lists a bounded number of rows and counts the rest', () => {
    const listed = [row('B1', 2, 'PENDING'), row('B1', 3, 'PENDING')];
    const d = serviceChangeDecision(facts({ counts: { ...NONE, PENDING: 40, UNKNOWN: 2 }, listed }));
    expect(d.accepted).toBe(false);
    expect(d.message).toContain('(2 UNKNOWN, 40 PENDING: batch B1 (B1.csv) line 2 PENDING, line 3 PENDING; and 40 more). ');
  });

  it('a database with no recorded service (made before migration 0033): refused, and told a start checks the service', () => {
    const d = serviceChangeDecision(facts({ recorded: null, counts: { ...NONE, UNKNOWN: 1 }, listed: [row('B1', 2, 'UNKNOWN')] }));
    expect(d).toEqual({
      accepted: false,
      message:
        'the payout service is not changed: 1 payouts were sent to the payout service they were made on (not recorded: a database ' +
        'made before migration 0033) and are not final there (1 UNKNOWN: batch B1 (B1.csv) line 2 UNKNOWN). Only that service can ' +
        `tell what became of them: on ${NEW} a create whose outcome is unknown would be sent again (paid on both services) and a ` +
        `pending payout would never be settled. If ${NEW} is the service they were made on, start payoutd: its first start records ` +
        'it once it finds a few of them. Otherwise run payoutd with the configuration naming the service they were made on until ' +
        'payoutd status shows no row CREATING, UNKNOWN or PENDING, stop it, then run payoutd migrate --accept-service-change with ' +
        'this configuration again',
    });
  });

  it('is accepted once none is left, saying that rows not sent yet go to the new service', () => {
    expect(serviceChangeDecision(facts({ notSent: 3 }))).toEqual({
      accepted: true,
      message: `payout service changed from ${OLD} to ${NEW}; its 3 payouts not sent yet (READY) are sent to the new service`,
    });
    expect(serviceChangeDecision(facts({}))).toEqual({ accepted: true, message: `payout service changed from ${OLD} to ${NEW}` });
    expect(serviceChangeDecision(facts({ recorded: null }))).toEqual({ accepted: true, message: `payout service recorded: ${NEW}` });
  });
});
