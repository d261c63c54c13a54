// The agent's pre-encoded table (agent-table.ts) served to Debian's snmpgetnext and snmpbulkget:
// numeric OID order across table boundaries, runs of constants with moving values between them,
// endOfMibView, values computed afresh per request, and the encoder's Counter64 fast path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTable, SnmpAgent, type ActivityEntry } from '../../src/snmp/agent.js';
import { BerReader, BerWriter, Tag } from '../../src/snmp/ber.js';
import { run } from './peers.js';

const E = '1.3.6.1.4.1.99';
const BAD = '1.3.6.1.4.1.98.0';
/** How many times the moving values were computed (each answer that carries them computes them once). */
let computed = 0;
const log: ActivityEntry[] = [];
let agent: SnmpAgent;
let target: string;

beforeAll(async () => {
  // Given out of order, with arcs whose text order differs from their numeric order (9 < 10).
  const table = agentTable([
    { oid: `${E}.3.0`, type: 'Gauge32', value: 7 },
    { oid: `${E}.1.1.10`, type: 'Counter32', value: () => 1000 + ++computed },
    { oid: `${E}.1.1.2`, type: 'Integer32', value: 2 },
    { oid: `${E}.1.1.9`, type: 'Integer32', value: 9 },
    { oid: `${E}.1.2.1`, type: 'OctetString', value: Buffer.from('a') },
    { oid: `${E}.2.0`, type: 'Counter64', value: () => 2 ** 40 + ++computed },
    // Cannot be encoded: fails the requests that reach it, not the table (before E: no walk here meets it).
    { oid: BAD, type: 'ObjectIdentifier', value: 'not an oid' },
  ]);
  agent = new SnmpAgent({ port: 0, table, onActivity: (e) => log.push(e) });
  target = `127.0.0.1:${await agent.start()}`;
});
afterAll(() => agent.stop());

/** The tool's value lines as [oid, value]. */
const lines = (out: string): [string, string][] =>
  out
    .trim()
    .split('\n')
    .map((l) => l.split(' = ') as [string, string]);
const bulk = async (nonRep: number, reps: number, ...oids: string[]) =>
  lines(await run('snmpbulkget', ['-v2c', '-c', 'public', '-On', `-Cn${nonRep}`, `-Cr${reps}`, target, ...oids]));
const next = async (version: string, oid: string) => run('snmpgetnext', [`-v${version}`, '-c', 'public', '-On', target, oid]);
const END = 'No more variables left in this MIB View (It is past the end of the MIB tree)';

describe('pre-encoded table served to net-snmp', () => {
  it('a GETBULK walks in numeric OID order across table boundaries, moving values between constants', async () => {
    const got = await bulk(0, 8, E);
    expect(got.map(([o]) => o)).toEqual([`.${E}.1.1.2`, `.${E}.1.1.9`, `.${E}.1.1.10`, `.${E}.1.2.1`, `.${E}.2.0`, `.${E}.3.0`, `.${E}.3.0`]);
    expect(got.map(([, v]) => v.replace(/\d{4,}/, 'N'))).toEqual([
      'INTEGER: 2',
      'INTEGER: 9',
      'Counter32: N',
      'STRING: "a"',
      'Counter64: N',
      'Gauge32: 7',
      END,
    ]);
    // From inside a table, over its end into the next ones.
    expect((await bulk(0, 3, `${E}.1.1.9`)).map(([o]) => o)).toEqual([`.${E}.1.1.10`, `.${E}.1.2.1`, `.${E}.2.0`]);
    // From an OID that is no row (between two), as GETNEXT finds it.
    expect((await bulk(0, 2, `${E}.1.1.3`)).map(([o]) => o)).toEqual([`.${E}.1.1.9`, `.${E}.1.1.10`]);
  });

  it('GETNEXT: numeric order, the next table, endOfMibView (v2c) and noSuchName (v1), v1 skips Counter64', async () => {
    expect(await next('2c', `${E}.1.1.2`)).toContain(`.${E}.1.1.9 = INTEGER: 9`);
    expect(await next('2c', `${E}.1.1.10`)).toContain(`.${E}.1.2.1 = STRING: "a"`);
    expect(await next('2c', `${E}.1.5`)).toMatch(new RegExp(`^\\.${E.replaceAll('.', '\\.')}\\.2\\.0 = Counter64: \\d+`));
    expect(await next('1', `${E}.1.2.1`)).toContain(`.${E}.3.0 = Gauge32: 7`);
    expect(await next('2c', '1.3.6.1.4.1.100')).toContain(`.1.3.6.1.4.1.100 = ${END}`);
    await expect(next('1', '1.3.6.1.4.1.100')).rejects.toThrow(/noSuchName/);
  });

  it('a GETBULK that reaches the end: endOfMibView for the one repeater, per column for several', async () => {
    expect(await bulk(0, 5, `${E}.2.0`)).toEqual([
      [`.${E}.3.0`, 'Gauge32: 7'],
      [`.${E}.3.0`, END],
    ]);
    // A non-repeater, then two columns: the second ends first and repeats its last OID.
    expect((await bulk(1, 3, `${E}.1.1.2`, `${E}.1.2`, `${E}.2`)).map(([o, v]) => `${o} ${v.startsWith('No more') ? 'end' : v.split(':')[0]}`)).toEqual([
      `.${E}.1.1.9 INTEGER`,
      `.${E}.1.2.1 STRING`,
      `.${E}.2.0 Counter64`,
      `.${E}.2.0 Counter64`,
      `.${E}.3.0 Gauge32`,
      `.${E}.3.0 Gauge32`,
      `.${E}.3.0 end`,
    ]);
  });

  it('moving values are computed afresh for every request', async () => {
    const read = async () => (await bulk(0, 3, `${E}.1.1.9`)).map(([, v]) => v);
    const before = computed;
    const [a, b] = [await read(), await read()];
    expect(computed).toBe(before + 4); // two values in each of two answers
    expect(a[0]).not.toBe(b[0]);
    expect(a[2]).not.toBe(b[2]);
    expect(a[1]).toBe(b[1]);
  });

  it('a value that cannot be encoded fails only the requests that reach it', async () => {
    await expect(run('snmpget', ['-v2c', '-c', 'public', '-On', '-t', '1', '-r', '0', target, BAD])).rejects.toThrow(/Timeout/);
    expect(log.at(-1)!.error).toMatch(/^internal error: OID needs at least two arcs/);
    expect(await run('snmpget', ['-v2c', '-c', 'public', '-On', target, `${E}.3.0`])).toContain('Gauge32: 7');
  });
});

describe('BerWriter.uint', () => {
  /** The minimal unsigned INTEGER content, computed the long way with BigInt. */
  const reference = (v: bigint): string => {
    let h = v.toString(16);
    if (h.length % 2) h = '0' + h;
    return parseInt(h.slice(0, 2), 16) & 0x80 ? '00' + h : h;
  };
  it('writes numbers and BigInts of every size as the minimal content, read back exactly', () => {
    const values = [
      0n,
      127n,
      128n,
      2n ** 31n - 1n,
      2n ** 31n,
      2n ** 32n - 1n,
      2n ** 32n,
      2n ** 39n,
      2n ** 40n + 5n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 63n,
      2n ** 64n - 1n,
    ];
    for (const v of values) {
      for (const input of v <= 2n ** 53n - 1n ? [v, Number(v)] : [v]) {
        const w = new BerWriter(16);
        w.uint(input, Tag.Counter64);
        const r = new BerReader(w.buf, 0, w.pos);
        const len = r.len(Tag.Counter64);
        expect(w.buf.subarray(r.pos, r.pos + len).toString('hex'), `${typeof input} ${v}`).toBe(reference(v));
        expect(r.uint64(len)).toBe(v);
      }
    }
  });
});
