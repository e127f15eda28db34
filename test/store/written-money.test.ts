/**
 * The money cells a row keeps only where they were written otherwise than its request has them, on a
 * real SQLite file: what the readers show (checks shared with test/postgres), and what the intake keeps.
 */
import { describe, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { checkMoneyAsWritten } from './written-money.js';

describe('store: money cells as written', () => {
  const store = useTestDatabase('payoutd-written-money-');

  it('result rows and the reconciliation report show the written text where kept, the request where not', () =>
    checkMoneyAsWritten(store.db));
});
