/**
 * `payoutd run`: the daemon in the foreground, as systemd runs it. SIGTERM
 * or SIGINT stop it gracefully (exit 0), also while it is still starting
 * (a half-read batch is simply read again next time); a second signal
 * forces the exit. SIGHUP re-reads log.level from the config file.
 */
import { systemClock } from '../../domain/clock.js';
import type { ResolvedConfig } from '../../config/index.js';
import { startDaemon, type RunningDaemon } from '../../daemon/runtime.js';
import { faultPointFromSpec } from '../../daemon/fault-points.js';
import type { Logger } from '../../log/index.js';

export async function runDaemon(config: ResolvedConfig, logger: Logger, reload: () => ResolvedConfig, faultSpec?: string): Promise<void> {
  const faultPoint = faultPointFromSpec(faultSpec) ?? undefined;
  if (faultPoint)
    logger.warn({ spec: faultSpec }, 'PAYOUTD_FAULT_KILL_AT is set: this process will kill itself at that point (chaos testing)');

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
      logger.error({ err: { message: (err as Error).message } }, 'error while stopping');
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
    try {
      const next = reload();
      logger.level = next.log.level;
      // At warn, so the notice shows whatever the new level is.
      logger.warn({ level: next.log.level }, 'SIGHUP: log level reloaded (other options need a restart)');
    } catch (err) {
      logger.error({ err: { message: (err as Error).message } }, 'SIGHUP: config not reloaded');
    }
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', onHup);

  running = await startDaemon(config, systemClock, logger, faultPoint, startAbort.signal);
  if (stopping) stop();
  await stopped;
}
