import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Rec, Transform } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/enrich/index.js';
import { tempDir } from '../../helpers/fs.js';
import { py } from '../serializers/helpers.js';
import { loadTransforms, runFiles, runTransform, transformOf } from './_harness.js';
import { elapse, until } from '../../helpers/wait.js';

const { cfg, make, rc } = transformOf(plugin);

afterEach(() => {
  vi.restoreAllMocks();
});

/** Lookup files written by Python's csv and json modules. */
function inventory(dir: string) {
  const rows = [
    { hostname: 'r1', site: 'paris-1', vendor: 'nokia', rack: 3 },
    { hostname: 'r2', site: 'lyon-2', vendor: 'juniper', rack: 7 },
    { hostname: '42', site: 'numeric', vendor: 'x', rack: 0 },
  ];
  py(
    `
import csv, json, sys
d = json.loads(sys.stdin.read())
rows, dir = d['rows'], d['dir']
with open(dir + '/inv.csv', 'w', newline='') as f:
    w = csv.DictWriter(f, fieldnames=['hostname', 'site', 'vendor', 'rack'])
    w.writeheader()
    for r in rows: w.writerow(r)
with open(dir + '/inv.json', 'w') as f:
    json.dump(rows, f, indent=2)
for name in ['inv.ndjson', 'inv.jsonl']:
    with open(dir + '/' + name, 'w') as f:
        for r in rows: f.write(json.dumps(r) + '\\n')
`,
    JSON.stringify({ rows, dir }),
  );
  return { csv: join(dir, 'inv.csv'), json: join(dir, 'inv.json'), ndjson: join(dir, 'inv.ndjson'), jsonl: join(dir, 'inv.jsonl') };
}

/** Rewrites a file and moves its mtime on, so a change is seen even within the same millisecond. */
function rewrite(file: string, text: string, ageS = 0) {
  writeFileSync(file, text);
  const t = new Date(Date.now() + 10_000 + ageS * 1000);
  utimesSync(file, t, t);
}

describe('transform enrich: lookup files', () => {
  it('CSV (header row): copies every column but the key by default, as text; record values match as text', () => {
    const f = inventory(tempDir());
    const t = make({ file: f.csv, key: 'hostname', field: 'host' });
    expect(t.apply({ host: 'r1', v: 1 }, rc)).toEqual({ host: 'r1', v: 1, site: 'paris-1', vendor: 'nokia', rack: '3' });
    expect(t.apply({ host: 42 }, rc)).toEqual({ host: 42, site: 'numeric', vendor: 'x', rack: '0' });
    expect(t.apply({ host: 'r3' }, rc)).toEqual({ host: 'r3' });
  });

  it('CSV with a byte order mark, CRLF line ends and quoted fields (as Excel writes it)', () => {
    const dir = tempDir();
    const file = join(dir, 'x.csv');
    py(`
import csv
with open(${JSON.stringify(file)}, 'w', newline='', encoding='utf-8-sig') as f:
    w = csv.writer(f, dialect='excel')
    w.writerow(['id', 'name'])
    w.writerow(['7', 'Paris, "Nord"'])
    w.writerow(['8', 'two\\nlines'])
`);
    const t = make({ file, key: 'id' });
    expect(t.apply({ id: 7 }, rc)).toEqual({ id: 7, name: 'Paris, "Nord"' });
    expect(t.apply({ id: '8' }, rc)).toEqual({ id: '8', name: 'two\nlines' });
  });

  it('JSON array, NDJSON and .jsonl files keep the value types; field defaults to key', () => {
    const f = inventory(tempDir());
    for (const file of [f.json, f.ndjson, f.jsonl]) {
      expect(make({ file, key: 'hostname' }).apply({ hostname: 'r2' }, rc)).toEqual({ hostname: 'r2', site: 'lyon-2', vendor: 'juniper', rack: 7 });
    }
  });

  it('fields picks columns (a column the row lacks becomes null); prefix renames them', () => {
    const f = inventory(tempDir());
    expect(make({ file: f.json, key: 'hostname', field: 'h', fields: ['site', 'nope'], prefix: 'inv_' }).apply({ h: 'r1' }, rc)).toEqual({
      h: 'r1',
      inv_site: 'paris-1',
      inv_nope: null,
    });
  });

  it('target: the copied fields go into an object field (merged into an existing object)', () => {
    const f = inventory(tempDir());
    expect(make({ file: f.json, key: 'hostname', field: 'h', target: 'inv', fields: ['site'] }).apply({ h: 'r1' }, rc)).toEqual({
      h: 'r1',
      inv: { site: 'paris-1' },
    });
    expect(make({ file: f.json, key: 'hostname', field: 'h', target: 'inv', fields: ['site'] }).apply({ h: 'r1', inv: { a: 1, site: 'old' } }, rc)).toEqual({
      h: 'r1',
      inv: { a: 1, site: 'paris-1' },
    });
    // A target that holds something else is replaced.
    expect(make({ file: f.json, key: 'hostname', field: 'h', target: 'inv', fields: ['site'] }).apply({ h: 'r1', inv: 'x' }, rc)).toEqual({
      h: 'r1',
      inv: { site: 'paris-1' },
    });
  });

  it('overwrite: true (default) replaces record fields of the same name; false keeps them (null too)', () => {
    const f = inventory(tempDir());
    const r = () => ({ hostname: 'r1', site: 'mine', vendor: null });
    expect(make({ file: f.json, key: 'hostname' }).apply(r(), rc)).toEqual({ hostname: 'r1', site: 'paris-1', vendor: 'nokia', rack: 3 });
    expect(make({ file: f.json, key: 'hostname', overwrite: false }).apply(r(), rc)).toEqual({ hostname: 'r1', site: 'mine', vendor: null, rack: 3 });
    expect(make({ file: f.json, key: 'hostname', overwrite: false, target: 't' }).apply({ hostname: 'r1', t: { site: 'mine' } }, rc)).toEqual({
      hostname: 'r1',
      t: { site: 'mine', vendor: 'nokia', rack: 3 },
    });
  });

  it('on_miss: keep (default) leaves the record unchanged, drop drops it, error throws (a missing field is a miss)', () => {
    const f = inventory(tempDir());
    expect(make({ file: f.json, key: 'hostname' }).apply({ hostname: 'zz' }, rc)).toEqual({ hostname: 'zz' });
    expect(make({ file: f.json, key: 'hostname', on_miss: 'drop' }).apply({ hostname: 'zz' }, rc)).toBeNull();
    expect(make({ file: f.json, key: 'hostname', on_miss: 'drop' }).apply({ other: 1 }, rc)).toBeNull();
    expect(() => make({ file: f.json, key: 'hostname', on_miss: 'error' }).apply({ hostname: 'zz' }, rc)).toThrow('no lookup row for hostname = "zz"');
    expect(() => make({ file: f.json, key: 'hostname', field: 'h', on_miss: 'error' }).apply({ h: null }, rc)).toThrow('no lookup row for h = null');
  });

  it('rows without the key are skipped; a file where no row has the key column fails', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.json'), JSON.stringify([{ id: 1, x: 'a' }, { x: 'no id' }, { id: null, x: 'null id' }]));
    expect(make({ file: join(dir, 'a.json'), key: 'id' }).apply({ id: 1 }, rc)).toEqual({ id: 1, x: 'a' });
    writeFileSync(join(dir, 'b.csv'), 'a,b\n1,2\n');
    expect(() => make({ file: join(dir, 'b.csv'), key: 'id' })).toThrow(`cannot read lookup file ${join(dir, 'b.csv')}: the file has no column 'id'`);
    writeFileSync(join(dir, 'c.json'), '{"id": 1}');
    expect(() => make({ file: join(dir, 'c.json'), key: 'id' })).toThrow(`cannot read lookup file ${join(dir, 'c.json')}: expected a JSON array of objects`);
    writeFileSync(join(dir, 'empty.csv'), '');
    expect(make({ file: join(dir, 'empty.csv'), key: 'id' }).apply({ id: 1 }, rc)).toEqual({ id: 1 });
  });

  it('a missing file fails at creation, naming the file', () => {
    const missing = join(tempDir(), 'nope.csv');
    expect(() => make({ file: missing, key: 'k' })).toThrow(`cannot read lookup file ${missing}: ENOENT`);
  });

  it('check_seconds 0: a changed file is re-read at the next record', () => {
    const dir = tempDir();
    const file = join(dir, 'l.csv');
    writeFileSync(file, 'k,v\na,1\n');
    const t = make({ file, key: 'k', check_seconds: 0 });
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: '1' });
    rewrite(file, 'k,v\na,2\nb,3\n');
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: '2' });
    expect(t.apply({ k: 'b' }, rc)).toEqual({ k: 'b', v: '3' });
    // Same size, new mtime: still seen.
    rewrite(file, 'k,v\na,9\nb,8\n', 5);
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: '9' });
  });

  it('check_seconds (default 5): the file is looked at no more often than that', () => {
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const dir = tempDir();
    const file = join(dir, 'l.json');
    writeFileSync(file, '[{"k": "a", "v": 1}]');
    const t = make({ file, key: 'k' });
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: 1 });
    rewrite(file, '[{"k": "a", "v": 2}]');
    now += 4_000;
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: 1 });
    now += 5_001;
    expect(t.apply({ k: 'a' }, rc)).toEqual({ k: 'a', v: 2 });
  });

  it('a half-written (unparseable) or vanished file keeps the previous table, and the next good version is read', () => {
    const dir = tempDir();
    for (const [name, good, half, next] of [
      ['l.json', '[{"k": "a", "v": 1}]', '[{"k": "a", "v": 2}, {"k": "b"', '[{"k": "a", "v": 3}]'],
      ['l.ndjson', '{"k": "a", "v": 1}\n', '{"k": "a", "v": 2}\n{"k": "b", "v"', '{"k": "a", "v": 3}\n'],
      ['l.csv', 'k,v\na,1\n', 'k,v\na,2\nb', 'k,v\na,3\n'],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, good);
      const t = make({ file, key: 'k', check_seconds: 0 });
      const v = () => (t.apply({ k: 'a' }, rc) as Rec).v;
      expect([name, v()]).toEqual([name, name.endsWith('.csv') ? '1' : 1]);
      rewrite(file, half);
      expect([name, v()]).toEqual([name, name.endsWith('.csv') ? '1' : 1]);
      rmSync(file);
      expect([name, v()]).toEqual([name, name.endsWith('.csv') ? '1' : 1]);
      rewrite(file, next, 20);
      expect([name, v()]).toEqual([name, name.endsWith('.csv') ? '3' : 3]);
    }
  });

  it('lint: exactly one of file or sql; in sql exactly one of url or path; a URL with an unsupported scheme', () => {
    const lint = (c: object) => plugin.lint!(cfg(c));
    expect(lint({ key: 'k' })).toEqual([{ path: 'file', message: 'set exactly one of file or sql' }]);
    expect(lint({ key: 'k', file: 'a.csv', sql: { path: 'x.db', query: 'select 1' } })).toEqual([{ path: 'file', message: 'set exactly one of file or sql' }]);
    expect(lint({ key: 'k', sql: { query: 'select 1' } })).toEqual([{ path: 'sql', message: 'set exactly one of url or path' }]);
    expect(lint({ key: 'k', sql: { url: 'postgresql://h/db', path: 'x.db', query: 'select 1' } })).toEqual([
      { path: 'sql', message: 'set exactly one of url or path' },
    ]);
    expect(lint({ key: 'k', sql: { url: 'postgresql://h/db', query: 'select 1' } })).toEqual([]);
    expect(lint({ key: 'k', file: 'a.csv' })).toEqual([]);
    expect(lint({ key: 'k', file: '/etc/svc/Inventory.JSONL' })).toEqual([]);
    expect(lint({ key: 'k', file: '/etc/svc/inventory.txt' })).toEqual([
      { path: 'file', message: "cannot tell the format of '/etc/svc/inventory.txt' from its extension: use .csv, .json, .ndjson or .jsonl" },
    ]);
  });

  it('a bad URL is a validation error with the YAML path', () => {
    expect(loadTransforms(`{ type: enrich, key: k, sql: { url: 'mongodb://db/x', query: 'select 1' } }`).diagnostics).toEqual([
      'pipeline.transforms[0].sql.url: unsupported scheme "mongodb://"; accepted schemes are postgresql://, postgres://, mysql:// and mariadb:// (or set sql.path for a SQLite file) (line 9) [CFG_INVALID]',
    ]);
    expect(loadTransforms(`{ type: enrich, key: k, sql: { url: 'mysql://u@h:3306', query: 'select 1' } }`).diagnostics).toEqual([
      expect.stringMatching(/^pipeline\.transforms\[0\]\.sql\.url: .*names no database/),
    ]);
    expect(loadTransforms(`{ type: enrich, key: k, sql: { url: 'db.sqlite', query: 'select 1' } }`).diagnostics).toEqual([
      expect.stringMatching(/^pipeline\.transforms\[0\]\.sql\.url: unsupported value/),
    ]);
    expect(loadTransforms(`{ type: enrich, key: k }`).diagnostics).toEqual([
      'pipeline.transforms[0].file: set exactly one of file or sql (line 9) [CFG_INVALID]',
    ]);
  });

  it('schema: defaults (prefix "", overwrite true, on_miss keep, check_seconds 5, refresh_seconds 300); refresh_seconds >= 1', () => {
    expect(cfg({ file: 'a.csv', key: 'k' })).toEqual({ file: 'a.csv', key: 'k', prefix: '', overwrite: true, on_miss: 'keep', check_seconds: 5 });
    expect((cfg({ sql: { path: 'a.db', query: 'q' }, key: 'k' }) as { sql: object }).sql).toEqual({ path: 'a.db', query: 'q', refresh_seconds: 300 });
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({ sql: { path: 'a.db', query: 'q', refresh_seconds: 0.5 }, key: 'k' })).toBe(false);
    expect(ok({ file: 'a.csv' })).toBe(false);
    expect(ok({ file: 'a.csv', key: 'k', on_miss: 'skip' })).toBe(false);
    expect(ok({ file: 'a.csv', key: 'k', check_seconds: -1 })).toBe(false);
    expect(ok({ file: 'a.csv', key: 'k', fields: [] })).toBe(false);
  });
});

describe('transform enrich: in the engine', () => {
  it('on_miss error under on_error dlq: the record is dead-lettered with stage transform; others enriched', async () => {
    const f = inventory(tempDir());
    const { record, out, dlq } = await runTransform(
      [{ host: 'r1' }, { host: 'zz' }, { host: 'r2' }],
      `{ type: enrich, file: ${JSON.stringify(f.csv)}, key: hostname, field: host, fields: [site], on_miss: error }`,
      {
        onError: 'dlq',
        dlq: true,
      },
    );
    expect(out).toEqual([
      { host: 'r1', site: 'paris-1' },
      { host: 'r2', site: 'lyon-2' },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(dlq).toEqual([
      expect.objectContaining({ _stage: 'transform', _error: 'transforms[0] (enrich): no lookup row for host = "zz"', record: { host: 'zz' } }),
    ]);
  });

  it('on_miss drop: dropped records are not skipped', async () => {
    const f = inventory(tempDir());
    const { record, out } = await runTransform(
      [{ hostname: 'r1' }, { hostname: 'zz' }],
      `{ type: enrich, file: ${JSON.stringify(f.ndjson)}, key: hostname, fields: [rack], on_miss: drop }`,
    );
    expect(out).toEqual([{ hostname: 'r1', rack: 3 }]);
    expect(record).toMatchObject({ status: 'success', records_out: 1, records_skipped: 0, errors: [] });
  });

  it('a missing lookup file fails the run with a message naming it; the input stays in place', async () => {
    const missing = join(tempDir(), 'inventory.csv');
    const { record, dirs } = await runTransform([{ host: 'r1' }], `{ type: enrich, file: ${JSON.stringify(missing)}, key: hostname }`);
    expect(record.status).toBe('failed');
    expect(record.error).toContain(`cannot read lookup file ${missing}: ENOENT`);
    expect(existsSync(join(dirs.input, 'in.ndjson'))).toBe(true);
  });

  it('thread_workers 2: a global enrich on worker threads, and a sink-level one', async () => {
    const f = inventory(tempDir());
    const rows = Array.from({ length: 300 }, (_, i) => ({ i, host: ['r1', 'r2', 'x'][i % 3] }));
    const site = (h: string) => (h === 'r1' ? 'paris-1' : 'lyon-2');
    const g = await runTransform(rows, `{ type: enrich, file: ${JSON.stringify(f.json)}, key: hostname, field: host, fields: [site] }`, {
      extra: '  thread_workers: 2',
    });
    expect(g.out).toEqual(rows.map((r) => (r.host === 'x' ? r : { ...r, site: site(r.host) })));
    const s = await runFiles({ 'a.ndjson': rows }, '{ type: rename, fields: { host: hostname } }', {
      extra: '  thread_workers: 2',
      chunkBytes: 1024,
      sinks: `    - { type: local, path: __OUT__, filename_template: out.ndjson, transforms: [{ type: enrich, file: ${JSON.stringify(f.csv)}, key: hostname, fields: [vendor], on_miss: drop }] }`,
    });
    expect(s.out).toEqual(rows.filter((r) => r.host !== 'x').map((r) => ({ i: r.i, hostname: r.host, vendor: r.host === 'r1' ? 'nokia' : 'juniper' })));
    expect(s.record).toMatchObject({ status: 'success', records_in: 300, records_out: 200, records_skipped: 0 });
  });
});

// ---- SQL ------------------------------------------------------------------------------------------

const PG_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const psql = (sqlText: string) => execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', PG_URL, '-c', sqlText], { encoding: 'utf8' });

async function opened(c: object): Promise<Transform> {
  const t = make(c);
  await t.open!();
  return t;
}

describe('transform enrich: SQL (PostgreSQL)', () => {
  const table = `svc_enrich_${randomBytes(4).toString('hex')}`;
  beforeAll(() => {
    psql(
      `CREATE TABLE ${table} (cell_id integer PRIMARY KEY, cell_name text, region text, azimuth double precision); INSERT INTO ${table} VALUES (101, 'PAR-N', 'idf', 120.5), (102, 'PAR-S', 'idf', NULL), (201, 'LYO-1', 'ara', 0)`,
    );
  });
  afterAll(() => {
    psql(`DROP TABLE IF EXISTS ${table}`);
  });

  it('the query result is the table: int keys match record text or numbers; nulls copied as null', async () => {
    const t = await opened({ sql: { url: PG_URL, query: `SELECT cell_id, cell_name, region, azimuth FROM ${table}` }, key: 'cell_id', target: 'cell' });
    try {
      expect(t.apply({ cell_id: '101' }, rc)).toEqual({ cell_id: '101', cell: { cell_name: 'PAR-N', region: 'idf', azimuth: 120.5 } });
      expect(t.apply({ cell_id: 102 }, rc)).toEqual({ cell_id: 102, cell: { cell_name: 'PAR-S', region: 'idf', azimuth: null } });
      expect(t.apply({ cell_id: 999 }, rc)).toEqual({ cell_id: 999 });
    } finally {
      await t.close!();
    }
  });

  it('refresh_seconds: the table is re-read in the background; the old one serves until then', async () => {
    const t = await opened({ sql: { url: PG_URL, query: `SELECT cell_id AS id, cell_name FROM ${table}`, refresh_seconds: 1 }, key: 'id', field: 'cell' });
    try {
      expect(t.apply({ cell: 201 }, rc)).toEqual({ cell: 201, cell_name: 'LYO-1' });
      psql(`UPDATE ${table} SET cell_name = 'LYO-renamed' WHERE cell_id = 201; INSERT INTO ${table} VALUES (301, 'MRS-1', 'paca', 1)`);
      expect(t.apply({ cell: 201 }, rc)).toEqual({ cell: 201, cell_name: 'LYO-1' });
      await until(() => (t.apply({ cell: 201 }, rc) as Rec).cell_name === 'LYO-renamed', 3000, 'the refresh');
      expect(t.apply({ cell: 201 }, rc)).toEqual({ cell: 201, cell_name: 'LYO-renamed' });
      expect(t.apply({ cell: 301 }, rc)).toEqual({ cell: 301, cell_name: 'MRS-1' });
    } finally {
      await t.close!();
      psql(`UPDATE ${table} SET cell_name = 'LYO-1' WHERE cell_id = 201; DELETE FROM ${table} WHERE cell_id = 301`);
    }
  });

  it('a failing refresh keeps the previous table', async () => {
    const other = `${table}_tmp`;
    psql(`CREATE TABLE ${other} AS SELECT * FROM ${table}`);
    const t = await opened({ sql: { url: PG_URL, query: `SELECT cell_id, region FROM ${other}`, refresh_seconds: 1 }, key: 'cell_id' });
    try {
      psql(`DROP TABLE ${other}`);
      await elapse(1400); // a refresh fails
      expect(t.apply({ cell_id: 101 }, rc)).toEqual({ cell_id: 101, region: 'idf' });
    } finally {
      await t.close!();
      psql(`DROP TABLE IF EXISTS ${other}`);
    }
  });

  it('in the engine (thread_workers 2): opened once on the main thread, closed at the end', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ i, cell_id: [101, 102, 201, 5][i % 4] }));
    const { record, out } = await runTransform(
      rows,
      `{ type: enrich, sql: { url: ${JSON.stringify(PG_URL)}, query: "SELECT cell_id, cell_name FROM ${table}" }, key: cell_id, on_miss: drop }`,
      {
        extra: '  thread_workers: 2',
      },
    );
    const names: Record<number, string> = { 101: 'PAR-N', 102: 'PAR-S', 201: 'LYO-1' };
    expect(out).toEqual(rows.filter((r) => names[r.cell_id]).map((r) => ({ ...r, cell_name: names[r.cell_id] })));
    expect(record).toMatchObject({ status: 'success', records_in: 50, records_out: 38, records_skipped: 0 });
  });

  it('a query that fails at start fails the run', async () => {
    const { record } = await runTransform(
      [{ cell_id: 1 }],
      `{ type: enrich, sql: { url: ${JSON.stringify(PG_URL)}, query: "SELECT * FROM ${table}_missing" }, key: cell_id }`,
    );
    expect(record.status).toBe('failed');
    expect(record.error).toMatch(/does not exist/);
  });
});

describe('transform enrich: SQL (SQLite file)', () => {
  function sqliteFile(dir: string) {
    const file = join(dir, 'lookup.db');
    py(
      `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1] if len(sys.argv) > 1 else ${JSON.stringify(file)})
c.execute("CREATE TABLE vendors (oui TEXT PRIMARY KEY, vendor TEXT, since INTEGER)")
c.executemany("INSERT INTO vendors VALUES (?, ?, ?)", [("00:1A:2B", "Nokia", 1998), ("3C:4D:5E", "Ericsson", None)])
c.commit()
c.close()
`,
    );
    return file;
  }
  const journalMode = (file: string) =>
    py(`import sqlite3; print(sqlite3.connect(${JSON.stringify(file)}).execute('pragma journal_mode').fetchone()[0])`)
      .toString()
      .trim();

  it('reads the table from a SQLite file (path), read-only: the file is left as it was', async () => {
    const dir = tempDir();
    const file = sqliteFile(dir);
    const before = readFileSync(file);
    const t = await opened({ sql: { path: file, query: 'SELECT oui, vendor, since FROM vendors' }, key: 'oui', prefix: 'mac_' });
    try {
      expect(t.apply({ oui: '00:1A:2B' }, rc)).toEqual({ oui: '00:1A:2B', mac_vendor: 'Nokia', mac_since: 1998 });
      expect(t.apply({ oui: '3C:4D:5E' }, rc)).toEqual({ oui: '3C:4D:5E', mac_vendor: 'Ericsson', mac_since: null });
    } finally {
      await t.close!();
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(journalMode(file)).toBe('delete');
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('refresh_seconds re-reads the SQLite file', async () => {
    const file = sqliteFile(tempDir());
    const t = await opened({ sql: { path: file, query: 'SELECT oui, vendor FROM vendors', refresh_seconds: 1 }, key: 'oui' });
    try {
      py(`import sqlite3; c = sqlite3.connect(${JSON.stringify(file)}); c.execute("UPDATE vendors SET vendor = 'Nokia Networks'"); c.commit()`);
      await until(() => (t.apply({ oui: '00:1A:2B' }, rc) as Rec).vendor === 'Nokia Networks', 3000, 'the refresh');
      expect(t.apply({ oui: '00:1A:2B' }, rc)).toEqual({ oui: '00:1A:2B', vendor: 'Nokia Networks' });
    } finally {
      await t.close!();
    }
  });

  it('a missing SQLite file fails at open and is not created', async () => {
    const file = join(tempDir(), 'sub', 'none.db');
    const t = make({ sql: { path: file, query: 'SELECT 1' }, key: 'k' });
    await expect(t.open!()).rejects.toThrow(/unable to open database file|does not exist/);
    await t.close!();
    expect(existsSync(file)).toBe(false);
  });

  it('in the engine with a SQLite file', async () => {
    const file = sqliteFile(tempDir());
    const { record, out } = await runTransform(
      [{ mac: '00:1A:2B:00:00:01', oui: '00:1A:2B' }, { oui: 'FF:FF:FF' }],
      `{ type: enrich, sql: { path: ${JSON.stringify(file)}, query: "SELECT oui, vendor FROM vendors" }, key: oui }`,
    );
    expect(out).toEqual([{ mac: '00:1A:2B:00:00:01', oui: '00:1A:2B', vendor: 'Nokia' }, { oui: 'FF:FF:FF' }]);
    expect(record).toMatchObject({ status: 'success', records_out: 2 });
  });
});
