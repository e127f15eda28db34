/**
 * `payoutd prune [--dry-run] [--days N]`: what retention removes of finished
 * batches older than `retention.days` (archived inputs, outbox files, row
 * details; references and payout ids stay), listed, and removed unless
 * `--dry-run`. The daemon does the same on its schedule (src/daemon/retention.ts).
 * A batch that could not be pruned is named with the file and error, and
 * the command fails (exit 1): the next prune tries it again.
 */
import type { ResolvedConfig } from '../../config/index.js';
import { PayoutdError, UsageError } from '../../domain/errors.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import { prune, prunePlan, type PruneFailure, type PruneItem } from '../../daemon/retention.js';
import { print } from '../output.js';
import { withMigratedStore } from './state-database.js';

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
  return withMigratedStore(config, async (db) => {
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
    const { pruned, failed } = await prune(deps, items, now);
    print(`removed: ${pruned.length} batch(es); their references and payout ids are kept`);
    if (failed.length > 0) {
      // One line each on stderr (as the error's lines), so a script or cron mail sees which batch and why.
      throw new PayoutdError(
        'PRUNE_INCOMPLETE',
        [
          `${failed.length} of ${items.length} batch(es) not pruned; the next prune (the daemon's, or payoutd prune) tries each again once the cause is fixed:`,
          ...failed.map(failureLine),
        ].join('\n'),
      );
    }
    return items;
  });
}

/** A batch not pruned, and what of it was removed all the same: its reports note that from the moment it began. */
function failureLine(f: PruneFailure): string {
  const error = f.message.startsWith(f.code) ? f.message : `${f.code}: ${f.message}`;
  const what = f.file === null ? 'cannot clear its row details' : `cannot remove ${f.file}`;
  const files = `${f.filesRemoved} of its ${f.item.files.length} file(s) removed`;
  const details =
    f.rowsCleared > 0 ? `the details of ${f.rowsCleared} of its ${f.item.rows} row(s) cleared, the others kept` : 'its row details kept';
  const before = f.item.batch.pruneStartedAt != null;
  const earlier = before ? ' (by this prune: an earlier one, cut short, may have removed more)' : '';
  const noted = f.begun || before ? '; until a prune finishes it, reports note its row details as being removed' : '';
  return `${f.item.batch.id} ${f.item.batch.fileName}: ${what} (${error}); ${files}, ${details}${earlier}${noted}`;
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
