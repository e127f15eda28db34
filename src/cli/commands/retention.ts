/**
 * `payoutd prune [--dry-run] [--days N]`: what retention removes of finished
 * batches older than `retention.days` (archived inputs, outbox files, row
 * details; references and payout ids stay), listed, and removed unless
 * `--dry-run`. The daemon does the same on its schedule (src/daemon/retention.ts).
 */
import type { ResolvedConfig } from '../../config/index.js';
import { UsageError } from '../../domain/errors.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import { prune, prunePlan, type PruneItem } from '../../daemon/retention.js';
import { closeDatabase, migrateToLatest, openStore } from '../../store/index.js';
import { print } from '../output.js';

export interface PruneArgs {
  dryRun: boolean;
  /** Overrides `retention.days` for this run. */
  days?: number;
}

export async function pruneCommand(config: ResolvedConfig, args: PruneArgs, clock: Clock = systemClock): Promise<PruneItem[]> {
  const days = args.days ?? config.retention.days;
  if (days === undefined) {
    print('retention.days is not set: everything is kept (set it, or pass --days N)');
    return [];
  }
  if (!Number.isInteger(days) || days < 1)
    throw new UsageError('BAD_ARGUMENT', `--days must be a whole number of days, 1 or more (got ${days})`);
  const db = openStore(config);
  try {
    await migrateToLatest(db);
    const now = clock.now();
    const deps = {
      db,
      stateDir: config.paths.stateDir,
      outboxDir: config.paths.outbox,
      watchTakenForMs: config.inbox.watchTakenForMs,
      logger: silent,
    };
    const items = await prunePlan(deps, days, now);
    const before = new Date(now - days * 86_400_000).toISOString();
    print(`finished batches older than ${days} day(s) (finished before ${before}): ${items.length}`);
    for (const item of items) {
      const finished = new Date(item.batch.completedAt ?? item.batch.receivedAt).toISOString();
      print(
        `  ${item.batch.id} ${item.batch.fileName} (${item.batch.state}, finished ${finished}): details of ${item.rows} row(s), ${item.files.length} file(s)`,
      );
      for (const file of item.files) print(`    ${file}`);
    }
    if (args.dryRun) {
      print('dry run: nothing removed');
      return items;
    }
    const done = await prune({ ...deps, logger: silent }, items, now);
    print(`removed: ${done} batch(es); their references and payout ids are kept`);
    return items;
  } finally {
    await closeDatabase(db);
  }
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
