/**
 * The console's HTTP server (node:http): routes, the role each needs, the
 * CSRF check on every POST, and the security headers of every answer.
 * Every route checks the identity and its role here, on the server; a
 * request without a session or with a wrong CSRF token changes nothing.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { FINAL_BATCH_STATES, type BatchState } from '../domain/lifecycle.js';
import { PayoutdError } from '../domain/errors.js';
import { safeError } from '../log/index.js';
import { getBatch, listBatchPage, resultRowsPage, type BatchRecord, type Database, type SignInLockout } from '../store/index.js';
import { clientAddress, ConsoleAccess, cookiesOf, PRE_SESSION_COOKIE, sameToken, SESSION_COOKIE, type Identity } from './access.js';
import type { ApprovalView, Approvals } from './approvals.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import { ConsoleError } from './errors.js';
import { attachment, batchFiles, contentTypeOf, openBatchFile } from './files.js';
import type { Html } from './html.js';
import {
  approvePage,
  batchListPage,
  batchLive,
  batchPage,
  batchTable,
  messagePage,
  signInPage,
  usersPage,
  type ListQuery,
  type PageContext,
} from './pages.js';
import { listBatchTimeline } from '../notify/index.js';
import { may, type Permission } from './roles.js';
import { acceptUpload } from './upload.js';
import { listUsers } from './users.js';
import { isOwnUpload, listItem, statusTotals, timelineOf, type BatchListItem } from './views.js';

export interface ConsoleOptions {
  host: string;
  port: number;
  db: Database;
  logger: Logger;
  now(): number;
  inbox: string;
  outbox: string;
  stateDir: string;
  /** `inbox.ignore`: names the inbox never takes are refused at upload. */
  inboxIgnore: readonly string[];
  /** The outbox name of a batch: its files are `<name>.*` (src/daemon/outbox.ts). */
  outboxNameOf(batch: BatchRecord): string;
  approvals: Approvals;
  trustedProxies: readonly string[];
  userHeader: string;
  sessionMs: number;
  secureCookie: boolean;
  lockout: SignInLockout;
  maxUploadBytes: number;
  refreshMs: number;
  pageSize: number;
}

const BATCH_ID = '[A-Za-z0-9_-]{1,40}';
const MAX_FORM_BYTES = 16_384;
const DAY_MS = 86_400_000;

/** An answer already decided (a refusal): thrown by checks, written by the router. */
class Answer extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
  ) {
    super(text);
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse, match: RegExpExecArray, url: URL) => Promise<void>;

interface Route {
  method: 'GET' | 'POST';
  path: RegExp;
  /** null: open to anyone (sign-in, static files). */
  permission: Permission | null;
  handler: Handler;
}

function dateStart(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

function pageNumber(text: string | null): number {
  const n = Number(text ?? '1');
  return Number.isSafeInteger(n) && n >= 1 && n <= 1_000_000 ? n : 1;
}

/** A local path to go back to after sign-in; anything else (another site, a scheme) becomes /batches. */
function localPath(text: string | null | undefined): string {
  return text && /^\/(?![/\\])[\x21-\x7e]*$/.test(text) ? text : '/batches';
}

export class ConsoleServer {
  private server: Server | null = null;
  private readonly access: ConsoleAccess;
  private readonly routes: Route[];

  constructor(private readonly o: ConsoleOptions) {
    this.access = new ConsoleAccess({
      db: o.db,
      now: o.now,
      sessionMs: o.sessionMs,
      trustedProxies: o.trustedProxies,
      userHeader: o.userHeader,
      lockout: o.lockout,
    });
    const r = (method: Route['method'], path: string, permission: Permission | null, handler: Handler): Route => ({
      method,
      path: new RegExp(`^${path}$`),
      permission,
      handler,
    });
    this.routes = [
      r('GET', '/static/console\\.css', null, (_q, res) => this.asset(res, 'text/css; charset=utf-8', CONSOLE_CSS)),
      r('GET', '/static/console\\.js', null, (_q, res) => this.asset(res, 'text/javascript; charset=utf-8', CONSOLE_JS)),
      r('GET', '/sign-in', null, (req, res, _m, url) => this.signInForm(req, res, null, url.searchParams.get('next'))),
      r('POST', '/sign-in', null, (req, res) => this.signIn(req, res)),
      r('POST', '/sign-out', 'view', (req, res) => this.signOut(req, res)),
      r('GET', '/', 'view', (_q, res) => Promise.resolve(this.redirect(res, '/batches'))),
      r('GET', '/batches', 'view', (req, res, _m, url) => this.batchList(req, res, url, false)),
      r('GET', '/batches/rows', 'view', (req, res, _m, url) => this.batchList(req, res, url, true)),
      r('GET', `/batches/(${BATCH_ID})`, 'view', (req, res, m, url) => this.batch(req, res, m[1] as string, url)),
      r('GET', `/batches/(${BATCH_ID})/live`, 'view', (req, res, m) => this.batchLive(req, res, m[1] as string)),
      r('GET', `/batches/(${BATCH_ID})/files/([^/]+)`, 'download', (req, res, m) =>
        this.download(req, res, m[1] as string, m[2] as string),
      ),
      r('GET', `/batches/(${BATCH_ID})/approve`, 'approve', (req, res, m) => this.approveForm(req, res, m[1] as string, null)),
      r('POST', `/batches/(${BATCH_ID})/approve`, 'approve', (req, res, m) => this.decide(req, res, m[1] as string)),
      r('POST', '/upload', 'upload', (req, res) => this.upload(req, res)),
      r('GET', '/users', 'manage-users', (req, res) => this.users(req, res)),
    ];
  }

  async listen(): Promise<string> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.failed(res, err));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) =>
        reject(new PayoutdError('CONSOLE_LISTEN_FAILED', `console cannot listen on ${this.o.host}:${this.o.port}: ${err.message}`)),
      );
      server.listen(this.o.port, this.o.host, () => resolve());
    });
    const a = server.address() as AddressInfo;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = null;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  // ------------------------------------------------------------ routing and checks

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.headers(res);
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const path = url.pathname;
    const forPath = this.routes.filter((r) => r.path.test(path));
    if (forPath.length === 0) return this.send(res, 404, 'Not found', 'There is no such page.');
    const route = forPath.find((r) => r.method === req.method);
    if (!route) {
      res.setHeader('Allow', forPath.map((r) => r.method).join(', '));
      return this.send(res, 405, 'Method not allowed', `${req.method ?? ''} is not allowed here.`);
    }
    const match = route.path.exec(path) as RegExpExecArray;
    try {
      if (route.permission !== null) {
        const identity = await this.access.identify(req);
        if (!identity) {
          if (req.method === 'GET' && !path.endsWith('/rows') && !path.endsWith('/live')) {
            return this.redirect(res, `/sign-in?next=${encodeURIComponent(path + url.search)}`);
          }
          return this.send(res, 401, 'Sign in first', 'Sign in to do this.');
        }
        if (!may(identity.role, route.permission)) {
          this.o.logger.warn({ user: identity.user, role: identity.role, path, method: req.method }, 'console: refused for the role');
          return this.send(res, 403, 'Not allowed', `Your role (${identity.role}) does not allow this.`, identity);
        }
        this.identities.set(req, identity);
      }
      await route.handler(req, res, match, url);
    } catch (err) {
      if (err instanceof Answer)
        return this.send(res, err.status, err.status === 403 ? 'Not allowed' : 'Not done', err.text, this.identities.get(req) ?? null);
      throw err;
    }
  }

  private readonly identities = new WeakMap<IncomingMessage, Identity>();

  private who(req: IncomingMessage): Identity {
    return this.identities.get(req) as Identity;
  }

  private ctx(identity: Identity | null): PageContext {
    return { identity, refreshMs: this.o.refreshMs, now: this.o.now() };
  }

  /** The CSRF token of a form or header must be the identity's. */
  private checkCsrf(req: IncomingMessage, given: string | null | undefined): void {
    const expected = this.who(req).csrfToken;
    if (!given || !sameToken(given, expected)) {
      this.o.logger.warn({ user: this.who(req).user, path: req.url }, 'console: request refused, CSRF token missing or wrong');
      throw new Answer(403, 'This form has expired or did not come from the console: reload the page and try again.');
    }
  }

  private headers(res: ServerResponse): void {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
  }

  private asset(res: ServerResponse, type: string, body: string): Promise<void> {
    res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'public, max-age=300' });
    res.end(body);
    return Promise.resolve();
  }

  private page(res: ServerResponse, body: Html, status = 200): void {
    res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(body.text);
  }

  private send(res: ServerResponse, status: number, title: string, message: string, identity: Identity | null = null): void {
    this.page(res, messagePage(this.ctx(identity), title, message), status);
  }

  private redirect(res: ServerResponse, location: string): void {
    res.writeHead(303, { Location: location });
    res.end();
  }

  private failed(res: ServerResponse, err: unknown): void {
    this.o.logger.error({ err: safeError(err) }, 'console: request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.send(res, 500, 'Something went wrong', 'The console could not answer; the log says why. Try again.');
  }

  private async form(req: IncomingMessage): Promise<URLSearchParams> {
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('application/x-www-form-urlencoded')) throw new Answer(415, 'Send this form from the console page.');
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_FORM_BYTES) throw new Answer(413, 'The form is too large.');
      chunks.push(chunk as Buffer);
    }
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  }

  private cookie(name: string, value: string, maxAgeSeconds: number): string {
    return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${this.o.secureCookie ? '; Secure' : ''}`;
  }

  // ------------------------------------------------------------ sign-in

  private async signInForm(req: IncomingMessage, res: ServerResponse, message: string | null, next: string | null): Promise<void> {
    const identity = await this.access.identify(req);
    if (identity && message === null) return this.redirect(res, localPath(next));
    // The sign-in form's token is double-submitted: the same random value as a cookie and in the form.
    const token = randomBytes(24).toString('hex');
    res.setHeader('Set-Cookie', this.cookie(PRE_SESSION_COOKIE, token, 3600));
    this.page(res, signInPage(this.ctx(null), token, message, localPath(next)), message === null ? 200 : 401);
  }

  private async signIn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await this.form(req);
    const pre = cookiesOf(req).get(PRE_SESSION_COOKIE);
    const given = form.get('csrf');
    if (!pre || !given || !sameToken(pre, given)) {
      return this.signInForm(req, res, 'The sign-in form expired: sign in again.', form.get('next'));
    }
    const name = (form.get('name') ?? '').trim().slice(0, 128);
    const address = clientAddress(req, this.o.trustedProxies);
    const result = await this.access.signIn(name, (form.get('password') ?? '').slice(0, 1024), address);
    if (!result.ok) {
      // An unknown name is not logged: it may be a password typed into the name box.
      this.o.logger.warn({ ...(result.known ? { user: name } : {}), address, why: result.why }, 'console: sign-in refused');
      // The same words for a name that exists and one that does not.
      const message =
        result.why === 'locked'
          ? 'This name is locked out from here after repeated failed sign-ins: wait, or ask an administrator (payoutd user unlock).'
          : 'Wrong user name or password.';
      return this.signInForm(req, res, message, form.get('next'));
    }
    this.o.logger.info({ user: name }, 'console: signed in');
    res.setHeader('Set-Cookie', [
      this.cookie(SESSION_COOKIE, result.cookieValue, Math.floor(this.o.sessionMs / 1000)),
      this.cookie(PRE_SESSION_COOKIE, '', 0),
    ]);
    this.redirect(res, localPath(form.get('next')));
  }

  private async signOut(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await this.form(req);
    this.checkCsrf(req, form.get('csrf'));
    await this.access.signOut(this.who(req));
    res.setHeader('Set-Cookie', this.cookie(SESSION_COOKIE, '', 0));
    this.redirect(res, '/sign-in');
  }

  // ------------------------------------------------------------ batches

  private async items(batches: BatchRecord[]): Promise<BatchListItem[]> {
    const now = this.o.now();
    const out: BatchListItem[] = [];
    for (const b of batches) {
      const approval = await this.o.approvals.read(b.id);
      out.push(await listItem(this.o.db, b, approval, now));
    }
    return out;
  }

  private async batchList(req: IncomingMessage, res: ServerResponse, url: URL, rowsOnly: boolean): Promise<void> {
    const p = url.searchParams;
    const state = p.get('state') ?? '';
    const q: ListQuery = {
      state: /^[A-Z]{1,16}$/.test(state) ? state : '',
      from: p.get('from') ?? '',
      to: p.get('to') ?? '',
      page: pageNumber(p.get('page')),
    };
    const from = dateStart(q.from);
    const to = dateStart(q.to);
    if (from === undefined) q.from = '';
    if (to === undefined) q.to = '';
    const { batches, total } = await listBatchPage(
      this.o.db,
      {
        states: q.state ? [q.state as BatchState] : undefined,
        receivedFrom: from,
        receivedUntil: to === undefined ? undefined : to + DAY_MS,
      },
      (q.page - 1) * this.o.pageSize,
      this.o.pageSize,
    );
    const items = await this.items(batches);
    const ctx = this.ctx(this.who(req));
    this.page(res, rowsOnly ? batchTable(ctx, q, items, total, this.o.pageSize) : batchListPage(ctx, q, items, total, this.o.pageSize));
  }

  private async batchOr404(id: string): Promise<BatchRecord> {
    const batch = await getBatch(this.o.db, id);
    if (!batch) throw new Answer(404, `There is no batch ${id}.`);
    return batch;
  }

  /** A batch's list item, with the approval it was made from: a page showing both reads the approval once. */
  private async itemOf(batch: BatchRecord): Promise<{ item: BatchListItem; approval: ApprovalView | null }> {
    const approval = await this.o.approvals.read(batch.id);
    return { item: await listItem(this.o.db, batch, approval, this.o.now()), approval };
  }

  private async batch(req: IncomingMessage, res: ServerResponse, id: string, url: URL): Promise<void> {
    const batch = await this.batchOr404(id);
    const { item, approval } = await this.itemOf(batch);
    const reference = (url.searchParams.get('q') ?? '').slice(0, 128);
    const rowPage = pageNumber(url.searchParams.get('page'));
    const rows = await resultRowsPage(this.o.db, id, {
      reference: reference || undefined,
      offset: (rowPage - 1) * this.o.pageSize,
      limit: this.o.pageSize,
    });
    const identity = this.who(req);
    this.page(
      res,
      batchPage(this.ctx(identity), {
        item,
        approval,
        statusTotals: await this.totals(batch),
        timeline: timelineOf(batch, item.uploader, approval, await listBatchTimeline(this.o.db, id)),
        files: await batchFiles(this.o.outbox, this.o.outboxNameOf(batch)),
        rows: rows.rows,
        rowTotal: rows.total,
        rowPage,
        reference,
        pageSize: this.o.pageSize,
        ownUpload: isOwnUpload(item, identity.user),
      }),
    );
  }

  /** Totals per status of a finished batch never change: kept for the pages that show it again. */
  private readonly finishedTotals = new Map<string, Awaited<ReturnType<typeof statusTotals>>>();

  private async totals(batch: BatchRecord): Promise<Awaited<ReturnType<typeof statusTotals>>> {
    const kept = this.finishedTotals.get(batch.id);
    if (kept) return kept;
    const totals = await statusTotals(this.o.db, batch.id);
    if (FINAL_BATCH_STATES.includes(batch.state) && batch.finalCountsJson !== null) {
      if (this.finishedTotals.size >= 100) this.finishedTotals.delete(this.finishedTotals.keys().next().value as string);
      this.finishedTotals.set(batch.id, totals);
    }
    return totals;
  }

  private async batchLive(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const { item } = await this.itemOf(await this.batchOr404(id));
    this.page(res, batchLive(this.ctx(this.who(req)), item));
  }

  private async download(req: IncomingMessage, res: ServerResponse, id: string, encodedName: string): Promise<void> {
    const batch = await this.batchOr404(id);
    let name: string;
    try {
      name = decodeURIComponent(encodedName);
    } catch {
      throw new Answer(404, 'There is no such file.');
    }
    const file = await openBatchFile(this.o.outbox, this.o.outboxNameOf(batch), name);
    if (!file) throw new Answer(404, `Batch ${id} has no file named ${name}.`);
    this.o.logger.info({ user: this.who(req).user, batchId: id, file: name }, 'console: file downloaded');
    res.writeHead(200, { 'Content-Type': contentTypeOf(name), 'Content-Length': file.size, 'Content-Disposition': attachment(name) });
    const stream = file.handle.createReadStream({ start: 0, end: Math.max(0, file.size - 1) });
    if (file.size === 0) {
      await file.handle.close();
      res.end();
      return;
    }
    await new Promise<void>((resolve, reject) => {
      stream.on('error', reject);
      res.on('close', resolve);
      stream.pipe(res);
    });
  }

  // ------------------------------------------------------------ upload

  private async upload(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const identity = this.who(req);
    const json = (status: number, message: string, extra: Record<string, unknown> = {}): void => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ ok: status === 201, message, ...extra }));
    };
    const token = req.headers['x-csrf-token'];
    if (typeof token !== 'string' || !sameToken(token, identity.csrfToken)) {
      this.o.logger.warn({ user: identity.user }, 'console: upload refused, CSRF token missing or wrong');
      return json(403, 'The page has expired or the upload did not come from the console: reload the page and try again.');
    }
    let name: string;
    try {
      name = decodeURIComponent(String(req.headers['x-file-name'] ?? ''));
    } catch {
      return json(400, 'The file name could not be read: rename the file.');
    }
    const length = Number(req.headers['content-length'] ?? 'NaN');
    if (Number.isFinite(length) && length > this.o.maxUploadBytes) {
      res.setHeader('Connection', 'close');
      return json(413, `${JSON.stringify(name)} is larger than ${this.o.maxUploadBytes} bytes (console.maxUploadBytes): split the batch.`);
    }
    try {
      const up = await acceptUpload(
        {
          db: this.o.db,
          inbox: this.o.inbox,
          stateDir: this.o.stateDir,
          maxBytes: this.o.maxUploadBytes,
          ignore: this.o.inboxIgnore,
          now: this.o.now,
        },
        name,
        identity.user,
        req,
      );
      this.o.logger.info({ user: identity.user, file: up.name, size: up.size, sha256: up.sha256 }, 'console: file uploaded into the inbox');
      json(201, `${up.name} (${up.size} bytes) is in the inbox, uploaded by ${identity.user}; it shows in the list once it is taken.`, {
        file: up.name,
        sha256: up.sha256,
      });
    } catch (err) {
      if (!(err instanceof ConsoleError)) throw err;
      this.o.logger.warn({ user: identity.user, code: err.code }, `console: upload refused: ${err.message}`);
      if (err.code === 'UPLOAD_TOO_LARGE') res.setHeader('Connection', 'close');
      const status = { UPLOAD_TOO_LARGE: 413, UPLOAD_NAME_TAKEN: 409, UPLOAD_FAILED: 500 }[err.code] ?? 400;
      json(status, `${err.message}.`);
    }
  }

  // ------------------------------------------------------------ approvals

  private async awaiting(batch: BatchRecord): Promise<BatchListItem> {
    const { item: found } = await this.itemOf(batch);
    if (!this.o.approvals.available) throw new Answer(409, 'This payoutd has no batch approvals.');
    if (!found.awaitingApproval) throw new Answer(409, `Batch ${batch.id} does not wait for an approval.`);
    return found;
  }

  private async approveForm(req: IncomingMessage, res: ServerResponse, id: string, message: string | null): Promise<void> {
    const batch = await this.batchOr404(id);
    const item = await this.awaiting(batch);
    this.page(res, approvePage(this.ctx(this.who(req)), item, await statusTotals(this.o.db, id), message), message ? 400 : 200);
  }

  private async decide(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const form = await this.form(req);
    this.checkCsrf(req, form.get('csrf'));
    const batch = await this.batchOr404(id);
    const item = await this.awaiting(batch);
    const decision = form.get('decision');
    const comment = (form.get('comment') ?? '').trim().slice(0, 500);
    if (decision !== 'approve' && decision !== 'reject') return this.approveForm(req, res, id, 'Choose Approve or Reject.');
    // The uploader may stop their own batch, never let it go.
    if (decision === 'approve' && isOwnUpload(item, this.who(req).user)) {
      throw new Answer(403, 'You uploaded this batch, so someone else must approve it; you may reject it.');
    }
    if (decision === 'reject' && comment === '') return this.approveForm(req, res, id, 'Say why the batch is rejected.');
    if (form.get('sha256') !== batch.sha256) {
      return this.approveForm(req, res, id, 'The file is not the one shown when this page was opened: check it again.');
    }
    // The round the page showed: an approval opened before a reopen is refused as stale, not applied to new figures.
    // None (a page from before rounds): the first, as for an approval file.
    const roundText = form.get('round') ?? '';
    const round = roundText === '' ? null : /^[1-9]\d{0,8}$/.test(roundText) ? Number(roundText) : NaN;
    const approver = this.who(req).user;
    let message: string;
    try {
      message = await this.o.approvals.decide({
        batchId: id,
        sha256: batch.sha256,
        decision,
        approver,
        via: 'console',
        round,
        ...(comment ? { comment } : {}),
      });
    } catch (err) {
      // The decision's own refusals (not an approver under the policy, decided already, the file changed) shown as they are.
      if (!(err instanceof ConsoleError)) throw err;
      this.o.logger.warn({ user: approver, batchId: id, code: err.code }, `console: decision refused: ${err.message}`);
      return this.approveForm(req, res, id, `${err.message}.`);
    }
    this.o.logger.info({ user: approver, batchId: id, decision }, `console: ${message}`);
    this.redirect(res, `/batches/${id}`);
  }

  // ------------------------------------------------------------ users

  private async users(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.page(res, usersPage(this.ctx(this.who(req)), await listUsers(this.o.db, this.o.now())));
  }
}
