// better-sqlite3 against Node's own node:sqlite (issue 35: would node:sqlite remove the native build?),
// on the same work in one run: N inserts through one prepared statement in one transaction, N point
// selects by primary key, and a scan of the whole table. Each figure is the best of ROUNDS rounds,
// in a file database (journal_mode WAL, as the store opens it). Prints one JSON line per engine and
// the ratios (node:sqlite time / better-sqlite3 time). Needs Node 22.13 or later (node:sqlite unflagged):
//   node scripts/supported-node.mjs --addons node scripts/sqlite-engines.mjs [N]
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const N = Number(process.argv[2] ?? 50000);
const ROUNDS = 5;
const require = createRequire(import.meta.url);
const BetterSqlite3 = require('better-sqlite3');
const { DatabaseSync } = await import('node:sqlite');

const engines = {
  'better-sqlite3': (file) => {
    const db = new BetterSqlite3(file);
    return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
  },
  'node:sqlite': (file) => {
    const db = new DatabaseSync(file);
    return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
  },
};

function round(open) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-'));
  const db = open(join(dir, 'bench.db'));
  try {
    db.exec(
      'PRAGMA journal_mode = WAL; CREATE TABLE runs (id INTEGER PRIMARY KEY, pipeline TEXT NOT NULL, status TEXT NOT NULL, records INTEGER NOT NULL, detail TEXT)',
    );
    const insert = db.prepare('INSERT INTO runs (id, pipeline, status, records, detail) VALUES (?, ?, ?, ?, ?)');
    let t = performance.now();
    db.exec('BEGIN');
    for (let i = 0; i < N; i++) insert.run(i, `pipeline-${i % 100}`, i % 7 === 0 ? 'failed' : 'success', i * 3, `{"errors":[],"n":${i}}`);
    db.exec('COMMIT');
    const inserted = performance.now() - t;
    const select = db.prepare('SELECT id, pipeline, status, records, detail FROM runs WHERE id = ?');
    t = performance.now();
    let sum = 0;
    for (let i = 0; i < N; i++) sum += select.get((i * 7919) % N).records;
    const selected = performance.now() - t;
    const scan = db.prepare('SELECT pipeline, status, records FROM runs');
    t = performance.now();
    let rows = 0;
    for (const row of scan.all()) rows += row.records > 0 ? 1 : 0;
    const scanned = performance.now() - t;
    if (sum <= 0 || rows !== N - 1) throw new Error('wrong results');
    return { inserted, selected, scanned };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = {};
for (let r = 0; r < ROUNDS; r++) {
  // Alternate the engines, so a burst of load elsewhere hits both.
  for (const [name, open] of Object.entries(engines)) {
    const x = round(open);
    const best = (results[name] ??= { inserted: Infinity, selected: Infinity, scanned: Infinity });
    for (const k of Object.keys(best)) best[k] = Math.min(best[k], x[k]);
  }
}
for (const [name, best] of Object.entries(results)) {
  const perSec = (ms) => Math.round(N / (ms / 1000));
  console.log(
    JSON.stringify({
      engine: name,
      node: process.version,
      n: N,
      insert_per_s: perSec(best.inserted),
      select_per_s: perSec(best.selected),
      scan_rows_per_s: perSec(best.scanned),
    }),
  );
}
const a = results['better-sqlite3'];
const b = results['node:sqlite'];
console.log(
  JSON.stringify({
    ratio_node_sqlite_time_over_better_sqlite3: {
      insert: +(b.inserted / a.inserted).toFixed(2),
      select: +(b.selected / a.selected).toFixed(2),
      scan: +(b.scanned / a.scanned).toFixed(2),
    },
  }),
);
