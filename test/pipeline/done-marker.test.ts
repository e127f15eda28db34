/**
 * A `.done` marker vouches for a file that does not end with a line break:
 * the claim records it, the batch record keeps it (batches.done_marker), and
 * every read of the batch judges the file's end by it, also a read again
 * from the start after a stop mid-read. Without the marker the same file is
 * refused whole.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BatchIntake } from '../../src/ingest/index.js';
import { DEFAULT_BATCH_FORMAT } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { closePipelines, csvRow, HEADER, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

/** `rows` valid rows with no line break after the last. */
function unterminated(prefix: string, rows: number): string {
  return [HEADER, ...Array.from({ length: rows }, (_, i) => csvRow(`${prefix}-${i + 1}`))].join('\n');
}

/** An intake on the pipeline's store that stops (as a killed daemon would) once the first chunk of rows is stored. */
function stoppingIntake(p: Pipeline): BatchIntake {
  return new BatchIntake(
    {
      db: p.db,
      clock: p.clock,
      logger: p.logger,
      effects: {
        writeAck: async () => '',
        draftAck: async () => ({ ready: null, write: async () => '', discard: async () => undefined }),
        writeFileRejection: async () => '',
        writeResult: async () => undefined,
      },
      holds: p.holds,
      afterChunkStored: () => {
        throw new Error('killed mid-read');
      },
    },
    {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onInvalidRows: 'reject-file',
      rejectedDir: `${p.dir}/rejected`,
      instanceId: 'test',
      leaseMs: 120_000,
    },
  );
}

describe('pipeline: a .done marker', () => {
  it('vouches for a file without a final line break: accepted and paid; the same file without one is refused', async () => {
    const p = await startPipeline();
    const claimed = await p.claim('vouched.csv', unterminated('DM', 3));
    const batch = await p.intake.receive({ ...claimed, doneMarker: true });
    expect([batch.state, batch.doneMarker, batch.validCount]).toEqual(['ACTIVE', true, 3]);
    await p.submit();
    expect(p.createRequests()).toBe(3);

    const bare = await p.receive('bare.csv', unterminated('DN', 3));
    expect([bare.state, bare.doneMarker, bare.rejectCode]).toEqual(['REJECTED', false, 'INVALID_FILE']);
  });

  it('is kept in the batch record: a read again from the start after a stop mid-read decides the same', async () => {
    const p = await startPipeline({ balance: '100000000' });
    // One row more than the intake stores per transaction, so the stop comes after the first commit.
    const claimed = await p.claim('half-read.csv', unterminated('DH', 5_001));
    await expect(stoppingIntake(p).receive({ ...claimed, doneMarker: true })).rejects.toThrow('killed mid-read');
    const [halfRead] = await p.db('batches').select('id', 'state', 'done_marker');
    expect([halfRead.state, Boolean(halfRead.done_marker)]).toEqual(['VALIDATING', true]);

    // What the daemon does at its next start (resumeReading): the batch is read again from its record.
    const batch = await p.intake.process(halfRead.id as string);
    expect([batch.state, batch.validCount, batch.rejectReason]).toEqual(['ACTIVE', 5_001, null]);
  });
});
