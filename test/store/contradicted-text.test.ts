/** What a refused row is told of a holder row the payout service contradicts (src/store/reference-advice.ts). */
import { describe, expect, it } from 'vitest';
import { contradictedText } from '../../src/store/reference-advice.js';

const holder = {
  merchant_reference_id: 'C-1',
  state: 'NOT_SUBMITTED',
  payout_id: null,
  batch_id: 'B1',
  line: 4,
  service_check: 'REFERENCE',
  service_note: null,
  reason_code: null,
};

describe('contradictedText', () => {
  it('names the reference to check for a row ended without a payout after a create was tried', () => {
    const { said, todo } = contradictedText(holder, 'this row');
    expect(said).toBe('a create of that row was tried and the payout service may hold a payout under C-1; payoutd is asking it');
    expect(todo).toBe(
      'check the payouts held under C-1 with the payout service before sending this row again under any reference (payoutd status --batch B1, line 4, says what payoutd knows of it)',
    );
  });

  it('names the payout of a row holding one', () => {
    const { said, todo } = contradictedText(
      { ...holder, state: 'CANCELLED', payout_id: 'P9', service_check: null, service_note: 'n' },
      'this row',
    );
    expect(said).toBe('the payout service reports otherwise for payout P9');
    expect(todo).toContain('check payout P9 with the payout service before sending this row again');
  });
});
