/** Archive and retention on SQLite (the checks: ./retention-checks.ts). */
import { describe, it } from 'vitest';
import { useStore } from './helpers.js';
import { RETENTION_CHECKS } from './retention-checks.js';

const store = useStore();

describe('archive and retention', () => {
  for (const [name, check] of RETENTION_CHECKS) it(name, async () => check(await store()));
});
