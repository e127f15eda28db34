/**
 * The finance console in a real browser: Debian's Chromium driven by
 * playwright-core against the real `payoutd run` (compiled CLI, real
 * folders, the sandbox over HTTP, approval required for every batch). An
 * uploader signs in with the keyboard, drops a CSV on the batch list, sees
 * its batch wait for approval and is offered only its rejection; a
 * second user approves it on the confirmation that shows its hash and
 * totals; she watches it finish without reloading, opens it and downloads the result .xlsx, whose cells
 * are checked with exceljs; a file of the wrong kind is refused with a
 * message; a viewer is offered none of the actions and is refused each one
 * when going to it directly. Skipped, saying why, where Chromium is absent
 * (Debian: `apt-get install chromium`).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ExcelJS from 'exceljs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskAccountNumber } from '../../src/domain/payout.js';
import { makeRows, toCsv } from './batch-files.js';
import { BIN, childEnv, startE2e, type E2e } from './harness.js';

const CHROMIUM = process.env.PAYOUTD_TEST_CHROMIUM ?? '/usr/bin/chromium';
const SKIP_REASON = `${CHROMIUM} not found: install Debian's chromium package to run the console's browser tests`;
const present = existsSync(CHROMIUM);
if (!present) console.warn(`console-browser.test.ts skipped: ${SKIP_REASON}`);

const PASSWORD = 'console test password';

/** `payoutd user add NAME --role ROLE` on the test's config, the password piped in. */
function addUser(e2e: E2e, name: string, role: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [BIN, 'user', 'add', name, '--role', role, '--config', e2e.configPath],
      { cwd: e2e.dir, env: childEnv() },
      (err, _stdout, stderr) => (err ? reject(new Error(`payoutd user add ${name}: ${stderr}`)) : resolve()),
    );
    child.stdin?.end(`${PASSWORD}\n`);
  });
}

async function signIn(page: Page, base: string, name: string): Promise<void> {
  await page.goto(`${base}/batches`);
  await expect.poll(() => page.url()).toContain('/sign-in');
  // By keyboard: the name field has the focus, Tab to the password, Enter sends. Typing waits for autofocus
  // to land (it comes with the page's load; keys typed before it go nowhere).
  await page.waitForFunction(`document.activeElement?.getAttribute('name') === 'name'`, undefined, { timeout: 10_000 });
  await page.keyboard.type(name);
  await page.keyboard.press('Tab');
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL(`${base}/batches`);
}

describe.skipIf(!present)('console in Chromium against payoutd run', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('an uploader drops a file, a second user approves it, she watches it finish and downloads the result .xlsx; a viewer is refused each action; a workbook goes the same way', async () => {
    const e2e = await startE2e({ sandbox: { settlement: { minDelayMs: 300, maxDelayMs: 1500 } } });
    const approvalsDir = join(e2e.dir, 'approvals');
    await mkdir(approvalsDir);
    await e2e.writeConfig({
      paths: { approvals: approvalsDir },
      console: { enabled: true, port: 0, refreshMs: 500 },
      outbox: { xlsx: true },
      // Every batch waits for one approver; the uploader is listed too, so only the own-upload rule stops her.
      approval: { required: 'always', approvers: { users: ['uma', 'abe'] } },
    });
    await addUser(e2e, 'uma', 'admin');
    await addUser(e2e, 'abe', 'approver');
    await addUser(e2e, 'vic', 'viewer');
    const daemon = await e2e.startDaemon();
    const base = (await daemon.waitForLog((l) => l.msg === 'finance console listening')).url as string;

    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    await signIn(page, base, 'uma');
    // The first Tab reaches the skip link: the page is usable from the keyboard.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');

    // A file of the wrong kind is refused with a message, chosen with the file input.
    const notes = join(e2e.dir, 'notes.txt');
    await writeFile(notes, 'not a batch\n');
    await page.setInputFiles('#upload-file', notes);
    await expect.poll(() => page.textContent('#upload-status'), { timeout: 10_000 }).toContain('is not a .csv or .xlsx file');

    // The batch is dropped on the page.
    const rows = makeRows('WEB', 12);
    // The page's own DataTransfer, as a drag from the desktop brings (written as page script: the tests have no DOM types).
    const dataTransfer = await page.evaluateHandle(
      `(() => { const dt = new DataTransfer(); dt.items.add(new File([${JSON.stringify(toCsv(rows))}], 'web-payouts.csv', { type: 'text/csv' })); return dt; })()`,
    );
    await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer });
    await expect.poll(() => page.textContent('#upload-status'), { timeout: 10_000 }).toContain('uploaded by uma');

    // It appears in the list, and finishes, without a reload: the list refreshes itself.
    const row = page.locator('#batch-rows tr', { hasText: 'web-payouts.csv' });
    await row.waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toContain('uma');
    await expect.poll(async () => (await row.textContent()) ?? '', { timeout: 30_000, interval: 200 }).toContain('awaiting approval');

    // The uploader may not approve her own upload, even as an admin listed among the approvers: she may only reject it.
    await row.getByRole('link', { name: 'web-payouts.csv' }).click();
    await page.waitForURL(/\/batches\/[^/]+$/);
    const batchUrl = page.url();
    expect(await page.textContent('main')).toContain('You uploaded it, so someone else must approve it.');
    expect((await page.goto(`${batchUrl}/approve`))?.status()).toBe(200);
    expect(await page.textContent('main')).toContain('You uploaded this batch, so someone else must approve it; you may reject it.');
    expect(await page.getByRole('button', { name: /^Approve/ }).count()).toBe(0);

    // A second user approves it: the confirmation shows the hash and the totals.
    const approverContext = await browser.newContext();
    const approver = await approverContext.newPage();
    await signIn(approver, base, 'abe');
    await approver.goto(batchUrl);
    await approver.getByRole('link', { name: 'Approve or reject it' }).click();
    const confirmation = (await approver.textContent('main')) ?? '';
    const batchId = batchUrl.split('/').pop() as string;
    const sha = (await e2e.batches()).find((b) => b.id === batchId) as { sha256?: string } | undefined;
    expect(confirmation).toMatch(/SHA-256\s*[0-9a-f]{64}/);
    if (sha?.sha256) expect(confirmation).toContain(sha.sha256);
    expect(confirmation.replace(/\s+/g, ' ')).toContain('READY');
    await approver.getByRole('button', { name: /^Approve/ }).click();
    await approver.waitForURL(batchUrl);
    await expect.poll(async () => (await approver.textContent('main')) ?? '', { timeout: 20_000 }).toMatch(/approved by abe \(console\)/);
    await approverContext.close();

    await page.goto(`${base}/batches`);
    // Marks this page: still there after the batch finished means the list changed in place, without a reload.
    await page.evaluate('window.stillHere = true');
    await expect
      .poll(
        async () => {
          const text = (await row.textContent()) ?? '';
          return text.includes('COMPLETE') && text.includes('12/12');
        },
        { timeout: 60_000, interval: 200 },
      )
      .toBe(true);
    expect(await page.evaluate('window.stillHere')).toBe(true);

    // The batch page: totals, timeline, rows masked, the files.
    await row.getByRole('link', { name: 'web-payouts.csv' }).click();
    await page.waitForURL(/\/batches\/[^/]+$/);
    const text = (await page.textContent('main')) ?? '';
    expect(text).toContain('received (uploaded by uma in the console)');
    expect(text).toContain('complete: every row is final');
    for (const r of rows) expect(text).not.toContain(r.accountNumber);
    for (const r of rows) expect(text).toContain(maskAccountNumber(r.accountNumber));

    const link = page.getByRole('link', { name: /\.result\.xlsx$/ });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const saved = join(e2e.dir, 'downloaded.xlsx');
    await download.saveAs(saved);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(saved);
    const ws = wb.worksheets[0] as ExcelJS.Worksheet;
    const header = (ws.getRow(1).values as unknown[]).slice(1);
    const col = (name: string): number => header.indexOf(name) + 1;
    expect(col('merchant_reference_id')).toBeGreaterThan(0);
    const byRef = new Map<string, ExcelJS.Row>();
    ws.eachRow((r, n) => {
      if (n > 1) byRef.set(r.getCell(col('merchant_reference_id')).text, r);
    });
    expect([...byRef.keys()].sort()).toEqual(rows.map((r) => r.merchantReferenceId).sort());
    for (const r of rows) {
      const cells = byRef.get(r.merchantReferenceId) as ExcelJS.Row;
      expect(cells.getCell(col('status')).text).toBe('PAID');
      expect(cells.getCell(col('payout_currency')).text).toBe(r.payoutCurrency);
      expect(Number(cells.getCell(col('payout_amount')).value)).toBe(Number(r.payoutAmount));
    }
    const fileUrl = new URL((await link.getAttribute('href')) as string, base).toString();

    // A viewer: offered nothing but reading, and refused each action when going to it.
    const viewerContext = await browser.newContext();
    const viewer = await viewerContext.newPage();
    await signIn(viewer, base, 'vic');
    expect(await viewer.locator('#upload-file').count()).toBe(0);
    await viewer.goto(batchUrl);
    expect(await viewer.textContent('main')).toContain('Your role (viewer) cannot download');
    expect(await viewer.locator('a[href*="/files/"]').count()).toBe(0);
    for (const url of [fileUrl, `${batchUrl}/approve`, `${base}/users`]) {
      const response = await viewer.goto(url);
      expect(response?.status(), url).toBe(403);
      expect(await viewer.textContent('main')).toContain('Your role (viewer) does not allow this');
    }
    const refusedUpload = await viewer.evaluate(`(async () => {
      const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute('content');
      const r = await fetch('/upload', { method: 'POST', headers: { 'X-CSRF-Token': csrf, 'X-File-Name': 'v.csv' }, body: 'a,b\\n' });
      return r.status;
    })()`);
    expect(refusedUpload).toBe(403);
    expect(await e2e.batches()).toHaveLength(1);
    await viewerContext.close();

    // A workbook goes the same way as a CSV: chosen on the page, read as .xlsx, acknowledged, waiting for approval.
    await page.goto(`${base}/batches`);
    await page.setInputFiles('#upload-file', fileURLToPath(new URL('../../samples/payouts-valid.xlsx', import.meta.url)));
    await expect.poll(() => page.textContent('#upload-status'), { timeout: 10_000 }).toContain('uploaded by uma');
    const workbook = await e2e.waitForBatches(
      (all) => all.find((b) => b.fileName === 'payouts-valid.xlsx' && b.shownState === 'AWAITING_APPROVAL'),
      'the uploaded workbook acknowledged and waiting for approval',
      30_000,
    );
    expect(workbook).toMatchObject({ rowCount: 12, validCount: 12, invalidCount: 0 });
    expect(await e2e.waitForOutbox(workbook, 'ack')).toBeTruthy();
    await context.close();
    expect(await daemon.stop()).toBe(0);
  }, 120_000);
});
