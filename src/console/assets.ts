/**
 * The console's stylesheet and script, served from memory as /static/*
 * (the pages load nothing else, and the Content-Security-Policy allows
 * nothing else). The script refreshes the parts of a page marked
 * `data-refresh`, and sends a file chosen or dropped on the upload zone.
 */
export const CONSOLE_CSS = `
:root { font-family: system-ui, sans-serif; color: #1b1f24; background: #f6f7f9; }
body { margin: 0; }
a { color: #0b57d0; }
a:focus, button:focus, input:focus, select:focus, textarea:focus, summary:focus, [tabindex]:focus { outline: 3px solid #f9a825; outline-offset: 2px; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 2; }
header { display: flex; gap: 16px; align-items: center; padding: 8px 16px; background: #1f2937; color: #fff; }
header a { color: #fff; }
header nav { display: flex; gap: 16px; flex: 1; }
header form { margin: 0; }
main { padding: 16px; max-width: 1400px; }
h1 { font-size: 1.4rem; margin: 0 0 12px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 0.9rem; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { background: #eef1f4; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.state { font-weight: 600; font-size: 0.8rem; padding: 1px 6px; border-radius: 4px; background: #e3e6ea; }
.state-COMPLETE { background: #d7f5dd; } .state-REJECTED { background: #fbd9d9; } .state-DUPLICATE { background: #fde9c8; }
.state-ACTIVE { background: #d6e6fd; }
.reason { color: #8a4b00; }
progress { width: 120px; }
form.filters { display: flex; gap: 12px; align-items: end; flex-wrap: wrap; margin-bottom: 12px; }
label { display: flex; flex-direction: column; font-size: 0.85rem; gap: 2px; }
label.inline { display: inline; font-size: inherit; }
.drop { border: 2px dashed #8895a7; border-radius: 8px; padding: 16px; background: #fff; margin-bottom: 16px; }
.drop.over { border-color: #0b57d0; background: #eef4ff; }
.ok { color: #146c2e; } .error { color: #b3261e; }
.pager { display: flex; gap: 16px; margin: 8px 0; align-items: center; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; padding: 12px; }
dl.facts dt { font-weight: 600; }
code { font-size: 0.85rem; word-break: break-all; }
.notice { background: #fff3cd; padding: 8px 12px; border-radius: 4px; }
button { font: inherit; padding: 4px 12px; }
`;

export const CONSOLE_JS = `
'use strict';
const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';
const refreshMs = Number(document.body.dataset.refreshMs) || 3000;
for (const el of document.querySelectorAll('[data-refresh]')) {
  setInterval(async () => {
    // Not while hidden, and not under the keyboard's focus (a refresh would take it away).
    if (document.hidden || el.contains(document.activeElement)) return;
    try {
      const r = await fetch(el.dataset.refresh, { credentials: 'same-origin' });
      if (r.status === 401) { location.reload(); return; }
      if (r.ok) el.innerHTML = await r.text();
    } catch { /* the next tick tries again */ }
  }, refreshMs);
}
const zone = document.getElementById('drop-zone');
const input = document.getElementById('upload-file');
const status = document.getElementById('upload-status');
async function send(file) {
  if (!file) return;
  status.className = '';
  status.textContent = 'Uploading ' + file.name + '…';
  try {
    const r = await fetch('/upload', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-CSRF-Token': csrf, 'X-File-Name': encodeURIComponent(file.name), 'Content-Type': 'application/octet-stream' },
      body: file,
    });
    const answer = await r.json().catch(() => ({ message: 'the server answered ' + r.status }));
    status.className = r.ok ? 'ok' : 'error';
    status.textContent = answer.message;
  } catch (e) {
    status.className = 'error';
    status.textContent = 'The upload did not reach the server: ' + e.message;
  }
  if (input) input.value = '';
}
if (zone && input && status) {
  input.addEventListener('change', () => send(input.files[0]));
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => { e.preventDefault(); zone.classList.remove('over'); send(e.dataTransfer.files[0]); });
}
`;
