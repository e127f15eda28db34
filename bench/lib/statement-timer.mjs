// Times every better-sqlite3 statement by its SQL shape (placeholder lists folded), for finding which
// statements a scenario's time goes to. Preloaded into every process of a bench run:
//
//   NODE_OPTIONS="--import $PWD/bench/lib/statement-timer.mjs" STATEMENT_TIMES=/tmp/st \
//     node bench/run.mjs --only submit --zero-pairs 1 --latency 0
//
// Each process that ran a statement writes STATEMENT_TIMES/<pid>.json on exit: per shape, runs, total ms,
// us per run, the process's CPU ms over those runs (less than the total: the statement waited, on the disk
// say) and the longest run in us, largest total first. A COMMIT is listed under the first statement of its transaction, so a
// claim's commit and an answer's are told apart. The timing wraps each run (binding included), so it
// reads a little over SQLite's own time; compare builds with it, not with other tools.
// CommonJS loads go through Module._load, knex's require of the driver among them; the patch is made on
// the driver's prototype, so statements prepared by any importer are timed.
import Module from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const out = process.env.STATEMENT_TIMES;
const times = new Map();
let firstOfTransaction = null;

function shapeOf(sql) {
  return sql
    .replace(/\(\?(,\s*\?)*\)(,\s*\(\?(,\s*\?)*\))*/g, '(?…)')
    .replace(/\s+/g, ' ')
    .slice(0, 160);
}

function wrap(statement, shape) {
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = statement[method];
    statement[method] = function timed(...args) {
      let key = shape;
      if (shape.startsWith('BEGIN')) firstOfTransaction = null;
      else if (shape.startsWith('COMMIT')) key = `${shape} (transaction of: ${(firstOfTransaction ?? '').slice(0, 60)})`;
      else firstOfTransaction ??= shape;
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        const us = Number(process.hrtime.bigint() - started) / 1000;
        const used = process.cpuUsage(cpu);
        const t = times.get(key) ?? { runs: 0, us: 0, cpuUs: 0, maxUs: 0 };
        t.runs += 1;
        t.us += us;
        t.cpuUs += used.user + used.system;
        t.maxUs = Math.max(t.maxUs, us);
        times.set(key, t);
      }
    };
  }
  return statement;
}

let patched = false;
const load = Module._load;
Module._load = function loadAndPatch(request, ...rest) {
  const loaded = load.call(this, request, ...rest);
  if (!patched && /better-sqlite3/.test(request) && typeof loaded === 'function' && loaded.prototype?.prepare) {
    patched = true;
    const prepare = loaded.prototype.prepare;
    loaded.prototype.prepare = function prepareTimed(sql, ...more) {
      return wrap(prepare.call(this, sql, ...more), shapeOf(sql));
    };
  }
  return loaded;
};

process.on('exit', () => {
  if (!out || times.size === 0) return;
  fs.mkdirSync(out, { recursive: true });
  const rows = [...times]
    .map(([sql, t]) => ({
      sql,
      runs: t.runs,
      ms: +(t.us / 1000).toFixed(1),
      usPerRun: +(t.us / t.runs).toFixed(1),
      // The process's CPU over the same spans (any thread's; the daemon's others are mostly idle): the rest is waiting, on the disk say.
      cpuMs: +(t.cpuUs / 1000).toFixed(1),
      maxUs: Math.round(t.maxUs),
    }))
    .sort((a, b) => b.ms - a.ms);
  fs.writeFileSync(path.join(out, `${process.pid}.json`), `${JSON.stringify(rows, null, 1)}\n`);
});
