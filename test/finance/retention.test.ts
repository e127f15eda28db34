/** Archive and retention on SQLite (the checks: ./retention-checks.ts). */
import { describe, it } from 'vitest';
import { useStore } from './helpers.js';
import { checkArchive, checkOwnStateDir, checkPrune, checkResumedMove, checkSchedule } from './retention-checks.js';

const store = useStore();

describe('archive and retention', () => {
  it('archives the taken files of finished batches by day and batch id, once, and leaves unfinished ones', async () =>
    checkArchive(await store()));
  it('archives only the batches of its own state folder; a lost race changes nothing', async () => checkOwnStateDir(await store()));
  it('finishes a move that stopped before the record was updated', async () => checkResumedMove(await store()));
  it('prunes what is older than retention.days: files and row details, keeping references and payout ids', async () =>
    checkPrune(await store()));
  it('the daemon archives at each pass and prunes on its schedule only with retention.days set', async () => checkSchedule(await store()));
});
