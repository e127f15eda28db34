// The bench's verdicts: each figure beside its limit, their ratio held to a
// target, and the table printed at the end of a run.

const round = (x, digits) => (x === null || x === undefined || Number.isNaN(x) ? null : Number(x.toFixed(digits)));
/** Three digits under 10, one under 1,000, none above. */
const shown = (x) => (x === null || x === undefined ? null : round(x, Math.abs(x) < 10 ? 3 : Math.abs(x) < 1000 ? 1 : 0));

/** A table row: `value` against `limit` (what `limitIs`), their ratio held to `target` ('>= 0.85', '<= 2', '< 1'). */
export function figure({ scenario, measure, value, limit, limitIs, target }) {
  const ratio = value === null || value === undefined ? null : value / limit;
  const [op, bound] = target.split(' ');
  const pass = ratio !== null && (op === '>=' ? ratio >= Number(bound) : op === '<=' ? ratio <= Number(bound) : ratio < Number(bound));
  return { scenario, measure, value: shown(value), limit: shown(limit), limitIs, ratio: round(ratio, 3), target, pass };
}

export function formatTable(rows) {
  const head = ['scenario', 'measure', 'value', 'limit', 'limit is', 'ratio', 'target', 'result'];
  const body = rows.map((r) =>
    [r.scenario, r.measure, r.value ?? '-', r.limit, r.limitIs, r.ratio ?? '-', r.target, r.pass ? 'PASS' : 'FAIL'].map(String),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
