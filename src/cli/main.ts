/**
 * The `payoutd` command line: parses argv with yargs and hands each command to its module, imported in its
 * handler so short commands load little. The only layer that reads process.env or argv and decides exit codes:
 * 78 (EX_CONFIG), 69 (EX_UNAVAILABLE at start), 1 for anything else, 2 for a usage mistake (an unknown option,
 * a missing or bad argument, a batch id that names no batch).
 */
import yargs, { type Argv } from 'yargs';
import type { ResolvedConfig } from '../config/index.js';
import { UsageError } from '../domain/errors.js';
import type { Logger } from '../log/index.js';
import { errorLines, EX_USAGE, exitCodeOf } from './output.js';

interface GlobalArgs {
  config?: string;
  'log-level'?: string;
}

/** Reads the configuration the global options name; the loader is imported once, on first use. */
type ConfigReader = (argv: GlobalArgs) => ResolvedConfig;

async function configReader(): Promise<ConfigReader> {
  const { loadConfig } = await import('../config/index.js');
  return (argv) => {
    const overrides: Record<string, unknown> = {};
    if (argv['log-level']) overrides.log = { level: argv['log-level'] };
    return loadConfig({ file: argv.config ?? process.env.PAYOUTD_CONFIG, env: process.env, cwd: process.cwd() }, overrides);
  };
}

async function configFrom(argv: GlobalArgs): Promise<ResolvedConfig> {
  return (await configReader())(argv);
}

/** Logs for commands that print results go to stderr, so stdout stays clean. */
async function stderrLogger(config: ResolvedConfig): Promise<Logger> {
  const { createLogger } = await import('../log/index.js');
  const level = config.log.level === 'info' ? 'warn' : config.log.level;
  return createLogger(level as never, process.stderr);
}

function withConfig<T>(y: Argv<T>): Argv<T & GlobalArgs> {
  return y
    .option('config', {
      alias: 'c',
      type: 'string',
      describe: 'YAML config file (default: $PAYOUTD_CONFIG, else built-in defaults with the embedded sandbox)',
    })
    .option('log-level', { type: 'string', describe: 'override log.level' }) as Argv<T & GlobalArgs>;
}

/** The options `approve` and `reject` share. */
function decisionOptions<T>(y: Argv<T>) {
  return withConfig(y)
    .option('batch', { type: 'string', demandOption: true })
    .option('sha256', { type: 'string', describe: "the file's SHA-256 from the ack (default: the batch's, checked against its file)" })
    .option('as', { type: 'string', describe: 'the approver, when a configured service account runs this (approval.serviceAccounts)' });
}

/**
 * A reader that stops early (`payoutd validate big.csv | head`) closes stdout: stop quietly, as a command
 * killed by SIGPIPE does, instead of dying on an unhandled EPIPE with a stack trace on the terminal.
 */
function stopQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });
}

export async function runCli(argv: string[]): Promise<void> {
  stopQuietlyWhenStdoutCloses();
  try {
    await yargs(argv)
      .scriptName('payoutd')
      .usage('$0 <command> [options]')
      .command(
        'keygen',
        'make a merchant RSA 2048 key pair (PKCS#8 private key, mode 0600)',
        (y) =>
          y
            .option('out', { type: 'string', demandOption: true, describe: 'directory to write into' })
            .option('force', { type: 'boolean', default: false }),
        async (a) => {
          const { keygen } = await import('./commands/keys.js');
          keygen(a.out, a.force);
        },
      )
      .command(
        'sandbox',
        'run the payout sandbox server (or --init DIR to make its config and a matching daemon config)',
        (y) =>
          y
            .option('port', { type: 'number', describe: 'port to listen on (default: the config file, else 8787 for --init)' })
            .option('config', { alias: 'c', type: 'string', describe: 'sandbox JSON config file' })
            .option('init', { type: 'string', describe: 'write a fresh key pair, sandbox.json and payoutd.yaml into this directory' }),
        async (a) => {
          const { initSandboxDir, runSandbox } = await import('./commands/sandbox.js');
          if (a.init) initSandboxDir(a.init, a.port ?? 8787);
          else await runSandbox(a.config, a.port);
        },
      )
      .command(
        'rates',
        'indicative exchange rates for fiat currencies',
        (y) =>
          withConfig(y)
            .option('currency', { type: 'string', array: true, demandOption: true, describe: 'fiat currency code (repeatable)' })
            .option('json', { type: 'boolean', default: false }),
        async (a) => {
          const config = await configFrom(a);
          const { showRates } = await import('./commands/account.js');
          await showRates(config, await stderrLogger(config), a.currency, a.json);
        },
      )
      .command(
        'balance',
        'stablecoin balances of the configured merchant',
        (y) => withConfig(y).option('json', { type: 'boolean', default: false }),
        async (a) => {
          const config = await configFrom(a);
          const { showBalance } = await import('./commands/account.js');
          await showBalance(config, await stderrLogger(config), a.json);
        },
      )
      .command(
        'run',
        'run the daemon: watch the inbox, pay, follow, write results (no config: embedded sandbox and ./var)',
        (y) => withConfig(y),
        async (a) => {
          const readConfig = await configReader();
          const config = readConfig(a);
          const [{ createLogger }, { runDaemon }] = await Promise.all([import('../log/index.js'), import('./commands/run.js')]);
          await runDaemon(config, createLogger(config.log.level), () => readConfig(a), process.env.PAYOUTD_FAULT_KILL_AT);
        },
      )
      .command(
        'demo',
        'pay the sample files against the embedded sandbox in temporary folders, print the outcome, exit',
        (y) => y.option('timeout', { type: 'number', default: 120, describe: 'seconds to wait for the results' }),
        async (a) => {
          const { demo } = await import('./commands/demo.js');
          await demo(a.timeout * 1000);
        },
      )
      .command(
        'validate <file>',
        'check a batch file without paying anything; exit code 1 on any error',
        (y) => withConfig(y).positional('file', { type: 'string', demandOption: true }),
        async (a) => {
          const config = await configFrom(a);
          const { validateFile } = await import('./commands/inspect.js');
          process.exitCode = await validateFile(config, a.file);
        },
      )
      .command(
        'status',
        'batches with their row counts by state, amounts and age',
        (y) =>
          withConfig(y)
            .option('batch', { type: 'string', describe: 'one batch, with its errors and holds' })
            .option('limit', {
              type: 'number',
              default: 20,
              describe: 'batches listed: every unfinished one, then the latest finished ones',
            })
            .option('json', { type: 'boolean', default: false }),
        async (a) => {
          // At least one: an empty listing could not say how many batches it left out.
          if (!Number.isInteger(a.limit) || a.limit < 1) throw new UsageError('BAD_USAGE', '--limit must be a whole number of at least 1');
          const config = await configFrom(a);
          const { status } = await import('./commands/status.js');
          await status(config, a.batch, a.limit, a.json);
        },
      )
      .command(
        'report',
        'a batch as a CSV (--batch, any time), or the reconciliation of every payout created in a period (--since)',
        (y) =>
          withConfig(y)
            .option('batch', { type: 'string', describe: 'the current state of one batch' })
            .option('since', {
              type: 'string',
              describe: 'reconciliation from this day (YYYY-MM-DD, UTC) or ISO timestamp with zone, inclusive',
            })
            .option('until', { type: 'string', describe: 'reconciliation up to this day or timestamp, exclusive (default: now)' })
            .option('xlsx', { type: 'boolean', describe: 'with --since: also write an .xlsx beside the CSV (default: outbox.xlsx)' })
            .option('out', { type: 'string', describe: 'file to write (default: in the current directory)' })
            .conflicts('batch', 'since')
            .check((a) => {
              if (!a.batch && !a.since) throw new UsageError('BAD_USAGE', 'name --batch ID or --since DATE');
              if (a.until && !a.since) throw new UsageError('BAD_USAGE', '--until needs --since');
              return true;
            }),
        async (a) => {
          const config = await configFrom(a);
          if (a.since) {
            const { reconciliationReport } = await import('./commands/finance.js');
            await reconciliationReport(config, { since: a.since, until: a.until, out: a.out, xlsx: a.xlsx });
          } else {
            const { reportBatch } = await import('./commands/inspect.js');
            await reportBatch(config, a.batch as string, a.out);
          }
        },
      )
      .command(
        'retry-file',
        "write a batch's CANCELLED rows as a CSV to drop again, with fresh references",
        (y) =>
          withConfig(y)
            .option('batch', { type: 'string', demandOption: true })
            .option('out', { type: 'string', describe: 'file to write (default: <outbox>/<batch file>.retry.csv)' }),
        async (a) => {
          const config = await configFrom(a);
          const { retryFile } = await import('./commands/finance.js');
          await retryFile(config, a.batch, a.out);
        },
      )
      .command(
        'prune',
        'remove the archived inputs, outbox files and row details of batches finished more than retention.days ago (references and payout ids are kept)',
        (y) =>
          withConfig(y)
            .option('dry-run', { type: 'boolean', default: false, describe: 'list what would go; remove nothing' })
            .option('days', { type: 'number', describe: 'override retention.days for this run' }),
        async (a) => {
          const config = await configFrom(a);
          const { pruneCommand } = await import('./commands/retention.js');
          await pruneCommand(config, { dryRun: a.dryRun, days: a.days });
        },
      )
      .command(
        'release',
        'lift the hold on a batch (for example one whose upload changed after it was taken): its unsent rows will be paid',
        (y) => withConfig(y).option('batch', { type: 'string', demandOption: true }),
        async (a) => {
          const config = await configFrom(a);
          const { releaseBatch } = await import('./commands/operator.js');
          await releaseBatch(config, a.batch);
        },
      )
      .command(
        'cancel',
        'do not pay the rows of a batch that were not sent yet (they become NOT_SUBMITTED), for good; sent rows are followed to their end',
        (y) =>
          withConfig(y)
            .option('batch', { type: 'string', demandOption: true })
            .option('reason', { type: 'string', default: 'no reason given' }),
        async (a) => {
          const config = await configFrom(a);
          const { cancelBatch } = await import('./commands/operator.js');
          await cancelBatch(config, a.batch, a.reason);
        },
      )
      .command(
        'approve',
        'approve a batch waiting for approval (you are the approver: the Unix user running this, or the sudo caller)',
        (y) =>
          decisionOptions(y).option('comment', { type: 'string' }).option('round', {
            type: 'number',
            describe: 'the approval round approved, as the ack or payoutd status shows it (default: 1)',
          }),
        async (a) => {
          const config = await configFrom(a);
          const { decideFromCli } = await import('./commands/approval.js');
          await decideFromCli(config, 'approve', { batch: a.batch, sha256: a.sha256, as: a.as, comment: a.comment, round: a.round });
        },
      )
      .command(
        'reject',
        'reject a batch waiting for approval: none of its rows is paid, and the result file gives your reason',
        (y) => decisionOptions(y).option('reason', { type: 'string', demandOption: true }),
        async (a) => {
          const config = await configFrom(a);
          const { decideFromCli } = await import('./commands/approval.js');
          await decideFromCli(config, 'reject', { batch: a.batch, sha256: a.sha256, as: a.as, reason: a.reason });
        },
      )
      .command(
        'user <action> [name]',
        'finance console users: add NAME --role R, passwd NAME, role NAME --role R, unlock NAME, remove NAME, list (passwords from stdin)',
        (y) =>
          withConfig(y)
            .positional('action', { type: 'string', choices: ['add', 'passwd', 'role', 'unlock', 'remove', 'list'], demandOption: true })
            .positional('name', { type: 'string', describe: 'the user name' })
            .option('role', { type: 'string', choices: ['viewer', 'uploader', 'approver', 'admin'], describe: 'what the user may do' })
            .option('proxy-only', {
              type: 'boolean',
              default: false,
              describe: 'no password: the user signs in only through the trusted reverse proxy (console.userHeader)',
            })
            .option('json', { type: 'boolean', default: false }),
        async (a) => {
          const config = await configFrom(a);
          const { manageUsers } = await import('./commands/users.js');
          await manageUsers(config, { action: a.action, name: a.name, role: a.role, proxyOnly: a['proxy-only'], json: a.json });
        },
      )
      .command(
        'migrate',
        'create or upgrade the state database schema',
        (y) =>
          withConfig(y).option('accept-service-change', {
            type: 'boolean',
            default: false,
            describe:
              "record the configured payout service as this database's (after a start refused with SERVICE_CHANGED); " +
              'refused while a row is CREATING, UNKNOWN or PENDING on the old one',
          }),
        async (a) => {
          const config = await configFrom(a);
          const { migrate } = await import('./commands/status.js');
          await migrate(config, a['accept-service-change']);
        },
      )
      .demandCommand(1, 'name a command; `payoutd --help` lists them')
      .strict()
      .help()
      .fail((msg, err) => {
        // A command's error, or a UsageError of a check of its options: said with its code, exit code below.
        if (err) throw err;
        process.stderr.write(`payoutd: ${msg}\n(run payoutd --help for usage)\n`);
        process.exit(EX_USAGE);
      })
      .parseAsync();
  } catch (err) {
    process.stderr.write(
      errorLines(err)
        .map((line) => `payoutd: ${line}\n`)
        .join(''),
    );
    process.exitCode = exitCodeOf(err);
  }
}
