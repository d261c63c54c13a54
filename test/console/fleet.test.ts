// The console's agent fleet (/api/simulator/fleet) served to Debian's net-snmp tools: start, list,
// per-agent sysName and v3 engine ID, 409 on a second start and on a taken port (no socket left),
// 422 on bad input with the state unchanged, stop (and console shutdown) releasing every port.
import { createSocket } from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { snmpTool as run } from '../snmp/netsnmp.js';
import { freeUdpRange as freeRange, udpBindable as bindable } from '../snmp/peers.js';
import { detailOnly, loggedIn, started } from './helpers.js';

const SYS_NAME = '1.3.6.1.2.1.1.5.0';
const SNMP_ENGINE_ID = '1.3.6.1.6.3.10.2.1.1.0';
const USER = { username: 'fleetops', auth_protocol: 'SHA-256', auth_key: 'fleet-auth-secret', priv_protocol: 'AES', priv_key: 'fleet-priv-secret' };

type Api = Awaited<ReturnType<typeof loggedIn>>;

async function agents(a: Api) {
  const r = await a.api('GET', '/api/simulator/fleet/agents');
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.agents as { index: number; port: number; sys_name: string; interfaces: number; engine_id: string; fast: boolean }[];
}

describe('console: agent fleet', () => {
  it('starts a fleet whose agents answer snmpget with their own sysName and engine ID, lists it, and stops it', async () => {
    const a = await loggedIn();
    const idle = await a.api('GET', '/api/simulator/fleet');
    expect(idle.status).toBe(200);
    expect(idle.body).toMatchObject({ state: 'stopped', agents: null, ports: null, requests: 0 });

    const r = await a.api('POST', '/api/simulator/fleet', { agents: 6, host: '127.0.0.1', interfaces: 21, interface_spread: 3, seed: 9, v3_users: [USER] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      state: 'running',
      agents: 6,
      host: '127.0.0.1',
      base_port: 0,
      community: 'public',
      seed: 9,
      versions: ['1', '2c', '3'],
      v3_users: [{ username: 'fleetops', auth_protocol: 'SHA-256', priv_protocol: 'AES' }],
    });
    expect(r.body.interfaces.min).toBeGreaterThanOrEqual(21);
    expect(r.body.interfaces.max).toBeLessThanOrEqual(24);
    expect(JSON.stringify(r.body)).not.toContain('secret');

    const list = await agents(a);
    expect(list.map((x) => x.sys_name)).toEqual(['sim-0000', 'sim-0001', 'sim-0002', 'sim-0003', 'sim-0004', 'sim-0005']);
    expect(r.body.interfaces.total).toBe(list.reduce((s, x) => s + x.interfaces, 0));
    expect(new Set(list.map((x) => x.engine_id)).size).toBe(6);
    for (const x of list) {
      const out = await run('snmpget', ['-v2c', '-c', 'public', '-On', '-Oqv', `127.0.0.1:${x.port}`, SYS_NAME, '1.3.6.1.2.1.2.1.0']);
      expect(out.trim().split('\n')).toEqual([`"${x.sys_name}"`, String(x.interfaces)]);
    }
    for (const x of list.slice(0, 2)) {
      const out = await run('snmpget', [
        '-v3',
        '-l',
        'authPriv',
        '-u',
        USER.username,
        '-a',
        'SHA-256',
        '-A',
        USER.auth_key,
        '-x',
        'AES',
        '-X',
        USER.priv_key,
        '-On',
        '-Oqv',
        `127.0.0.1:${x.port}`,
        SNMP_ENGINE_ID,
      ]);
      expect(out.replace(/[^0-9A-F]/gi, '').toLowerCase()).toBe(x.engine_id);
    }
    const page = await a.api('GET', '/api/simulator/fleet/agents?offset=4&limit=5');
    expect(page.body.total).toBe(6);
    expect(page.body.agents.map((x: { index: number }) => x.index)).toEqual([4, 5]);
    const busy = await a.api('GET', '/api/simulator/fleet');
    // 6 v2c gets, 2 v3 gets each after a discovery.
    expect(busy.body.requests).toBeGreaterThanOrEqual(10);
    expect(busy.body.errors).toBe(0);

    const again = await a.api('POST', '/api/simulator/fleet', { agents: 2 });
    expect(detailOnly(again, 409)).toBe('a fleet is already running; stop it first (DELETE /api/simulator/fleet)');

    const stopped = await a.api('DELETE', '/api/simulator/fleet');
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'stopped', ports: null, interfaces: null });
    for (const x of list) expect(await bindable(x.port)).toBe(true);
    expect((await a.api('DELETE', '/api/simulator/fleet')).status).toBe(200);
    expect(detailOnly(await a.api('GET', '/api/simulator/fleet/agents'), 409)).toBe('no fleet is running; start one with POST /api/simulator/fleet');
  });

  it('consecutive ports from base_port; a taken port is 409 naming the agent, state error, no socket left', async () => {
    const a = await loggedIn();
    const base = await freeRange(5);
    const r = await a.api('POST', '/api/simulator/fleet', { agents: 5, base_port: base, host: '127.0.0.1' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.ports).toEqual({ first: base, last: base + 4, consecutive: true });
    expect((await agents(a)).map((x) => x.port)).toEqual([base, base + 1, base + 2, base + 3, base + 4]);
    await a.api('DELETE', '/api/simulator/fleet');

    const holder = createSocket('udp4');
    await new Promise<void>((res) => holder.bind(base + 2, '127.0.0.1', () => res()));
    try {
      const taken = await a.api('POST', '/api/simulator/fleet', { agents: 5, base_port: base, host: '127.0.0.1' });
      expect(detailOnly(taken, 409)).toBe(`agent 2 (sim-0002): UDP port ${base + 2} on 127.0.0.1 is already in use`);
      const st = await a.api('GET', '/api/simulator/fleet');
      expect(st.body).toMatchObject({ state: 'error', error: `agent 2 (sim-0002): UDP port ${base + 2} on 127.0.0.1 is already in use`, ports: null });
      for (const p of [0, 1, 3, 4]) expect(await bindable(base + p)).toBe(true);
      // From error a stop clears it, a start is allowed.
      expect((await a.api('DELETE', '/api/simulator/fleet')).body.state).toBe('stopped');
    } finally {
      await new Promise<void>((res) => holder.close(() => res()));
    }
  });

  it('bad input is 422 {detail} and changes nothing', async () => {
    const a = await loggedIn();
    const bad: [Record<string, unknown>, RegExp | string][] = [
      [{ agents: 0 }, /agents must be >= 1/],
      [{ agents: 10001 }, /agents must be <= 10000/],
      [{ nope: 1 }, /must NOT have additional properties/],
      [{ agents: 100, base_port: 65500 }, 'base port 65500 + 100 agents goes past port 65535; lower the base port or the number of agents'],
      [{ host: 'localhost' }, 'host "localhost" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)'],
      [{ v3_users: [{ username: 'u', auth_key: 'short' }] }, 'v3_users[0]: SNMPv3 user "u": auth key must be at least 8 characters'],
      [{ v3_users: [USER, USER] }, 'v3_users[1]: user "fleetops" is listed twice'],
      [
        { v3_users: [{ username: 'u', auth_key: 'long-enough', priv_protocol: 'ROT13', priv_key: 'long-enough' }] },
        /v3_users\[0\]: unknown privacy protocol "ROT13"/,
      ],
      [{ fast_share: 2 }, /fast_share must be <= 1/],
    ];
    for (const [body, detail] of bad) {
      const r = await a.api('POST', '/api/simulator/fleet', body);
      const d = detailOnly(r, 422);
      if (typeof detail === 'string') expect(d).toBe(detail);
      else expect(d).toMatch(detail);
    }
    expect((await a.api('GET', '/api/simulator/fleet')).body).toMatchObject({ state: 'stopped', agents: null });
  });

  it('needs a token, and a console shutdown stops a running fleet (every port released)', async () => {
    const a = await loggedIn();
    expect(detailOnly(await a.call('POST', '/api/simulator/fleet', { body: { agents: 1 } }), 401)).toContain('X-Auth-Token');
    expect((await a.call('GET', '/api/simulator/fleet')).status).toBe(401);
    const r = await a.api('POST', '/api/simulator/fleet', { agents: 20, host: '127.0.0.1' });
    expect(r.status).toBe(200);
    const ports = (await agents(a)).map((x) => x.port);
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    for (const p of ports) expect(await bindable(p)).toBe(true);
  });
});
