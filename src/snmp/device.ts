// The simulator's default device: MIB-II system, interfaces (ifTable with moving Counter32 that
// wrap at 2^32, ifXTable Counter64), ipAddrTable, ipNetToMediaTable (index ifIndex.IpAddress) and
// tcpConnTable (index of four parts). Values are computed on read from the time since start.
import type { SnmpType, SnmpValue } from './values.js';

export interface MibEntry {
  oid: string;
  type: SnmpType;
  /**
   * A constant, or a function of the seconds since the agent started (and of the agent's
   * `context`, for a table shared by a fleet of agents).
   */
  value: SnmpValue | ((elapsed: number, context?: unknown) => SnmpValue);
}

export interface DeviceOptions {
  /** Number of interfaces (default 8); raise it to serve more OIDs. */
  interfaces?: number;
  sysName?: string;
  sysDescr?: string;
  /** Offset added to every counter (tests use it to start close to 2^32). */
  counterBase?: number;
}

const TWO32 = 2 ** 32;

export function defaultDevice(opts: DeviceOptions = {}): MibEntry[] {
  const n = opts.interfaces ?? 8;
  const base = opts.counterBase ?? TWO32 - 5_000_000_000 / 8; // Counter32 wraps within seconds on the fast ports
  const e: MibEntry[] = [];
  const add = (oid: string, type: SnmpType, value: MibEntry['value']) => e.push({ oid, type, value });
  const uptime = (s: number) => Math.floor(s * 100) % TWO32;

  const sys = '1.3.6.1.2.1.1';
  add(`${sys}.1.0`, 'OctetString', Buffer.from(opts.sysDescr ?? 'svc SNMP simulator: Linux edge-router-01 5.10.0 x86_64'));
  add(`${sys}.2.0`, 'ObjectIdentifier', '1.3.6.1.4.1.8072.3.2.10');
  add(`${sys}.3.0`, 'TimeTicks', uptime);
  add(`${sys}.4.0`, 'OctetString', Buffer.from('noc@example.net'));
  add(`${sys}.5.0`, 'OctetString', Buffer.from(opts.sysName ?? 'edge-router-01'));
  add(`${sys}.6.0`, 'OctetString', Buffer.from('rack 12, site A'));
  add(`${sys}.7.0`, 'Integer32', 72);
  add(`${sys}.8.0`, 'TimeTicks', 0);

  add('1.3.6.1.2.1.2.1.0', 'Integer32', n);
  const ifs = Array.from({ length: n }, (_, i) => {
    const idx = i + 1;
    const speed = idx % 4 === 1 ? 10_000_000_000 : idx % 4 === 2 ? 1_000_000_000 : 100_000_000;
    const up = idx % 5 !== 0;
    // Octet rate: ~40 % of line rate on up ports.
    const rate = up ? Math.floor((speed / 8) * 0.4) : 0;
    return { idx, speed, up, rate, name: idx === n && n > 1 ? 'lo' : `eth${i}`, mac: Buffer.from([0x02, 0x00, 0x5e, 0x10, idx >> 8, idx & 0xff]) };
  });
  // A number, not a BigInt: the same value (a double either way), encoded without BigInt work per request.
  const c64 =
    (rate: number, scale = 1) =>
    (s: number) =>
      Math.floor(base * scale + rate * scale * s);
  const c32 =
    (rate: number, scale = 1) =>
    (s: number) =>
      Math.floor(base * scale + rate * scale * s) % TWO32;
  const ifT = '1.3.6.1.2.1.2.2.1';
  const col = (c: number, type: SnmpType, f: (x: (typeof ifs)[number]) => MibEntry['value'], table = ifT) => {
    for (const x of ifs) add(`${table}.${c}.${x.idx}`, type, f(x));
  };
  col(1, 'Integer32', (x) => x.idx);
  col(2, 'OctetString', (x) => Buffer.from(x.name));
  col(3, 'Integer32', (x) => (x.name === 'lo' ? 24 : 6));
  col(4, 'Integer32', (x) => (x.name === 'lo' ? 65536 : 1500));
  col(5, 'Gauge32', (x) => Math.min(x.speed, TWO32 - 1));
  col(6, 'OctetString', (x) => x.mac);
  col(7, 'Integer32', () => 1);
  col(8, 'Integer32', (x) => (x.up ? 1 : 2));
  col(9, 'TimeTicks', () => 0);
  col(10, 'Counter32', (x) => c32(x.rate));
  col(11, 'Counter32', (x) => c32(x.rate, 1 / 800));
  col(12, 'Counter32', (x) => c32(x.rate, 1 / 80000));
  col(13, 'Counter32', () => 0);
  col(14, 'Counter32', (x) => (x.up ? (s: number) => Math.floor(s / 60) : 0));
  col(15, 'Counter32', () => 0);
  col(16, 'Counter32', (x) => c32(x.rate, 0.7));
  col(17, 'Counter32', (x) => c32(x.rate, 0.7 / 800));
  col(18, 'Counter32', (x) => c32(x.rate, 0.7 / 80000));
  col(19, 'Counter32', () => 0);
  col(20, 'Counter32', () => 0);
  col(21, 'Gauge32', () => 0);
  col(22, 'ObjectIdentifier', () => '0.0');

  const ifX = '1.3.6.1.2.1.31.1.1.1';
  col(1, 'OctetString', (x) => Buffer.from(x.name), ifX);
  col(2, 'Counter32', (x) => c32(x.rate, 1 / 80000), ifX);
  col(3, 'Counter32', (x) => c32(x.rate, 1 / 160000), ifX);
  col(4, 'Counter32', (x) => c32(x.rate, 0.7 / 80000), ifX);
  col(5, 'Counter32', (x) => c32(x.rate, 0.7 / 160000), ifX);
  col(6, 'Counter64', (x) => c64(x.rate), ifX);
  col(7, 'Counter64', (x) => c64(x.rate, 1 / 800), ifX);
  col(8, 'Counter64', (x) => c64(x.rate, 1 / 80000), ifX);
  col(9, 'Counter64', (x) => c64(x.rate, 1 / 160000), ifX);
  col(10, 'Counter64', (x) => c64(x.rate, 0.7), ifX);
  col(11, 'Counter64', (x) => c64(x.rate, 0.7 / 800), ifX);
  col(12, 'Counter64', (x) => c64(x.rate, 0.7 / 80000), ifX);
  col(13, 'Counter64', (x) => c64(x.rate, 0.7 / 160000), ifX);
  col(14, 'Integer32', () => 1, ifX);
  col(15, 'Gauge32', (x) => Math.floor(x.speed / 1e6), ifX);
  col(16, 'Integer32', () => 2, ifX);
  col(17, 'Integer32', (x) => (x.name === 'lo' ? 2 : 1), ifX);
  col(18, 'OctetString', (x) => Buffer.from(x.name === 'lo' ? '' : `uplink ${x.idx}`), ifX);
  col(19, 'TimeTicks', () => 0, ifX);

  // Addresses: 10.0.<idx>.1/24 per interface, one neighbour 10.0.<idx>.2 on each.
  const ip = (x: (typeof ifs)[number], host: number) => `10.${x.idx >> 8}.${x.idx & 0xff}.${host}`;
  const addrT = '1.3.6.1.2.1.4.20.1';
  const byAddr = [...ifs].sort((a, b) => a.idx - b.idx);
  for (const c of [1, 2, 3, 4]) {
    for (const x of byAddr) {
      const a = ip(x, 1);
      add(`${addrT}.${c}.${a}`, c === 1 || c === 3 ? 'IpAddress' : 'Integer32', c === 1 ? a : c === 2 ? x.idx : c === 3 ? '255.255.255.0' : 1);
    }
  }
  const arp = '1.3.6.1.2.1.4.22.1';
  for (const c of [1, 2, 3, 4]) {
    for (const x of ifs) {
      const a = ip(x, 2);
      const type: SnmpType = c === 1 || c === 4 ? 'Integer32' : c === 2 ? 'OctetString' : 'IpAddress';
      add(`${arp}.${c}.${x.idx}.${a}`, type, c === 1 ? x.idx : c === 2 ? Buffer.from([0x02, 0x42, 0xac, 0x11, x.idx >> 8, x.idx & 0xff]) : c === 3 ? a : 3);
    }
  }
  // tcpConnTable: index localAddress.localPort.remAddress.remPort.
  const conns = [
    ['0.0.0.0', 22, '0.0.0.0', 0, 2],
    ['0.0.0.0', 179, '0.0.0.0', 0, 2],
    ['10.0.1.1', 179, '10.0.1.2', 51234, 5],
    ['10.0.1.1', 22, '192.0.2.10', 40022, 5],
    ['10.0.2.1', 161, '192.0.2.20', 33000, 5],
  ] as const;
  const tcp = '1.3.6.1.2.1.6.13.1';
  for (const c of [1, 2, 3, 4, 5]) {
    for (const [la, lp, ra, rp, st] of conns) {
      const type: SnmpType = c === 2 || c === 4 ? 'IpAddress' : 'Integer32';
      add(`${tcp}.${c}.${la}.${lp}.${ra}.${rp}`, type, [st, la, lp, ra, rp][c - 1]!);
    }
  }
  return e;
}
