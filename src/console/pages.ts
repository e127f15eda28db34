/**
 * The console's pages as server-rendered HTML: the layout, the batch list
 * (and the part of it that refreshes), a batch, the approval confirmation,
 * users and sign-in. Pure functions of what the server gathered; every
 * value is escaped by `html`. Account numbers arrive masked.
 */
import { figuresOf, reasonsOf, shownRound, totalsText } from '../approval/index.js';
import { duration } from '../domain/clock.js';
import { BATCH_STATES } from '../domain/lifecycle.js';
import { shownStateOf } from '../domain/batch-events.js';
import { maskAccountNumber } from '../domain/payout.js';
import type { BatchRecord, BatchResultRow } from '../store/index.js';
import type { Identity } from './access.js';
import type { ApprovalView } from './approvals.js';
import type { OutboxFile } from './files.js';
import { html, utc, type Html } from './html.js';
import { may } from './roles.js';
import type { ConsoleUser } from './users.js';
import {
  acceptedTotalsOf,
  isOwnUpload,
  totalsOf,
  type BatchListItem,
  type Progress,
  type StatusTotal,
  type TimelineEvent,
} from './views.js';

export interface PageContext {
  identity: Identity | null;
  refreshMs: number;
  now: number;
}

export function layout(ctx: PageContext, title: string, body: Html): Html {
  const id = ctx.identity;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="csrf-token" content="${id?.csrfToken ?? ''}" />
        <title>${title} · payoutd</title>
        <link rel="stylesheet" href="/static/console.css" />
        <script src="/static/console.js" defer></script>
      </head>
      <body data-refresh-ms="${ctx.refreshMs}">
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <strong>payoutd</strong>
          <nav aria-label="Main">
            ${id ? html`<a href="/batches">Batches</a>${may(id.role, 'manage-users') ? html`<a href="/users">Users</a>` : ''}` : ''}
          </nav>
          ${
            id
              ? html`<span>${id.user} (${id.role})</span>${
                    id.via === 'session'
                      ? html`<form method="post" action="/sign-out">
                          <input type="hidden" name="csrf" value="${id.csrfToken}" /><button type="submit">Sign out</button>
                        </form>`
                      : ''
                  }`
              : ''
          }
        </header>
        <main id="main" tabindex="-1">${body}</main>
      </body>
    </html>`;
}

export function signInPage(ctx: PageContext, token: string, message: string | null, next: string): Html {
  return layout(
    ctx,
    'Sign in',
    html`<h1>Sign in</h1>
      ${message ? html`<p class="error" role="alert">${message}</p>` : ''}
      <form method="post" action="/sign-in">
        <input type="hidden" name="csrf" value="${token}" />
        <input type="hidden" name="next" value="${next}" />
        <p>
          <label>User name <input name="name" autocomplete="username" required autofocus /></label>
        </p>
        <p>
          <label>Password <input name="password" type="password" autocomplete="current-password" required /></label>
        </p>
        <p><button type="submit">Sign in</button></p>
      </form>`,
  );
}

export function messagePage(ctx: PageContext, title: string, message: string): Html {
  return layout(
    ctx,
    title,
    html`<h1>${title}</h1>
      <p role="alert">${message}</p>
      <p><a href="/batches">Back to the batches</a></p>`,
  );
}

/** The state as `payoutd status` words it: HELD or AWAITING_APPROVAL for an ACTIVE batch under one, CANCELLED for one cancelled. */
function stateBadge(batch: BatchRecord): Html {
  const state = shownStateOf(batch);
  return html`<span class="state state-${state}">${state}</span>`;
}

function countsText(counts: Partial<Record<string, number>>): string {
  return Object.entries(counts)
    .filter(([, n]) => n)
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');
}

function progressCell(p: Progress, state: string): Html {
  const pct = p.total > 0 ? Math.floor((p.done / p.total) * 100) : state === 'COMPLETE' ? 100 : 0;
  const eta = p.etaMs !== null ? `, about ${duration(p.etaMs)} left` : '';
  return html`<progress max="100" value="${pct}" aria-label="${p.done} of ${p.total} rows final${eta}"></progress>
    <span>${p.done}/${p.total}${eta}</span>`;
}

export interface ListQuery {
  state: string;
  from: string;
  to: string;
  page: number;
}

export function listQueryString(q: ListQuery, page = q.page): string {
  const params = new URLSearchParams();
  if (q.state) params.set('state', q.state);
  if (q.from) params.set('from', q.from);
  if (q.to) params.set('to', q.to);
  if (page > 1) params.set('page', String(page));
  const s = params.toString();
  return s ? `?${s}` : '';
}

export function batchRows(ctx: PageContext, items: BatchListItem[]): Html {
  if (items.length === 0)
    return html`<tr>
      <td colspan="8">No batches match.</td>
    </tr>`;
  return html`${items.map(
    (i) =>
      html`<tr data-batch="${i.batch.id}">
        <td><a href="/batches/${i.batch.id}">${i.batch.fileName}</a></td>
        <td>${i.uploader ?? '(unknown)'}</td>
        <td>${stateBadge(i.batch)}</td>
        <td class="reason">${i.reason ?? ''}</td>
        <td>${countsText(i.counts)}</td>
        <td>${acceptedTotalsOf(i.batch).map(([c, a]) => html`<div>${a} ${c}</div>`)}</td>
        <td>${progressCell(i.progress, i.batch.state)}</td>
        <td title="${utc(i.batch.receivedAt)}">${duration(ctx.now - i.batch.receivedAt)}</td>
      </tr>`,
  )}`;
}

/** The pager and the table of a page of batches: the part of the list that refreshes itself. */
export function batchTable(ctx: PageContext, q: ListQuery, items: BatchListItem[], total: number, pageSize: number): Html {
  const first = total === 0 ? 0 : (q.page - 1) * pageSize + 1;
  const last = Math.min(total, q.page * pageSize);
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return html`<p class="pager">
      Batches ${first}-${last} of ${total} (newest first).
      ${q.page > 1 ? html`<a href="/batches${listQueryString(q, q.page - 1)}" rel="prev">Newer</a>` : ''}
      ${q.page < pages ? html`<a href="/batches${listQueryString(q, q.page + 1)}" rel="next">Older</a>` : ''}
    </p>
    <table>
      <caption class="skip">
        Batches, newest first
      </caption>
      <thead>
        <tr>
          <th scope="col">File</th>
          <th scope="col">Uploader</th>
          <th scope="col">State</th>
          <th scope="col">Hold / approval / refusal</th>
          <th scope="col">Rows by status</th>
          <th scope="col">Amounts accepted</th>
          <th scope="col">Progress</th>
          <th scope="col">Age</th>
        </tr>
      </thead>
      <tbody id="batch-rows">
        ${batchRows(ctx, items)}
      </tbody>
    </table>`;
}

export function batchListPage(ctx: PageContext, q: ListQuery, items: BatchListItem[], total: number, pageSize: number): Html {
  const id = ctx.identity as Identity;
  return layout(
    ctx,
    'Batches',
    html`<h1>Batches</h1>
      ${
        may(id.role, 'upload')
          ? html`<section class="drop" id="drop-zone" aria-labelledby="upload-title">
              <h2 id="upload-title">Upload a batch</h2>
              <p>
                Drop a CSV or XLSX file here, or
                <label class="inline">choose one: <input type="file" id="upload-file" accept=".csv,.xlsx" /></label>. It goes into the inbox
                and is read like any other file.
              </p>
              <p id="upload-status" role="status" aria-live="polite"></p>
            </section>`
          : ''
      }
      <form class="filters" method="get" action="/batches" aria-label="Filter batches">
        <label
          >State
          <select name="state">
            <option value="">any</option>
            ${BATCH_STATES.map((s) => html`<option value="${s}" ${q.state === s ? html` selected` : ''}>${s}</option>`)}
          </select></label
        >
        <label>Received from <input type="date" name="from" value="${q.from}" /></label>
        <label>Received until <input type="date" name="to" value="${q.to}" /></label>
        <button type="submit">Filter</button>
      </form>
      <div id="batch-table" data-refresh="/batches/rows${listQueryString(q)}">${batchTable(ctx, q, items, total, pageSize)}</div>`,
  );
}

export interface BatchPageData {
  item: BatchListItem;
  approval: ApprovalView | null;
  statusTotals: StatusTotal[];
  timeline: TimelineEvent[];
  files: OutboxFile[];
  rows: BatchResultRow[];
  rowTotal: number;
  rowPage: number;
  reference: string;
  pageSize: number;
  /** The signed-in user uploaded this batch (they may reject it, not approve it). */
  ownUpload: boolean;
}

export function batchLive(ctx: PageContext, item: BatchListItem): Html {
  return html`<dl class="facts">
    <dt>State</dt>
    <dd>${stateBadge(item.batch)} ${item.reason ? html`<span class="reason">${item.reason}</span>` : ''}</dd>
    <dt>Progress</dt>
    <dd>${progressCell(item.progress, item.batch.state)}</dd>
    <dt>Rows by status</dt>
    <dd>${countsText(item.counts) || 'none yet'}</dd>
    <dt>Age</dt>
    <dd>${duration(ctx.now - item.batch.receivedAt)}</dd>
  </dl>`;
}

function rowsQuery(d: BatchPageData, page: number): string {
  const p = new URLSearchParams();
  if (d.reference) p.set('q', d.reference);
  if (page > 1) p.set('page', String(page));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** Rows and payout amounts per status and currency. */
function statusTotalsTable(totals: StatusTotal[]): Html {
  return html`<table>
    <thead>
      <tr>
        <th scope="col">Status</th>
        <th scope="col">Currency</th>
        <th scope="col" class="num">Rows</th>
        <th scope="col" class="num">Payout amount</th>
      </tr>
    </thead>
    <tbody>
      ${
        totals.length === 0
          ? html`<tr>
              <td colspan="4">No rows yet.</td>
            </tr>`
          : totals.map(
              (t) =>
                html`<tr>
                  <td>${t.state}</td>
                  <td>${t.currency}</td>
                  <td class="num">${t.rows}</td>
                  <td class="num">${t.amount}</td>
                </tr>`,
            )
      }
    </tbody>
  </table>`;
}

export function batchPage(ctx: PageContext, d: BatchPageData): Html {
  const id = ctx.identity as Identity;
  const b: BatchRecord = d.item.batch;
  const pages = Math.max(1, Math.ceil(d.rowTotal / d.pageSize));
  const canApprove = d.item.awaitingApproval && may(id.role, 'approve');
  return layout(
    ctx,
    b.fileName,
    html`<p><a href="/batches">← All batches</a></p>
      <h1>${b.fileName}</h1>
      <dl class="facts">
        <dt>Batch</dt>
        <dd><code>${b.id}</code></dd>
        <dt>Uploaded by</dt>
        <dd>${d.item.uploader ?? '(unknown)'}</dd>
        <dt>Received</dt>
        <dd>${utc(b.receivedAt)}</dd>
        <dt>SHA-256</dt>
        <dd><code>${b.sha256}</code></dd>
        <dt>Size</dt>
        <dd>${b.size} bytes</dd>
        <dt>Amounts of the accepted rows</dt>
        <dd>${acceptedTotalsOf(b).map(([c, a]) => html`${a} ${c}<br />`)}</dd>
        <dt>Amounts of all rows in the file, including refused ones</dt>
        <dd>${totalsOf(b).map(([c, a]) => html`${a} ${c}<br />`)}</dd>
      </dl>
      ${
        d.item.awaitingApproval
          ? html`<p class="notice">
              This batch waits for an approval.
              ${
                canApprove
                  ? d.ownUpload
                    ? html`You uploaded it, so someone else must approve it. <a href="/batches/${b.id}/approve">Reject it</a>`
                    : html`<a href="/batches/${b.id}/approve">Approve or reject it</a>`
                  : 'Your role cannot approve batches.'
              }
            </p>`
          : ''
      }
      <h2>Now</h2>
      <div id="batch-live" data-refresh="/batches/${b.id}/live">${batchLive(ctx, d.item)}</div>
      <h2>Totals per status and currency</h2>
      ${statusTotalsTable(d.statusTotals)}
      <h2>Timeline</h2>
      <ol>
        ${d.timeline.map((e) => html`<li><time datetime="${new Date(e.at).toISOString()}">${utc(e.at)}</time>: ${e.what}</li>`)}
      </ol>
      <h2>Files</h2>
      ${
        may(id.role, 'download')
          ? d.files.length === 0
            ? html`<p>No outbox files yet.</p>`
            : html`<ul>
                ${d.files.map(
                  (f) =>
                    html`<li><a href="/batches/${b.id}/files/${encodeURIComponent(f.name)}" download>${f.name}</a> (${f.size} bytes)</li>`,
                )}
              </ul>`
          : html`<p>Your role (${id.role}) cannot download the batch's files: they hold full account numbers.</p>`
      }
      <h2 id="rows-title">Rows</h2>
      <form class="filters" method="get" action="/batches/${b.id}#rows-title" role="search">
        <label>Reference contains <input name="q" value="${d.reference}" /></label>
        <button type="submit">Search</button>
      </form>
      <p class="pager">
        ${d.rowTotal} row(s)${d.reference ? html` matching “${d.reference}”` : ''}; page ${d.rowPage} of ${pages}.
        ${d.rowPage > 1 ? html`<a href="/batches/${b.id}${rowsQuery(d, d.rowPage - 1)}#rows-title" rel="prev">Previous rows</a>` : ''}
        ${d.rowPage < pages ? html`<a href="/batches/${b.id}${rowsQuery(d, d.rowPage + 1)}#rows-title" rel="next">Next rows</a>` : ''}
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col" class="num">Line</th>
            <th scope="col">Reference</th>
            <th scope="col">Status</th>
            <th scope="col">Currency</th>
            <th scope="col" class="num">Amount</th>
            <th scope="col">Account</th>
            <th scope="col">Payout id</th>
            <th scope="col">Reason</th>
          </tr>
        </thead>
        <tbody>
          ${d.rows.map(
            (r) =>
              html`<tr>
                <td class="num">${r.line}</td>
                <td>${r.merchantReferenceId}</td>
                <td>${r.state}</td>
                <td>${r.payoutCurrency ?? ''}</td>
                <td class="num">${r.payoutAmount ?? ''}</td>
                <td>${r.beneficiaryAccountNumber ? maskAccountNumber(r.beneficiaryAccountNumber) : ''}</td>
                <td>${r.payoutId ?? ''}</td>
                <td>${[[r.reasonCode, r.reason].filter(Boolean).join(': '), r.serviceNote].filter(Boolean).join('; ')}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  );
}

export function approvePage(ctx: PageContext, item: BatchListItem, statusTotals: StatusTotal[], message: string | null): Html {
  const id = ctx.identity as Identity;
  const b = item.batch;
  // What an approval lets go and records (the rows that will be sent), not every row of the file.
  const figures = figuresOf(b);
  const toPay = `${totalsText(figures.totals)} in ${figures.rows} row${figures.rows === 1 ? '' : 's'}`;
  // The uploader is offered the rejection only: they may stop their own batch, not let it go.
  const own = isOwnUpload(item, id.user);
  // The round and the limit figures shown here go back with the decision: a batch reopened since is approved again.
  const round = shownRound(b);
  const why = reasonsOf(b).map((r) => r.text);
  return layout(
    ctx,
    `${own ? 'Reject' : 'Approve'} ${b.fileName}`,
    html`<p><a href="/batches/${b.id}">← Back to the batch</a></p>
      <h1>${own ? 'Reject' : 'Approve or reject'} ${b.fileName}</h1>
      ${message ? html`<p class="error" role="alert">${message}</p>` : ''}
      ${own ? html`<p class="notice">You uploaded this batch, so someone else must approve it; you may reject it.</p>` : ''}
      <dl class="facts">
        <dt>Batch</dt>
        <dd><code>${b.id}</code></dd>
        <dt>Uploaded by</dt>
        <dd>${item.uploader ?? '(unknown)'}</dd>
        <dt>SHA-256</dt>
        <dd><code>${b.sha256}</code></dd>
        <dt>Will be paid</dt>
        <dd><strong>${toPay}</strong></dd>
        <dt>Approval round</dt>
        <dd>${round}</dd>
        <dt>Why it waits (what you approve)</dt>
        <dd>${why.length > 0 ? why.map((t) => html`${t}<br />`) : '(not recorded)'}</dd>
        <dt>Rows</dt>
        <dd>${b.validCount} valid, ${b.invalidCount} invalid</dd>
        <dt>Amounts of all rows in the file, including refused ones</dt>
        <dd>${totalsOf(b).map(([c, a]) => html`${a} ${c}<br />`)}</dd>
      </dl>
      ${statusTotalsTable(statusTotals)}
      <form method="post" action="/batches/${b.id}/approve">
        <input type="hidden" name="csrf" value="${id.csrfToken}" />
        <input type="hidden" name="sha256" value="${b.sha256}" />
        <input type="hidden" name="round" value="${String(round)}" />
        <p>
          <label>Comment (required to reject) <textarea name="comment" rows="3" cols="60" maxlength="500"></textarea></label>
        </p>
        <p>
          ${own ? '' : html`<button type="submit" name="decision" value="approve">Approve: pay ${toPay}</button>`}
          <button type="submit" name="decision" value="reject">Reject: pay nothing</button>
        </p>
      </form>`,
  );
}

export function usersPage(ctx: PageContext, users: ConsoleUser[]): Html {
  return layout(
    ctx,
    'Users',
    html`<h1>Users</h1>
      <p>
        Users are managed on the server with <code>payoutd user add NAME --role viewer|uploader|approver|admin</code> (docs/console.md).
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Signs in with</th>
            <th scope="col">Locked until</th>
          </tr>
        </thead>
        <tbody>
          ${users.map(
            (u) =>
              html`<tr>
                <td>${u.name}</td>
                <td>${u.role}</td>
                <td>${u.hasPassword ? 'password' : 'reverse proxy only'}</td>
                <td>${u.lockedUntil !== null && u.lockedUntil > ctx.now ? `${utc(u.lockedUntil)} from ${u.lockedFrom.join(', ')}` : ''}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  );
}
