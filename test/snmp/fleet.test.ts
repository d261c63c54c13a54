// The agent fleet (src/snmp/fleet.ts) against Debian's net-snmp tools: one sysName and interface
// count per agent, counters that move at per-agent rates and wrap, a v3 engine ID per agent (seen
// in the discovery itself, -D dump of msgAuthoritativeEngineID, and in snmpEngineID.0), consecutive
// ports from a base port, a taken port failing the start without leaving sockets, deterministic
// from the seed, and 1,000 agents in one process within the memory budget.
import { createSocket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { agentTable, SnmpAgent } from '../../src/snmp/agent.js';
import { Fleet, fleetTable } from '../../src/snmp/fleet.js';
import { SnmpInputError } from '../../src/snmp/values.js';
import { netSnmp, snmpTool as run } from './netsnmp.js';
import { freeUdpPort, freeUdpRange as freeRange, udpBindable as bindable } from './peers.js';
import { elapse, pace } from '../helpers/wait.js';

const SYS_NAME = '1.3.6.1.2.1.1.5.0';
const IF_NUMBER = '1.3.6.1.2.1.2.1.0';
const IF_TABLE = '1.3.6.1.2.1.2.2';
const IF_IN_OCTETS = '1.3.6.1.2.1.2.2.1.10';
const IF_HC_IN_OCTETS = '1.3.6.1.2.1.31.1.1.1.6';
const SNMP_ENGINE_ID = '1.3.6.1.6.3.10.2.1.1.0';
const USER = { name: 'fleetuser', authProtocol: 'SHA', authKey: 'fleet-auth-pass', privProtocol: 'AES', privKey: 'fleet-priv-pass' };

const fleets: Fleet[] = [];
afterEach(async () => {
  for (const f of fleets.splice(0)) await f.stop();
});

async function started(opts: ConstructorParameters<typeof Fleet>[0]): Promise<Fleet> {
  const f = new Fleet(opts);
  fleets.push(f);
  await f.start();
  return f;
}

const get = (port: number, ...oids: string[]) => run('snmpget', ['-v2c', '-c', 'public', '-On', '-Oqv', '-t', '2', '-r', '1', `127.0.0.1:${port}`, ...oids]);
const values = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => l.replace(/^"|"$/g, ''));

/** Runs `f` over items, at most `n` at a time. */
async function pool<T, R>(items: T[], n: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const k = next++;
        out[k] = await f(items[k]!);
      }
    }),
  );
  return out;
}

describe('fleet: per-agent devices against snmpget / snmpbulkwalk', () => {
  it('every agent has its own sysName and interface count, and its ifTable has that many rows', async () => {
    const f = await started({ agents: 40, interfaces: 20, interfaceSpread: 8, seed: 7 });
    expect(f.ports).toHaveLength(40);
    expect(new Set(f.ports).size).toBe(40);
    const seen = await pool(f.agents(), 8, async (a) => {
      const [name, ifNumber] = values(await get(a.port, SYS_NAME, IF_NUMBER));
      return { name, ifNumber: Number(ifNumber), expected: a };
    });
    expect(seen.map((s) => s.name)).toEqual(Array.from({ length: 40 }, (_, i) => `sim-${String(i).padStart(4, '0')}`));
    for (const s of seen) {
      expect(s.ifNumber).toBe(s.expected.interfaces);
      expect(s.ifNumber).toBeGreaterThanOrEqual(20);
      expect(s.ifNumber).toBeLessThanOrEqual(28);
    }
    // The seed spreads the counts: not one shape for all.
    expect(new Set(seen.map((s) => s.ifNumber)).size).toBeGreaterThanOrEqual(4);
    for (const a of f.agents().slice(0, 4)) {
      const out = await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-On', '-Cr25', `127.0.0.1:${a.port}`, IF_TABLE]);
      const lines = out.trim().split('\n');
      expect(lines).toHaveLength(22 * a.interfaces);
      expect(lines.filter((l) => l.startsWith(`.${IF_TABLE}.1.1.`))).toHaveLength(a.interfaces);
    }
  });

  it("counters increase between two reads, at a rate of the agent's own", async () => {
    const f = await started({ agents: 12, seed: 3, fastShare: 0 });
    const oids = [`${IF_HC_IN_OCTETS}.1`, `${IF_HC_IN_OCTETS}.3`, `${IF_IN_OCTETS}.3`];
    // Each read with the time its answer came (the process exit follows it within milliseconds).
    const read = () => pool(f.agents(), 6, async (a) => ({ v: values(await get(a.port, ...oids)).map(BigInt), at: performance.now() }));
    const first = await read();
    await elapse(1500); // the counters move on
    const second = await read();
    const perSpeed: number[] = [];
    for (let i = 0; i < 12; i++) {
      const [hc1a, hc3a, c3a] = first[i]!.v;
      const [hc1b, hc3b, c3b] = second[i]!.v;
      const dt = (second[i]!.at - first[i]!.at) / 1000;
      expect(hc1b).toBeGreaterThan(hc1a!);
      expect(hc3b).toBeGreaterThan(hc3a!);
      // ifInOctets is ifHCInOctets mod 2^32 (the varbinds of one answer are read within a millisecond or two).
      const d32 = Number((((c3b! - c3a!) % 2n ** 32n) + 2n ** 32n) % 2n ** 32n);
      expect(Math.abs(d32 - Number((hc3b! - hc3a!) % 2n ** 32n))).toBeLessThan(1e5);
      // Octets per second of the 10G port 1 (~40 % of line rate, 500 MB/s, times the agent's speed), per unit of speed.
      perSpeed.push(Number(hc1b! - hc1a!) / dt / f.agent(i).speed);
    }
    // The same for every agent once divided by its speed, and that is the default device's rate.
    const mean = perSpeed.reduce((a, b) => a + b, 0) / perSpeed.length;
    for (const p of perSpeed) expect(Math.abs(p - mean) / mean).toBeLessThan(0.2);
    expect(mean).toBeGreaterThan(5e8 * 0.8);
    expect(mean).toBeLessThan(5e8 * 1.2);
    // Different agents, different rates.
    expect(new Set(f.agents().map((a) => a.speed)).size).toBe(12);
  });

  it("a fast agent's Counter32 wraps at 2^32 while its Counter64 keeps counting", async () => {
    const f = await started({ agents: 30, seed: 11 });
    const fast = f.agents().find((a) => a.fast);
    expect(fast, 'the default fast share (0.1) gives 30 agents at least one fast one').toBeDefined();
    expect(fast!.speed).toBeGreaterThanOrEqual(50);
    // ifInOctets.2: a 1G port, ~50 MB/s x speed (>= 2.5 GB/s): it passes 2^32 every 1.7 s at most.
    let wrapped = false;
    let prev: bigint[] | undefined;
    for (let k = 0; k < 20 && !wrapped; k++) {
      const cur = values(await get(fast!.port, `${IF_IN_OCTETS}.2`, `${IF_HC_IN_OCTETS}.2`)).map(BigInt);
      expect(cur[0]).toBeLessThan(2n ** 32n);
      if (prev) {
        expect(cur[1]).toBeGreaterThan(prev[1]!);
        if (cur[0]! < prev[0]!) wrapped = true;
      }
      prev = cur;
      await pace(250); // four reads a second
    }
    expect(wrapped).toBe(true);
  });

  it('v3: snmpget discovers a different engine ID per agent, and snmpEngineID.0 serves it', async () => {
    const f = await started({ agents: 5, seed: 5, users: [USER] });
    const ids = await pool(f.agents(), 5, async (a) => {
      const out = await run('snmpget', [
        '-v3',
        '-l',
        'authPriv',
        '-u',
        USER.name,
        '-a',
        'SHA',
        '-A',
        USER.authKey,
        '-x',
        'AES',
        '-X',
        USER.privKey,
        '-On',
        '-Oqv',
        `127.0.0.1:${a.port}`,
        SNMP_ENGINE_ID,
        SYS_NAME,
      ]);
      return { a, out };
    });
    for (const { a, out } of ids) {
      const [engineId, name] = out.trim().split('\n');
      expect(engineId!.replace(/[^0-9A-F]/gi, '').toLowerCase()).toBe(a.engineId);
      expect(name).toBe(`"${a.sysName}"`);
    }
    expect(new Set(f.agents().map((a) => a.engineId)).size).toBe(5);
  });

  it("v3: the engine ID in the agent's discovery report (msgAuthoritativeEngineID) is the agent's own", async () => {
    const f = await started({ agents: 3, seed: 5, users: [USER] });
    for (const a of f.agents()) {
      const { stderr } = await netSnmp('snmpget', [
        '-v3',
        '-l',
        'authPriv',
        '-u',
        USER.name,
        '-a',
        'SHA',
        '-A',
        USER.authKey,
        '-x',
        'AES',
        '-X',
        USER.privKey,
        '-On',
        '-Ddumph_recv,dumpx_recv',
        `127.0.0.1:${a.port}`,
        SYS_NAME,
      ]);
      // "dumph_recv:     msgAuthoritativeEngineID  04 0D 80 00 1F 88 05 ...": the discovery REPORT, then the RESPONSE.
      expect(stderr).toContain('REPORT');
      const seen = [...stderr.matchAll(/msgAuthoritativeEngineID\s+04 0D ((?:[0-9A-F]{2} ){13})/g)].map((m) => m[1]!.replace(/ /g, '').toLowerCase());
      expect(seen).toEqual([a.engineId, a.engineId]);
    }
  });

  it('wrong v3 keys are refused on every agent (users are shared, keys localised per engine ID)', async () => {
    const f = await started({ agents: 2, users: [USER] });
    await expect(
      run('snmpget', [
        '-v3',
        '-l',
        'authPriv',
        '-u',
        USER.name,
        '-a',
        'SHA',
        '-A',
        'not-the-key',
        '-x',
        'AES',
        '-X',
        USER.privKey,
        '-t',
        '1',
        '-r',
        '0',
        `127.0.0.1:${f.ports[1]}`,
        SYS_NAME,
      ]),
    ).rejects.toThrow(/Authentication failure|wrong digest|Timeout/i);
  });

  it('a fleet is the same for the same seed, and another for another seed', () => {
    const a = new Fleet({ agents: 50, seed: 42 }).agents();
    const b = new Fleet({ agents: 50, seed: 42 }).agents();
    const c = new Fleet({ agents: 50, seed: 43 }).agents();
    expect(b).toEqual(a);
    expect(c.map((x) => x.engineId)).not.toEqual(a.map((x) => x.engineId));
    expect(c.map((x) => x.interfaces)).not.toEqual(a.map((x) => x.interfaces));
    expect(new Set(a.map((x) => x.engineId)).size).toBe(50);
  });
});

describe('fleet: addressing, start and stop', () => {
  it('agent i listens on base port + i, and stop releases every port', async () => {
    const base = await freeRange(10);
    const f = await started({ agents: 10, basePort: base });
    expect(f.ports).toEqual(Array.from({ length: 10 }, (_, i) => base + i));
    expect(f.targets()[3]).toEqual({ host: '127.0.0.1', port: base + 3 });
    expect(values(await get(base + 9, SYS_NAME))).toEqual(['sim-0009']);
    await f.stop();
    expect(f.running).toBe(false);
    expect(
      await pool(
        f.agents().map((a) => a.port),
        10,
        bindable,
      ),
    ).toEqual(new Array(10).fill(true));
  });

  it('a taken port fails the start naming the agent (409), and no agent is left bound', async () => {
    const base = await freeRange(6);
    const holder = createSocket('udp4');
    await new Promise<void>((r) => holder.bind(base + 4, '127.0.0.1', () => r()));
    try {
      const f = new Fleet({ agents: 6, basePort: base });
      const err = await f.start().then(
        () => undefined,
        (e: unknown) => e as SnmpInputError,
      );
      expect(err).toBeInstanceOf(SnmpInputError);
      expect(err!.statusCode).toBe(409);
      expect(err!.message).toBe(`agent 4 (sim-0004): UDP port ${base + 4} on 127.0.0.1 is already in use`);
      expect(f.running).toBe(false);
      for (const p of [0, 1, 2, 3, 5]) expect(await bindable(base + p)).toBe(true);
    } finally {
      await new Promise<void>((r) => holder.close(() => r()));
    }
  });

  it('refuses what it cannot serve, before binding anything', async () => {
    expect(() => new Fleet({ agents: 0 })).toThrow('agents must be an integer 1..10000, got 0');
    expect(() => new Fleet({ agents: 10001 })).toThrow('agents must be an integer 1..10000');
    expect(() => new Fleet({ agents: 100, basePort: 65500 })).toThrow('base port 65500 + 100 agents goes past port 65535');
    expect(() => new Fleet({ agents: 1, interfaces: 0 })).toThrow('interfaces must be an integer 1..1000, got 0');
    expect(() => new Fleet({ agents: 1, community: '' })).toThrow('community must not be empty');
    expect(() => new Fleet({ agents: 1, users: [USER, USER] })).toThrow(`SNMPv3 user "${USER.name}" is listed twice`);
    expect(() => new Fleet({ agents: 1, users: [{ name: 'u', authKey: 'short' }] })).toThrow('auth key must be at least 8 characters');
    expect(() => new Fleet({ agents: 1, fastShare: 2 })).toThrow('fast share must be 0..1');
    const port = await freeUdpPort();
    expect(() => new Fleet({ agents: 1, basePort: port, seed: -1 })).toThrow('seed must be an integer');
  });

  it('another community is refused', async () => {
    const f = await started({ agents: 2, community: 'fleet-ro' });
    expect(values(await run('snmpget', ['-v2c', '-c', 'fleet-ro', '-On', '-Oqv', `127.0.0.1:${f.ports[0]}`, SYS_NAME]))).toEqual(['sim-0000']);
    await expect(run('snmpget', ['-v2c', '-c', 'public', '-t', '1', '-r', '0', `127.0.0.1:${f.ports[0]}`, SYS_NAME])).rejects.toThrow(/Timeout/);
  });
});

describe('fleet: shared tables', () => {
  it('agents share one table per interface count; overrides on one agent stay on that agent', async () => {
    const table = fleetTable(3);
    const ctx = (i: number) => ({
      index: i,
      sysName: Buffer.from(`t-${i}`),
      sysDescr: Buffer.from('d'),
      engineId: Buffer.from('80001f880500000000000000' + String(i).padStart(2, '0'), 'hex'),
      engineBoots: 1,
      speed: 1,
      phase: 0,
      uptime: 0,
    });
    const a = new SnmpAgent({ port: 0, table, context: ctx(1), overrides: [{ oid: SYS_NAME, type: 'OctetString', value: 'overridden' }] });
    const b = new SnmpAgent({ port: 0, table, context: ctx(2) });
    await a.start();
    await b.start();
    try {
      expect(values(await get(a.port, SYS_NAME, IF_NUMBER))).toEqual(['overridden', '3']);
      expect(values(await get(b.port, SYS_NAME, IF_NUMBER))).toEqual(['t-2', '3']);
      expect(b.size).toBe(table.rows.length);
      expect(
        agentTable([
          { oid: '1.3.6.1.2', type: 'Integer32', value: 1 },
          { oid: '1.3.6.1.1', type: 'Integer32', value: 2 },
        ]).rows.map((r) => r.oid),
      ).toEqual(['1.3.6.1.1', '1.3.6.1.2']);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('1,000 agents of 20-28 interfaces in one process: bound fast, well under 300 MB, all answering', async () => {
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    const f = await started({ agents: 1000, users: [USER] });
    const startMs = performance.now() - t0;
    const grown = (process.memoryUsage().rss - rss0) / 2 ** 20;
    expect(f.ports).toHaveLength(1000);
    expect(f.totalInterfaces).toBeGreaterThanOrEqual(20_000);
    expect(startMs).toBeLessThan(10_000);
    expect(grown).toBeLessThan(150);
    const some = [0, 333, 999];
    for (const i of some) {
      const out = await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-On', '-Cr25', `127.0.0.1:${f.ports[i]}`, `${IF_TABLE}.1.1`]);
      expect(out.trim().split('\n')).toHaveLength(f.agent(i).interfaces);
    }
  });
});
