// Summarizes a V8 .cpuprofile (node --cpu-prof): self time per function,
// inclusive time per function of payoutd's own code, and self time per
// package (a node_modules package, a dist/ folder of payoutd, node itself).
// Usage: node bench/lib/profile.mjs FILE.cpuprofile [--top N]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function shortUrl(url) {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const d = url.lastIndexOf('/dist/');
  if (d >= 0) return url.slice(d + 1);
  return url.replace(/^file:\/\//, '');
}

function packageOf(frame) {
  const { url, functionName } = frame;
  if (SPECIAL.has(functionName)) return functionName;
  if (!url) return '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1];
  const d = /\/dist\/([^/]+)\//.exec(url);
  if (d) return `payoutd:${d[1]}`;
  if (url.startsWith('node:')) return 'node';
  return shortUrl(url);
}

function keyOf(frame) {
  if (SPECIAL.has(frame.functionName)) return frame.functionName;
  const name = frame.functionName || '(anonymous)';
  const where = shortUrl(frame.url);
  return where ? `${name} ${where}:${frame.lineNumber + 1}` : name;
}

/** Self and inclusive times (ms) per function and per package. */
export function summarizeProfile(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map();
  for (let k = 0; k < profile.samples.length; k++) {
    const id = profile.samples[k];
    // timeDeltas[k] is the time before sample k; the next delta is the time this sample stands for.
    const dt = profile.timeDeltas[k + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  }
  const fnSelf = new Map();
  const pkgSelf = new Map();
  const fnTotal = new Map();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const frame = node.callFrame;
    totalUs += us;
    if (frame.functionName === '(idle)') idleUs += us;
    const key = keyOf(frame);
    fnSelf.set(key, (fnSelf.get(key) ?? 0) + us);
    const pkg = packageOf(frame);
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + us);
    // Inclusive: every distinct function on the stack (recursion counted once).
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (!f || f.functionName === '(root)') continue;
      const k = keyOf(f);
      if (seen.has(k)) continue;
      seen.add(k);
      fnTotal.set(k, (fnTotal.get(k) ?? 0) + us);
    }
  }
  const busyUs = totalUs - idleUs;
  const rows = (m, filter = () => true) =>
    [...m.entries()]
      .filter(([k]) => filter(k))
      .sort((a, b) => b[1] - a[1])
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), pctBusy: busyUs > 0 ? Math.round((us / busyUs) * 1000) / 10 : 0 }));
  return {
    wallMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    idleMs: Math.round(idleUs / 1000),
    self: rows(fnSelf, (k) => k !== '(idle)'),
    packages: rows(pkgSelf, (k) => k !== '(idle)'),
    // Inclusive time of payoutd's own functions: where in our code the time goes.
    ownInclusive: rows(fnTotal, (k) => / dist\//.test(k)),
  };
}

export function summarizeFile(file) {
  return summarizeProfile(JSON.parse(readFileSync(file, 'utf8')));
}

/** Markdown-ish text of a summary, `top` rows per list. */
export function formatSummary(title, s, top = 15) {
  const lines = [`### ${title}`, '', `wall ${s.wallMs} ms, busy ${s.busyMs} ms, idle ${s.idleMs} ms (percentages are of busy time)`, ''];
  const list = (heading, rows) => {
    lines.push(`${heading}:`, '');
    for (const r of rows.slice(0, top)) lines.push(`- ${String(r.pctBusy).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.name}`);
    lines.push('');
  };
  list('Self time by package', s.packages);
  list('Self time by function', s.self);
  list('Inclusive time of payoutd functions', s.ownInclusive);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node bench/lib/profile.mjs FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  const topAt = process.argv.indexOf('--top');
  const top = topAt > 0 ? Number.parseInt(process.argv[topAt + 1] ?? '15', 10) : 15;
  process.stdout.write(`${formatSummary(file, summarizeFile(file), top)}\n`);
}
