// The clickhouse connector: the shared conformance suite against a private clickhouse-server 18.16
// (peers/clickhouse.ts), then what it does not cover: the port rules, query parameters (the
// inlined fallback this server needs, its escaping, arrays and identifiers), chunk_size, the JSON
// shape of 64-bit integers, the timeouts, TLS, the native-port hint, and the sink's per-record
// refusals, permanent failures, defaults and `db.table`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponent } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { httpPort, inlineParams, placeholders } from '../../src/plugins/connectors/clickhouse/client.js';
import { tempDir } from '../helpers/fs.js';
import { freePort } from '../helpers/net.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { clickhouseFixture, clickhouseServer, SVC_PASSWORD, type ClickhouseServer } from './peers/clickhouse.js';

conformance(clickhouseFixture);

let server: ClickhouseServer;
beforeAll(async () => {
  server = await clickhouseServer();
  await server.exec("CREATE TABLE people (id UInt32, name String, score Float64, big UInt64, note String DEFAULT 'none') ENGINE = MergeTree ORDER BY id");
  await server.exec('CREATE TABLE numbers (n UInt32) ENGINE = MergeTree ORDER BY n');
  await server.exec('INSERT INTO numbers SELECT toUInt32(number) FROM system.numbers LIMIT 2500');
  await server.exec('CREATE DATABASE other');
}, 60_000);
afterAll(async () => {
  await server?.stop();
}, 30_000);

const conn = (): Cfg => ({ type: 'clickhouse', host: server.host, http_port: server.httpPort });

/** A manual run from a clickhouse source into NDJSON files; `extra` adds pipeline fields. */
async function read(source: Cfg, extra: Cfg = {}) {
  const out = tempDir('svc-ch-out-');
  const rec = await runPipeline(
    loadPipeline({
      name: 'ch-read',
      schedule: { type: 'manual' },
      source: { ...conn(), ...source },
      serializer_out: { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
      ...extra,
    }),
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  return { rec, records: outputRecords(out) };
}

/** A manual run of `records` into a clickhouse sink, with a local DLQ; returns the run and the DLQ envelopes. */
async function write(sink: Cfg, records: Rec[], extra: Cfg = {}) {
  const dir = tempDir('svc-ch-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlq = join(dir, 'dlq');
  const rec = await runPipeline(
    loadPipeline({
      name: 'ch-write',
      schedule: { type: 'manual' },
      source: { type: 'local', path: join(dir, 'in') },
      serializer_in: { type: 'ndjson' },
      sinks: [{ ...conn(), ...sink }],
      on_error: 'dlq',
      dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson', serializer_out: { type: 'ndjson' } },
      ...extra,
    }),
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  return { rec, dead: outputRecords(dlq) };
}

const lintOf = (role: 'source' | 'sink', cfg: Cfg) => loadComponent(role, cfg, { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);

describe('clickhouse: the port', () => {
  it('maps the native-protocol defaults to the HTTP ones; any other port and http_port are used as they are', () => {
    expect(httpPort({ port: 9000, secure: false })).toBe(8123);
    expect(httpPort({ port: 9000, secure: true })).toBe(8443);
    expect(httpPort({ port: 9440, secure: true })).toBe(8443);
    expect(httpPort({ port: 18123, secure: false })).toBe(18123);
    expect(httpPort({ port: 9000, http_port: 9000, secure: false })).toBe(9000);
  });

  it('lint: 9440 without secure, and port beside http_port', () => {
    expect(lintOf('sink', { type: 'clickhouse', port: 9440, table: 't' })).toEqual([
      "secure: port 9440 is ClickHouse's TLS port: set secure: true (the connector then uses HTTPS on 8443)",
    ]);
    expect(lintOf('sink', { type: 'clickhouse', port: 9001, http_port: 8124, table: 't' })).toEqual([
      'port: port is not used when http_port is set: remove one of them',
    ]);
    expect(lintOf('sink', { type: 'clickhouse', port: 9440, secure: true, table: 't' })).toEqual([]);
  });

  it("names the HTTP port it tried, and the server's own hint when given its native-protocol port", async () => {
    const refused = await testConnector('source', { ...conn(), http_port: undefined, port: 9000, query: 'SELECT 1' } as never);
    expect(refused.error).toMatch(/^clickhouse: http:\/\/127\.0\.0\.1:8123: /);
    const native = await testConnector('source', { ...conn(), http_port: server.tcpPort, query: 'SELECT 1' } as never);
    expect(native.ok).toBe(false);
    expect(native.error).toContain(`Port ${server.tcpPort} is for clickhouse-client program`);
    expect(native.error).toContain('set http_port');
  });
});

describe('clickhouse source: query and params', () => {
  beforeAll(async () => {
    await server.admin.insert({
      table: 'people',
      values: [
        { id: 1, name: "o'brien\\", score: 1.5, big: '18446744073709551615' },
        { id: 2, name: 'x', score: 2, big: 2 },
        { id: 3, name: 'café {id:UInt32}', score: -1, big: 3 },
      ],
      format: 'JSONEachRow',
    });
  });

  it('finds placeholders outside strings, identifiers and comments, and inlines typed, escaped literals', () => {
    const sql = "SELECT '{a:String}', `{b:String}` /* {c:String} */ -- {d:String}\nFROM t WHERE x = {e:String} AND y IN {f:Array(UInt8)}";
    expect(placeholders(sql).map((p) => p.name)).toEqual(['e', 'f']);
    expect(
      inlineParams('SELECT {s:String}, {n:Nullable(Int8)}, {a:Array(String)}, {b:UInt8}, {t:Identifier}', {
        s: "it's \\",
        n: null,
        a: ['x', "y'"],
        b: true,
        t: 'db.t`x',
      }),
    ).toBe("SELECT CAST('it\\'s \\\\' AS String), CAST(NULL AS Nullable(Int8)), CAST(['x', 'y\\''] AS Array(String)), CAST(1 AS UInt8), `db`.`t\\`x`");
    expect(() => inlineParams('SELECT {x:UInt8}', {})).toThrow("params has no 'x'");
  });

  it('binds values through the fallback on this 18.16 server: quotes and backslashes match exactly, nothing is injected', async () => {
    const exact = await read({ query: 'SELECT id, name FROM people WHERE name = {name:String}', params: { name: "o'brien\\" } });
    expect(exact.rec.status, JSON.stringify(exact.rec)).toBe('success');
    expect(exact.records).toEqual([{ id: 1, name: "o'brien\\" }]);
    const injected = await read({ query: 'SELECT id FROM people WHERE name = {name:String}', params: { name: "x' OR 1 = 1 --" } });
    expect(injected.records).toEqual([]);
    // A placeholder's text inside a value stays text.
    const braces = await read({ query: 'SELECT id FROM people WHERE name = {name:String}', params: { name: 'café {id:UInt32}' } });
    expect(braces.records).toEqual([{ id: 3 }]);
  });

  it('arrays, numbers and identifiers as parameters', async () => {
    const r = await read({
      query: 'SELECT id FROM {t:Identifier} WHERE has({ids:Array(UInt32)}, id) AND score > {min:Float64} ORDER BY id',
      params: { t: 'people', ids: [1, 2, 3], min: 0 },
    });
    expect(r.rec.status, JSON.stringify(r.rec)).toBe('success');
    expect(r.records).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('lint: a placeholder without a value, and a FORMAT clause', () => {
    expect(lintOf('source', { type: 'clickhouse', query: 'SELECT {x:UInt8}' })).toEqual(['params: the query uses {x:UInt8}: add params.x']);
    expect(lintOf('source', { type: 'clickhouse', query: 'SELECT 1 FORMAT CSV' })).toEqual([
      'query: remove the FORMAT clause: the connector reads JSONEachRow',
    ]);
  });

  it('64-bit integers arrive as decimal strings (exact), other numbers as numbers', async () => {
    const r = await read({ query: 'SELECT id, big, score FROM people WHERE id IN (1, 2) ORDER BY id' });
    expect(r.records).toEqual([
      { id: 1, big: '18446744073709551615', score: 1.5 },
      { id: 2, big: '2', score: 2 },
    ]);
  });

  it('a trailing semicolon is accepted', async () => {
    const r = await read({ query: 'SELECT 7 AS x;' });
    expect(r.records).toEqual([{ x: 7 }]);
  });
});

describe('clickhouse source: chunk_size', () => {
  const chunks = async (chunk_size: number) => {
    const r = await read(
      { query: 'SELECT n FROM numbers ORDER BY n', chunk_size },
      { transforms: [{ type: 'inject_meta', fields: { chunk: 'clickhouse_chunk' } }] },
    );
    expect(r.rec.status).toBe('success');
    expect(r.records.map((x) => x.n)).toEqual(Array.from({ length: 2500 }, (_, i) => i));
    return new Set(r.records.map((x) => x.chunk)).size;
  };
  it('cuts the result into units of chunk_size rows', async () => {
    expect(await chunks(1000)).toBe(3);
    expect(await chunks(2500)).toBe(1);
  });
  it('0 keeps the whole result one unit', async () => {
    expect(await chunks(0)).toBe(1);
  });
});

describe('clickhouse source: failures', () => {
  it('test() checks the query itself: syntax, tables, database, credentials', async () => {
    expect((await testConnector('source', { ...conn(), query: 'SELECT id FROM people' } as never)).ok).toBe(true);
    expect((await testConnector('source', { ...conn(), query: 'SELEC 1' } as never)).error).toMatch(/Code 62: Syntax error/);
    expect((await testConnector('source', { ...conn(), query: 'SELECT * FROM nope' } as never)).error).toMatch(/Code 60: Table default\.nope doesn't exist/);
    expect((await testConnector('source', { ...conn(), database: 'nope', query: 'SELECT 1' } as never)).error).toMatch(/Code 81: .*\(check database\)/);
    const creds = await testConnector('source', { ...conn(), username: 'svc', password: 'wrong-secret', query: 'SELECT 1' } as never);
    expect(creds.error).toMatch(/Code 193: Wrong password for user svc \(check username and password\)/);
    expect(creds.error).not.toContain('wrong-secret');
    expect((await testConnector('source', { ...conn(), username: 'svc', password: SVC_PASSWORD, query: 'SELECT 1' } as never)).ok).toBe(true);
  });

  it('a query error fails the run with the server message', async () => {
    const r = await read({ query: 'SELECT * FROM nope' });
    expect(r.rec.status).toBe('failed');
    expect(r.rec.error).toMatch(/^clickhouse: http:\/\/127\.0\.0\.1:\d+: Code 60: Table default\.nope doesn't exist/);
  });

  it('send_receive_timeout: a request silent for longer fails', async () => {
    const r = await read({ query: 'SELECT sleep(2)', send_receive_timeout: 0.5 });
    expect(r.rec.status).toBe('failed');
    expect(r.rec.error).toContain('no answer for 0.5 s (send_receive_timeout)');
    expect((await read({ query: 'SELECT sleep(1) AS s', send_receive_timeout: 5 })).records).toEqual([{ s: 0 }]);
  });

  describe('against a port that accepts and stays silent', () => {
    let silent: Server;
    let port: number;
    const sockets: Socket[] = [];
    beforeAll(async () => {
      port = await freePort();
      silent = createServer((s) => void sockets.push(s));
      await new Promise<void>((r) => silent.listen(port, '127.0.0.1', () => r()));
    });
    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    });

    it('connect_timeout bounds the TLS handshake that never completes', async () => {
      const started = Date.now();
      const r = await testConnector('source', { ...conn(), http_port: port, secure: true, connect_timeout: 0.4, query: 'SELECT 1' } as never);
      expect(r.error).toContain('no TLS connection within 0.4 s (connect_timeout)');
      expect(Date.now() - started).toBeLessThan(3000);
    });
  });

  it('secure: true against the plain HTTP port fails as a TLS error', async () => {
    // The server answers the ClientHello with an HTTP error, or waits for a line end that never comes.
    const r = await testConnector('sink', { ...conn(), secure: true, connect_timeout: 1, table: 'people' } as never);
    expect(r.error).toMatch(/^clickhouse: https:\/\/127\.0\.0\.1:\d+: (TLS failed|no TLS connection within 1 s)/);
  });
});

describe('clickhouse sink', () => {
  it('inserts records by column name; a missing column takes its type default on this 18.16 server', async () => {
    const { rec } = await write({ table: 'people' }, [
      { id: 10, name: 'a', score: 1, big: 1 },
      { id: 11, name: 'b', score: 2, big: 2, note: 'set' },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await server.rows('SELECT id, note FROM people WHERE id IN (10, 11) ORDER BY id')).toEqual([
      { id: 10, note: '' }, // servers with input_format_defaults_for_omitted_fields take the DEFAULT expression
      { id: 11, note: 'set' },
    ]);
  });

  it('a refused record is dead-lettered with the server reason; the others of its batch land', async () => {
    await server.exec('CREATE TABLE refusals (id UInt32, v Int8) ENGINE = MergeTree ORDER BY id');
    const records = [
      { id: 1, v: 1 },
      { id: 2, v: 'not a number' },
      { id: 3, v: 3 },
      { id: 4, v: 4, extra: true },
      { id: 5, v: 5 },
    ];
    const { rec, dead } = await write({ table: 'refusals' }, records);
    expect(rec.records_out).toBe(3);
    expect(rec.dlq_count).toBe(2);
    expect(dead.map((d) => (d.record as Rec).id)).toEqual([2, 4]);
    expect(dead[0]!._stage).toBe('sink');
    expect(dead[0]!._error).toMatch(/^sinks\[0\] \(clickhouse\): clickhouse refused the record: Code \d+: .*at row 2/);
    expect(dead[1]!._error).toMatch(/Unknown field found while parsing JSONEachRow format: extra/);
    expect((await server.rows<{ id: number }>('SELECT id FROM refusals ORDER BY id')).map((r) => r.id)).toEqual([1, 3, 5]);
  });

  it('more than 20 refused records in one batch refuse the batch whole', async () => {
    await server.exec('CREATE TABLE refusals_many (id UInt32) ENGINE = MergeTree ORDER BY id');
    const records = Array.from({ length: 50 }, (_, i) => ({ id: i % 2 ? i : `bad ${i}` }));
    const { rec, dead } = await write({ table: 'refusals_many' }, records);
    expect(rec.records_out).toBe(0);
    expect(dead).toHaveLength(50);
    expect(dead[0]!._error).toContain('more than 20 records of one batch refused');
    expect(await server.rows('SELECT id FROM refusals_many')).toEqual([]);
  });

  it('a missing table or wrong credentials fail the write at once, without retries', async () => {
    const missing = await write({ table: 'nope', retry_count: 3, retry_delay_seconds: 5 }, [{ id: 1 }]);
    expect(missing.rec.records_out).toBe(0);
    expect(missing.dead[0]!._error).toMatch(/Code 60: Table default\.nope doesn't exist/);
    expect((await testConnector('sink', { ...conn(), table: 'nope' } as never)).error).toBe(
      'clickhouse: table default.nope does not exist (check table and database)',
    );
    const creds = await testConnector('sink', { ...conn(), username: 'svc', password: 'wrong-secret', table: 'people' } as never);
    expect(creds.error).toMatch(/Wrong password for user svc \(check username and password\)/);
  }, 20_000);

  it('db.table writes into another database', async () => {
    await server.exec('CREATE TABLE other.t (id UInt32) ENGINE = MergeTree ORDER BY id');
    expect((await testConnector('sink', { ...conn(), table: 'other.t' } as never)).ok).toBe(true);
    const { rec } = await write({ table: 'other.t' }, [{ id: 7 }]);
    expect(rec.status).toBe('success');
    expect(await server.rows('SELECT id FROM other.t')).toEqual([{ id: 7 }]);
    const viaDatabase = await write({ table: 't', database: 'other' }, [{ id: 8 }]);
    expect(viaDatabase.rec.records_out).toBe(1);
    expect(await server.rows('SELECT count() AS n FROM other.t')).toEqual([{ n: '2' }]);
  });

  it('authenticates as the configured user', async () => {
    const { rec } = await write({ table: 'people', username: 'svc', password: SVC_PASSWORD }, [{ id: 20, name: 'svc', score: 0, big: 0 }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await server.rows("SELECT id FROM people WHERE name = 'svc'")).toEqual([{ id: 20 }]);
  });
});
