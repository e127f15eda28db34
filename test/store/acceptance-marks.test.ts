/** The acceptance of a file sent again, on a real SQLite file (test/store/acceptance-marks.ts). */
import { describe, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { checkFileSentAgain } from './acceptance-marks.js';

describe('store: the acceptance of a file sent again', () => {
  const store = useTestDatabase('payoutd-accept-marks-');

  it('marks every row in a number of statements that does not grow with the rows', () => checkFileSentAgain(store.db));
});
