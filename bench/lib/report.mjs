// The bench's verdicts: every figure beside the limit it is measured
// against (taken in the same run), their ratio, the target and pass/fail;
// and the table printed at the end of a run.
import { medianBy, round } from './common.mjs';

/** How a figure taken in back-to-back pairs was chosen (nothing for one pair, or a run from before pairs). */
function pairsNote(pairs, before) {
  if (!pairs || pairs.length < 2) return '';
  return `${before}median of ${pairs.length} back-to-back pairs, ratios ${pairs.map((p) => round(p.ratio, 3)).join(', ')}`;
}

/** Table rows from the raw results of a run (scenarios not run give no rows). */
export function evaluate(results, params) {
  const rows = [];
  const add = (row) => {
    const ratio = row.value === null || row.limit === null || row.limit === 0 ? null : row.value / row.limit;
    if (row.atLeast === undefined && row.below === undefined) {
      // A reference figure (what this machine allows), not a target.
      rows.push({ ...row, ratio: round(ratio, 3), pass: null, target: '-' });
      return;
    }
    const pass =
      ratio !== null &&
      (row.atLeast !== undefined ? ratio >= row.atLeast : ratio < row.below || (row.orEqual === true && ratio === row.below));
    rows.push({
      ...row,
      ratio: round(ratio, 3),
      pass,
      target: row.atLeast !== undefined ? `>= ${row.atLeast}` : `${row.orEqual ? '<=' : '<'} ${row.below}`,
    });
  };
  const k = (n) => (n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));

  const ingest = results.ingest;
  if (ingest) {
    add({
      key: 'ingestRate',
      scenario: 'ingest',
      measure: `rows/s, receive ${k(params.ingestRows)}-row file (parse+validate+persist+ack${pairsNote(ingest.pairs, '; ')})`,
      value: round(ingest.intake.rowsPerSecond, 0),
      limit: round(ingest.baseline.rowsPerSecond, 0),
      limitWhat: 'csv-parse alone, rows/s',
      atLeast: 0.3,
    });
    add({
      key: 'ingestAck',
      scenario: 'ingest',
      measure: `seconds from taking the ${k(params.ingestRows)}-row file to its acknowledgement${ingest.pairs?.length > 1 ? `, longest of ${ingest.pairs.length} runs` : ''}`,
      value: ingest.ackMs === undefined ? null : round(ingest.ackMs / 1000, 1),
      limit: 30,
      limitWhat: 'budget, s',
      below: 1,
    });
    add({
      key: 'ingestRss',
      scenario: 'ingest',
      measure: `peak RSS MB of the ingesting process (${k(params.ingestRows)} rows${ingest.pairs?.length > 1 ? `, highest of ${ingest.pairs.length} runs` : ''})`,
      value: ingest.peakRssMb ?? ingest.intake.peakRssMb,
      limit: 256,
      limitWhat: 'budget, MB',
      below: 1,
    });
  }
  const submit = results.submit;
  // The measured creates follow a warm-up batch (bench/scenarios/submit.mjs); its own rate is the cold start.
  const afterWarmup = (d) =>
    d.warmup ? `, after ${d.warmup.created} warm-up creates; cold start ${Math.round(d.warmup.perSecond)}/s` : '';
  if (submit?.daemonLatency) {
    const d = submit.daemonLatency;
    add({
      key: 'submitLatency',
      scenario: 'submit',
      measure: `creates/s, L=${params.latencyMs} ms, C=${params.concurrency} (${d.created} of ${d.n} in ${round(d.ms / 1000, 1)} s${afterWarmup(d)})`,
      value: round(d.perSecond, 1),
      limit: round((params.concurrency / params.latencyMs) * 1000, 0),
      limitWhat: 'C / L, creates/s',
      atLeast: 0.9,
    });
  }
  if (submit?.loopLatency) {
    add({
      key: 'submitLoopLatency',
      scenario: 'submit',
      measure: `reference: minimal create loop (no DB), L=${params.latencyMs} ms, C=${params.concurrency}`,
      value: round(submit.loopLatency.perSecond, 1),
      limit: round((params.concurrency / params.latencyMs) * 1000, 0),
      limitWhat: 'C / L, creates/s',
    });
  }
  if (submit?.daemonZero && submit.loop) {
    const d = submit.daemonZero;
    const ofPairs = pairsNote(submit.zeroPairs, '; ');
    add({
      key: 'submitZero',
      scenario: 'submit',
      measure: `creates/s, L=0, C=${params.concurrency} (${d.created} of ${d.n} in ${round(d.ms / 1000, 1)} s${afterWarmup(d)}${ofPairs})`,
      value: round(d.perSecond, 1),
      limit: round(submit.loop.perSecond, 1),
      limitWhat: 'minimal signed-create loop, no DB, creates/s',
      atLeast: 0.7,
    });
  }
  const atOneSpeed = (submit?.zeroPairs ?? []).filter((p) => typeof p.atOneSpeed === 'number');
  if (atOneSpeed.length > 0) {
    // The pair with the median ratio once the machine's speed is taken out (bench/run.mjs atOneSpeed).
    const m = medianBy(atOneSpeed, (p) => p.atOneSpeed);
    add({
      key: 'submitZeroAtOneSpeed',
      scenario: 'submit',
      measure:
        `reference: the same at one machine speed (the daemon's rate x the sandbox's CPU per create in its half over in ` +
        `the loop's; median of ${atOneSpeed.length}, ratios ${atOneSpeed.map((p) => round(p.atOneSpeed, 3)).join(', ')})`,
      // The daemon's rate at the loop's machine speed: the pair's own figure, over the loop's rate.
      value: round(m.atOneSpeed * m.loop.perSecond, 1),
      limit: round(m.loop.perSecond, 1),
      limitWhat: 'minimal signed-create loop, no DB, creates/s',
    });
  }
  if (submit?.daemonZero?.daemonCpuMsPerCreate && submit.loop?.clientCpuMsPerCreate) {
    add({
      key: 'submitCpu',
      scenario: 'submit',
      measure: 'reference: CPU ms per create, daemon process at L=0 (less sensitive to other load)',
      value: round(submit.daemonZero.daemonCpuMsPerCreate, 2),
      limit: round(submit.loop.clientCpuMsPerCreate, 2),
      limitWhat: 'CPU ms per create of the minimal loop',
    });
  }
  const follow = results.follow;
  if (follow) {
    add({
      key: 'followCalls',
      scenario: 'follow',
      measure: `query calls, first poll cycle over ${k(follow.rows)} PENDING (took ${round(follow.firstCycle.ms / 1000, 1)} s)`,
      value: follow.firstCycle.calls,
      limit: follow.firstCycle.minimumCalls,
      limitWhat: `ceil(pending / ${follow.queryMaxIds})`,
      below: 1.05,
      orEqual: true,
    });
    if (follow.queryLoop) {
      add({
        key: 'followQueryLoop',
        scenario: 'follow',
        measure: `reference: the first cycle's calls as a bare query loop (no DB, one at a time), ms`,
        value: round(follow.firstCycle.minimumCalls * follow.queryLoop.sequentialMsPerCall, 0),
        limit: follow.firstCycle.ms,
        limitWhat: 'first cycle of the daemon, ms',
      });
    }
    add({
      key: 'followResult',
      scenario: 'follow',
      measure: `ms from last settlement to result file (${k(follow.rows)} payouts)${follow.timedOut ? `; none within ${follow.maxSeconds} s` : ''}`,
      value: follow.resultFileMs,
      limit: follow.intervalMs,
      limitWhat: `poll interval in effect (after ${follow.pollsBeforeSettlement} polls), ms`,
      below: 1,
      orEqual: true,
    });
  }
  const restart = results.restart;
  if (restart?.restart) {
    add({
      key: 'restart',
      scenario: 'restart',
      measure: `ms from process start to first call (resumed), ${k(restart.rows)} rows, ${k(restart.unfinished)} unfinished`,
      value: round(restart.restart.firstCallMs, 0),
      limit: 5000,
      limitWhat: 'budget, ms',
      below: 1,
    });
  }
  if (restart?.status) {
    add({
      key: 'status',
      scenario: 'status',
      measure: `ms for \`payoutd status\` on that database (median of 3)`,
      value: round(restart.status.medianMs, 0),
      limit: 1000,
      limitWhat: 'budget, ms',
      below: 1,
    });
  }
  return rows;
}

const verdict = (r) => (r.pass === null ? 'info' : r.pass ? 'PASS' : 'FAIL');

export function formatTable(rows) {
  const head = ['scenario', 'measure', 'value', 'limit', 'limit is', 'ratio', 'target', 'result'];
  const body = rows.map((r) => [
    r.scenario,
    r.measure,
    String(r.value ?? '-'),
    String(r.limit ?? '-'),
    r.limitWhat,
    String(r.ratio ?? '-'),
    r.target,
    verdict(r),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** The table as Markdown (docs/performance.md). */
export function markdownTable(rows) {
  const head = '| scenario | measure | value | limit | limit is | ratio | target | result |';
  const sep = '|---|---|---:|---:|---|---:|---|---|';
  const body = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.measure} | ${r.value ?? '-'} | ${r.limit ?? '-'} | ${r.limitWhat} | ${r.ratio ?? '-'} | ${r.target} | ${verdict(r)} |`,
  );
  return [head, sep, ...body].join('\n');
}
