/**
 * `payoutd run`: the daemon in the foreground. SIGTERM or SIGINT stop it gracefully (a second forces the exit).
 * SIGHUP re-reads the configuration, applies the live options and names those that need a restart; a file that
 * lost a section or every notification channel is refused whole (a restart applies such a removal).
 */
import { systemClock } from '../../domain/clock.js';
import { applyLiveOptions, checkReloadKeeps, notFoundGraceProblem, type OptionChange, type ResolvedConfig } from '../../config/index.js';
import { startDaemon, type RunningDaemon } from '../../daemon/runtime.js';
import { faultPointFromSpec } from '../../daemon/fault-points.js';
import { safeError, type Logger } from '../../log/index.js';

export async function runDaemon(config: ResolvedConfig, logger: Logger, reload: () => ResolvedConfig, faultSpec?: string): Promise<void> {
  const faultPoint = faultPointFromSpec(faultSpec) ?? undefined;
  if (faultPoint)
    logger.warn({ spec: faultSpec }, 'PAYOUTD_FAULT_KILL_AT is set: this process will kill itself at that point (chaos testing)');
  const shortGrace = notFoundGraceProblem(config);
  if (config.submit.unsafeShortGrace && shortGrace)
    logger.warn({ setting: 'submit.unsafeShortGrace' }, `submit.unsafeShortGrace is set (test sandboxes only): ${shortGrace}`);

  // Handlers first: a stop that arrives during start-up recovery must still end in a clean exit 0.
  const startAbort = new AbortController();
  let running: RunningDaemon | null = null;
  let stopping = false;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  const stop = (): void => {
    if (!running) return; // start-up still running: it sees startAbort and returns
    running.stop().then(resolveStopped, (err: unknown) => {
      logger.error({ err: safeError(err) }, 'error while stopping');
      process.exitCode = 1;
      resolveStopped();
    });
  };
  const onStop = (sig: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal: sig }, 'second signal: exiting now (work in flight is resolved at the next start)');
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal: sig }, running ? 'stop requested' : 'stop requested during start-up');
    startAbort.abort(new Error('stop requested'));
    stop();
  };
  const onHup = (): void => {
    let next: ResolvedConfig;
    try {
      next = reload();
      checkReloadKeeps(config, next);
    } catch (err) {
      const lines = (err as Error).message.split('\n');
      for (const line of lines)
        logger.error({ code: (err as { code?: string }).code }, `SIGHUP: configuration not reloaded, the running one stays: ${line}`);
      return;
    }
    // The running configuration object is what the daemon reads its live options from.
    const changes = applyLiveOptions(config, next);
    logger.level = config.log.level;
    // At warn, so the notices show whatever the new level is.
    if (changes.length === 0) logger.warn('SIGHUP: configuration re-read; no option changed');
    for (const c of changes) logger.warn({ option: c.path, applied: c.live }, `SIGHUP: ${changeLine(c)}`);
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', onHup);

  running = await startDaemon(config, systemClock, logger, faultPoint, startAbort.signal);
  if (stopping) stop();
  await stopped;
}

function shown(value: unknown): string {
  return JSON.stringify(value) ?? 'unset';
}

/** `submit.concurrency changed 8 -> 4: applied`, or `inbox.stableForMs changed: needs a restart` (values of those may be secrets). */
export function changeLine(c: OptionChange): string {
  if (!c.live) return `${c.path} changed: needs a restart`;
  return c.hidden ? `${c.path} changed: applied` : `${c.path} changed ${shown(c.from)} -> ${shown(c.to)}: applied`;
}
