/**
 * The notification channels, named by the live configuration at each
 * delivery pass: signed HTTP webhooks to the merchant's systems, email
 * through SMTP, and the status files in the outbox. A channel either takes
 * an event (resolves) or throws; the dispatcher retries what it refused,
 * each channel on its own.
 */
import { readFileSync } from 'node:fs';
import { createTransport, type Transporter } from 'nodemailer';
import { BATCH_EVENT_TYPES, shownStateOf, type BatchEvent, type BatchEventType } from '../domain/batch-events.js';
import { webhookName, type ResolvedConfig } from '../config/index.js';
import {
  correctionAdvice,
  correctedRowText,
  correctionNoticeOf,
  correctionRetryText,
  type CorrectionNotice,
} from '../domain/correction-notice.js';
import { outboxFileName, resultFileName } from '../report/index.js';
import type { BatchRecord } from '../store/index.js';
import { NotifyError } from './errors.js';
import { eventPayload, type BatchSnapshot } from './payload.js';
import { readSecretFile, signingKey, standardWebhookHeaders } from './signing.js';
import { writeStatusFiles } from './status-file.js';

/** What a channel is given to deliver one event. */
export interface Delivery {
  event: BatchEvent;
  batch: BatchRecord;
  /** The batch as it stands now (read once per event, only when a channel asks). */
  snapshot(): Promise<BatchSnapshot>;
  /** The batch's outbox files are named `<outboxName>.<kind>.csv`. */
  outboxName: string;
  signal: AbortSignal;
}

export interface NotificationChannel {
  /** In logs, metrics and the event's record of who took it: `webhook:<name>`, `email`, `status-file`. */
  readonly name: string;
  deliver(d: Delivery): Promise<void>;
}

type NotifyConfig = ResolvedConfig['notify'];
type WebhookTarget = NotifyConfig['webhooks'][number];
type EmailSettings = NonNullable<NotifyConfig['email']>;

class HttpWebhookChannel implements NotificationChannel {
  readonly name: string;

  constructor(
    private readonly target: WebhookTarget,
    private readonly credentialsDir: string | null,
    private readonly now: () => number,
  ) {
    this.name = `webhook:${webhookName(target)}`;
  }

  async deliver(d: Delivery): Promise<void> {
    const where = `notify.webhooks[${webhookName(this.target)}].secret`;
    const key = signingKey(readSecretFile(where, this.target.secretFile, this.target.secretCredential, this.credentialsDir), where);
    const body = JSON.stringify(eventPayload(d.event, d.batch));
    const headers = standardWebhookHeaders(key, d.event.id, Math.floor(this.now() / 1000), body);
    let status: number;
    try {
      const res = await fetch(this.target.url, {
        method: 'POST',
        body,
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'payoutd' },
        redirect: 'manual',
        signal: d.signal,
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw new NotifyError('NOTIFY_HTTP_UNREACHABLE', `${this.name} not reached (${cause})`);
    }
    if (status < 200 || status > 299) throw new NotifyError('NOTIFY_HTTP_STATUS', `${this.name} answered HTTP ${status}`);
  }
}

/** The plain-text mail of an event: what happened, the batch's rows and totals by status, and its outbox files. */
export function emailText(
  d: Pick<Delivery, 'event' | 'batch' | 'outboxName'>,
  s: BatchSnapshot,
  statusFiles: boolean,
): { subject: string; text: string } {
  const { event, batch } = d;
  const notice = event.type === 'corrected' ? correctionNoticeOf(event.data) : null;
  // A correction's subject names the input file once, and that its result file, not the file, was corrected: the
  // correction's file names (the input's name twice more) are in the text, and would push the count past the cut.
  const detail =
    notice !== null
      ? `: ${notice.rowsChanged} row(s) changed`
      : typeof event.data['reason'] === 'string'
        ? `: ${event.data['reason']}`
        : '';
  // A cancelled batch's final notice names it as status does, not as a plain completion.
  const what =
    notice !== null
      ? `result corrected (${notice.correction})`
      : event.type === 'completed' && event.data['shownState'] === 'CANCELLED'
        ? 'CANCELLED'
        : event.type;
  const subject = `payoutd: ${batch.fileName} ${what}${detail}`.slice(0, 200);
  const lines = [
    `Batch file ${batch.fileName} (batch ${batch.id}): ${what}${detail}`,
    `When: ${new Date(event.createdAt).toISOString()}`,
    `State: ${shownStateOf(batch)}${batch.holdReason ? ` (${batch.holdReason})` : ''}`,
    `Rows: ${s.rows}, final: ${s.final}${s.percent === null ? '' : ` (${s.percent.toFixed(1)}%)`}`,
  ];
  if (s.etaAt !== null) lines.push(`Estimated end: ${new Date(s.etaAt).toISOString()}`);
  lines.push('', 'By status:');
  for (const [status, n] of Object.entries(s.counts)) {
    const amounts = Object.entries(s.amounts[status as keyof typeof s.amounts] ?? {}).map(([c, a]) => `${a} ${c}`);
    lines.push(`  ${status}: ${n} row(s)${amounts.length > 0 ? `, ${amounts.join(', ')}` : ''}`);
  }
  if (notice !== null) lines.push('', ...correctionLines(notice, batch.id));
  // Only files the batch's record says were written: a file refused whole has an ack and no result, an ack may not be written yet.
  const files: string[] = [];
  if (batch.ackWrittenAt !== null) files.push(outboxFileName(d.outboxName, 'ack'));
  if (statusFiles) files.push(outboxFileName(d.outboxName, 'status'));
  if (batch.resultWrittenAt !== null) files.push(outboxFileName(d.outboxName, 'result'), outboxFileName(d.outboxName, 'summary'));
  // The latest correction counted as written: its file is in the outbox.
  const corrections = batch.resultCorrectionsWritten ?? 0;
  if (corrections > 0) files.push(resultFileName(d.outboxName, corrections));
  lines.push('', 'Outbox files:', ...files.map((f) => `  ${f}`), '', `Event id: ${event.id}`);
  return { subject, text: `${lines.join('\n')}\n` };
}

/** A correction's part of its mail: what to do, each row it changed, and its retry files. */
function correctionLines(n: CorrectionNotice, batchId: string): string[] {
  const more = n.rowsChanged - n.rows.length;
  const retry = correctionRetryText(n, batchId);
  return [
    `Correction ${n.correction}: ${n.correctionFile} supersedes ${n.supersedes}.`,
    correctionAdvice(n),
    '',
    `Rows changed (${n.rowsChanged}):`,
    ...n.rows.map((r) => `  ${correctedRowText(r)}`),
    ...(more > 0 ? [`  and ${more} more: see ${n.correctionFile}`] : []),
    ...(retry === null ? [] : ['', `Retry files: ${retry}`]),
  ];
}

class EmailChannel implements NotificationChannel {
  readonly name = 'email';
  private readonly transport: Transporter;

  constructor(
    private readonly settings: EmailSettings,
    credentialsDir: string | null,
    timeoutMs: number,
    private readonly statusFiles: boolean,
  ) {
    const password =
      settings.passwordFile || settings.passwordCredential
        ? readSecretFile('notify.email.password', settings.passwordFile, settings.passwordCredential, credentialsDir)
        : undefined;
    this.transport = createTransport({
      host: settings.host,
      port: settings.port,
      secure: false,
      requireTLS: settings.startTls,
      ignoreTLS: !settings.startTls,
      auth: settings.user !== undefined && password !== undefined ? { user: settings.user, pass: password } : undefined,
      tls: settings.caFile ? { ca: readFileSync(settings.caFile) } : undefined,
      // nodemailer's own limits wait minutes on a server that stalls; an attempt gets notify.timeoutMs at each step.
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    });
  }

  async deliver(d: Delivery): Promise<void> {
    const { subject, text } = emailText(d, await d.snapshot(), this.statusFiles);
    try {
      // The Message-ID carries the event id: a mail delivered twice (a crash after the send) is one message to the reader's tools.
      await this.transport.sendMail({
        from: this.settings.from,
        to: this.settings.to,
        subject,
        text,
        messageId: `<${d.event.id}@payoutd>`,
        headers: { 'X-Payoutd-Event-Id': d.event.id },
        // The attempt's timeout and the daemon's stop end the send and its connection at once.
        signal: d.signal,
      });
    } catch (err) {
      const e = err as { code?: string; responseCode?: number };
      throw new NotifyError(
        'NOTIFY_SMTP',
        `the SMTP server did not take the mail (${e.code ?? 'error'}${e.responseCode ? ` ${e.responseCode}` : ''})`,
      );
    }
  }

  close(): void {
    this.transport.close();
  }
}

class StatusFileChannel implements NotificationChannel {
  readonly name = 'status-file';

  constructor(
    private readonly dir: string,
    private readonly o: { bom: boolean; xlsx: boolean },
  ) {}

  async deliver(d: Delivery): Promise<void> {
    await writeStatusFiles(this.dir, d.outboxName, await d.snapshot(), this.o);
  }
}

function webhookTakes(target: WebhookTarget, type: BatchEventType): boolean {
  return target.events?.includes(type) ?? true;
}

function emailTakes(settings: EmailSettings, type: BatchEventType): boolean {
  return settings.events?.includes(type) ?? type !== 'progress';
}

/** A channel the configuration names, before it is opened: no secret is read to know its name and events. */
export interface ChannelSpec {
  readonly name: string;
  /** The event types it takes. */
  readonly types: readonly BatchEventType[];
  /** The channel, ready to deliver; one whose settings cannot be used is reported, and refuses every event. */
  open(now: () => number, onProblem: (err: unknown) => void): NotificationChannel;
}

function typesTaken(takes: (type: BatchEventType) => boolean): BatchEventType[] {
  return BATCH_EVENT_TYPES.filter(takes);
}

/** The channels the configuration names now, in a stable order. */
export function configuredChannels(config: ResolvedConfig): ChannelSpec[] {
  const n = config.notify;
  const out: ChannelSpec[] = [];
  if (n.statusFiles) {
    const o = { bom: config.outbox.bom, xlsx: config.outbox.xlsx };
    out.push({ name: 'status-file', types: BATCH_EVENT_TYPES, open: () => new StatusFileChannel(config.paths.outbox, o) });
  }
  for (const w of n.webhooks) {
    out.push({
      name: `webhook:${webhookName(w)}`,
      types: typesTaken((t) => webhookTakes(w, t)),
      open: (now) => new HttpWebhookChannel(w, config.credentialsDir, now),
    });
  }
  const email = n.email;
  if (email) {
    const types = typesTaken((t) => emailTakes(email, t));
    out.push({
      name: 'email',
      types,
      open: (_now, onProblem) => {
        try {
          return new EmailChannel(email, config.credentialsDir, n.timeoutMs, n.statusFiles);
        } catch (err) {
          // Unusable settings (an unreadable password file): the mail is owed all the same, so its events wait and retry.
          onProblem(err);
          return { name: 'email', deliver: () => Promise.reject(err) };
        }
      },
    });
  }
  return out;
}

/** Lets go of what a channel holds open (an SMTP connection). */
export function closeChannel(channel: NotificationChannel): void {
  if (channel instanceof EmailChannel) channel.close();
}
