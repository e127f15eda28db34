/**
 * PostgreSQL, two instances on one schema: a payout a create made after the other instance took its row over is
 * written down, and warned of only when the row follows another payout (test/pipeline/late-create-note.ts).
 */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from '../pipeline/harness.js';
import { lateCreatedNote, type LateNote } from '../pipeline/late-create-note.js';
import { latestSchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a payout created after the other instance took its row over', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);

  it.each<LateNote>(['queried', 'followed-other'])('%s: told of as where the row stands', async (how) => {
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      database: latestSchema(schema),
    });
    await lateCreatedNote(p, how);
  });
});
