/**
 * SQLite: a payout a create made after another instance took its row over is written down, and warned of only
 * when the row follows another payout (./late-create-note.ts). Two submitters on one file.
 */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from './harness.js';
import { lateCreatedNote, type LateNote } from './late-create-note.js';

describe('a payout created after another instance took its row over', () => {
  afterEach(closePipelines);

  it.each<LateNote>(['queried', 'followed-other'])('%s: told of as where the row stands', async (how) => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await lateCreatedNote(p, how);
  });
});
