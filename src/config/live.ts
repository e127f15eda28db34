/**
 * What a SIGHUP may change while payoutd runs: the options in LIVE_OPTIONS are written into the running
 * configuration, which their consumers read at each use; every other changed option is named as needing a restart.
 */
import { ConfigError } from '../domain/errors.js';
import type { ResolvedConfig } from './load.js';
import { isPlainObject } from './strict.js';

/** Options applied without a restart (a path and everything under it); each consumer reads it at use. */
export const LIVE_OPTIONS: readonly string[] = [
  'log.level',
  'submit.concurrency',
  'submit.retry',
  'poll.tickMs',
  'poll.firstPollDelayMs',
  'poll.minIntervalMs',
  'poll.maxIntervalMs',
  'poll.staleAfterMs',
  'poll.maxCallsPerPass',
  'poll.concurrency',
  'poll.deferWhileSendingMs',
  // Read by the notification dispatcher at each pass (src/notify); secrets are files, named here, never shown.
  'notify',
];

/** Live options whose values are not shown in a change's report: a URL or an address list may carry a token. */
const UNSHOWN: readonly string[] = ['notify.webhooks', 'notify.email'];

/** Derived from options, not options themselves: never reported. */
const DERIVED: ReadonlySet<string> = new Set(['source', 'databaseFile', 'credentialsDir', 'fromEnvironment', 'fileSections']);

export interface OptionChange {
  /** Dotted path of the option (`submit.concurrency`). */
  path: string;
  /** Applied now; false: it keeps its running value until a restart. */
  live: boolean;
  /** Old and new value, for live options only (restart options may be secrets: named, never shown). */
  from?: unknown;
  to?: unknown;
  /** A live option whose values are not shown (notification targets). */
  hidden?: boolean;
}

export function isLiveOption(path: string): boolean {
  return LIVE_OPTIONS.some((live) => path === live || path.startsWith(`${live}.`));
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Leaf options that differ between two configurations (lists compare whole; a mapping's added or removed keys count). */
function differingPaths(a: unknown, b: unknown, prefix: string[], out: string[]): void {
  if (isPlainObject(a) && isPlainObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (prefix.length === 0 && DERIVED.has(key)) continue;
      differingPaths(a[key], b[key], [...prefix, key], out);
    }
    return;
  }
  if (!sameValue(a, b)) out.push(prefix.join('.'));
}

function valueAt(config: unknown, path: string): unknown {
  let at: unknown = config;
  for (const key of path.split('.')) at = isPlainObject(at) ? at[key] : undefined;
  return at;
}

/** Writes `value` at `path` into the object that holds it now, so whoever holds that object sees it. */
function writeAt(config: unknown, path: string, value: unknown): void {
  const keys = path.split('.');
  let at: unknown = config;
  for (const key of keys.slice(0, -1)) at = isPlainObject(at) ? at[key] : undefined;
  if (isPlainObject(at)) at[keys[keys.length - 1] as string] = value;
}

/** The options that differ between the running configuration and a newly read one. */
export function optionChanges(running: ResolvedConfig, next: ResolvedConfig): OptionChange[] {
  const paths: string[] = [];
  differingPaths(running, next, [], paths);
  return paths.map((path) => {
    if (!isLiveOption(path)) return { path, live: false };
    if (UNSHOWN.some((u) => path === u || path.startsWith(`${u}.`))) return { path, live: true, hidden: true };
    return { path, live: true, from: valueAt(running, path), to: valueAt(next, path) };
  });
}

/** Applies the live options of `next` to `running` in place and returns every change, live or not. */
export function applyLiveOptions(running: ResolvedConfig, next: ResolvedConfig): OptionChange[] {
  const changes = optionChanges(running, next);
  for (const c of changes) if (c.live) writeAt(running, c.path, valueAt(next, c.path));
  return changes;
}

function channelsOf(config: ResolvedConfig): string[] {
  return [...(config.notify.webhooks.length > 0 ? ['notify.webhooks'] : []), ...(config.notify.email ? ['notify.email'] : [])];
}

/**
 * Refuses, before anything of it is applied, a reloaded configuration that lost what the running one had: a
 * top-level section of its file, or every notification channel. A file cut short (a copy or an editor that
 * stopped early) reads as valid with the lost options at their defaults, and `notify` is live: its channels would
 * be dropped at once, and the events of that time never sent to them. A deliberate removal is applied by a restart.
 */
export function checkReloadKeeps(running: ResolvedConfig, next: ResolvedConfig): void {
  const lostSections = running.fileSections.filter((s) => !next.fileSections.includes(s));
  const channels = channelsOf(running);
  const lostChannels = channels.length > 0 && channelsOf(next).length === 0 ? channels : [];
  if (lostSections.length + lostChannels.length === 0) return;
  const file = next.source ?? 'the configuration';
  const lost = [
    ...(lostSections.length > 0 ? [`the sections ${lostSections.join(', ')} that the running configuration's file had`] : []),
    ...(lostChannels.length > 0 ? [`any notification channel (${lostChannels.join(', ')} configured now)`] : []),
  ];
  throw new ConfigError(
    'CONFIG_REMOVED',
    `${file} no longer sets ${lost.join(', nor ')} (a file cut short?); a SIGHUP does not remove them: restore the file, or, if the removal is meant, restart payoutd to apply it`,
  );
}
