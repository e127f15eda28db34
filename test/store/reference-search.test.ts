/** The console's search by reference on a real SQLite file (the same check runs on PostgreSQL in test/postgres/console.test.ts). */
import { describe, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { checkReferenceSearch } from './reference-search.js';

describe('store: rows found by a reference (SQLite)', () => {
  const store = useTestDatabase('payoutd-search-');

  it('matches ASCII letters in either case, other characters as written', () => checkReferenceSearch(store.db));
});
