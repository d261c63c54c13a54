// Peer fixture for the snmp_trap connector, with net-snmp's own tools on both sides:
// - the sink's peer is Debian's snmptrapd (`snmptrapd -f -Lo -On` with its own config on a free
//   loopback UDP port, started by test/snmp/peers.ts and stopped by its PID): every notification it
//   receives is one line of our -F format on its stdout, parsed back into {source, security,
//   trap OID, varbinds with their types and values};
// - the source's peer is the sender: net-snmp's `snmptrap` and `snmpinform` (v1, v2c, v3).
// Conformance channels are communities: the source takes only its channel's community, and the
// collector of a sink channel keeps only what snmptrapd received with that community.
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { freeUdpPort, run, startSnmptrapd, type Peer as SnmpPeer } from '../../snmp/peers.js';
import type { Cfg, Collector, PeerFixture, Rec } from '../conformance.js';

/** Where conformance bodies travel: one OctetString varbind holding the JSON body. */
export const BODY_OID = '1.3.6.1.4.1.8072.9999.9999.1.0';
export const TRAP_OID = '1.3.6.1.4.1.8072.9999.9999.0.1';
export const SEQ_OID = '1.3.6.1.4.1.8072.9999.9999.2.1';
export const PAD_OID = '1.3.6.1.4.1.8072.9999.9999.2.2';

export interface TrapdVarBind {
  oid: string;
  /** net-snmp's type word: INTEGER, STRING, Hex-STRING, Counter32, Counter64, Gauge32, Timeticks, OID, IpAddress, Opaque... */
  type: string;
  /** INTEGER/Counter/Gauge/Timeticks: the number (Counter64 as a decimal string); STRING unquoted; Hex-STRING lower-case hex; OID numeric. */
  value: string | number;
}

export interface TrapdLine {
  /** `UDP: [127.0.0.1]:40000->[127.0.0.1]:162` */
  transport: string;
  /** v1: the agent-addr field; v2c/v3: the sender's address. */
  agent: string;
  /** `TRAP2, SNMP v2c, community x` / `TRAP2, SNMP v3, user u, context c` / `INFORM2, ...` */
  security: string;
  version: string;
  community?: string;
  user?: string;
  /** v2c/v3: snmpTrapOID.0; v1: enterprise.0.specific (or the generic trap's v2 OID per RFC 3584). */
  trapOid: string;
  /** Without sysUpTime.0 and snmpTrapOID.0. */
  varbinds: TrapdVarBind[];
  /** v1 only. */
  v1?: { enterprise: string; generic: number; specific: number };
}

const FORMAT = 'TRAP\t%B\t%a\t%P\t%N\t%w\t%q\t%V|~|%v\n';

function unquote(s: string): string {
  if (!s.startsWith('"')) return s;
  return s.slice(1, s.endsWith('"') ? -1 : undefined).replace(/\\(.)/g, '$1');
}

function parseVarBind(text: string): TrapdVarBind {
  const eq = text.indexOf(' = ');
  const oid = text.slice(0, eq).replace(/^\./, '');
  const rest = text.slice(eq + 3);
  const colon = rest.indexOf(': ');
  if (colon < 0) return { oid, type: rest.trim() === '""' ? 'STRING' : rest.trim(), value: rest.trim() === '""' ? '' : rest.trim() };
  const type = rest.slice(0, colon);
  const raw = rest.slice(colon + 2).trim();
  let value: string | number = raw;
  if (type === 'STRING') value = unquote(raw);
  else if (type === 'Hex-STRING' || type === 'OPAQUE') value = raw.replace(/\s+/g, '').toLowerCase();
  else if (type === 'Timeticks') value = Number(/\((\d+)\)/.exec(raw)?.[1]);
  else if (type === 'OID') value = raw.replace(/^\./, '');
  else if (type === 'Counter64') value = raw;
  else if (/^(INTEGER|Counter32|Gauge32|UInteger32)$/.test(type)) value = Number(/-?\d+/.exec(raw)?.[0]);
  return { oid, type, value };
}

/** One -F line of snmptrapd; undefined for other output. */
export function parseTrapdLine(line: string): TrapdLine | undefined {
  if (!line.startsWith('TRAP\t')) return undefined;
  const [, transport, agent, security, enterprise, generic, specific, ...rest] = line.split('\t');
  const vbs = rest
    .join('\t')
    .split('|~|')
    .filter((s) => s.length)
    .map(parseVarBind);
  const version = /SNMP v(\w+)/.exec(security!)?.[1] ?? '';
  const community = /community (.*?)(,|$)/.exec(security!)?.[1];
  const user = /user (.*?)(,|$)/.exec(security!)?.[1];
  const out: TrapdLine = {
    transport: transport!,
    agent: agent!,
    security: security!,
    version,
    ...(community !== undefined ? { community } : {}),
    ...(user !== undefined ? { user } : {}),
    trapOid: '',
    varbinds: vbs,
  };
  if (version === '1') {
    const ent = enterprise!.replace(/^\./, '');
    const g = Number(generic);
    const s = Number(String(specific).split('.').pop());
    out.v1 = { enterprise: ent, generic: g, specific: s };
    out.trapOid = g < 6 ? `1.3.6.1.6.3.1.1.5.${g + 1}` : `${ent}.0.${s}`;
  } else {
    out.trapOid = String(vbs.find((v) => v.oid === '1.3.6.1.6.3.1.1.4.1.0')?.value ?? '');
    out.varbinds = vbs.filter((v) => v.oid !== '1.3.6.1.2.1.1.3.0' && v.oid !== '1.3.6.1.6.3.1.1.4.1.0');
  }
  return out;
}

export interface Trapd {
  port: number;
  peer: SnmpPeer;
  /** Everything received so far, in arrival order. */
  traps(): TrapdLine[];
  stop(): Promise<void>;
}

/** snmptrapd on a free loopback port; `conf` adds config lines (createUser ...); an 8 MB receive buffer. */
export async function startTrapd(conf = ''): Promise<Trapd> {
  const peer = await startSnmptrapd(`[snmp] serverRecvBuf 8388608\n${conf}`, ['-n', '-F', FORMAT]);
  const parsed: TrapdLine[] = [];
  let carry = '';
  let consumed = 0;
  const pump = () => {
    const out = peer.output();
    if (out.length === consumed) return;
    const text = carry + out.slice(consumed);
    consumed = out.length;
    const lines = text.split('\n');
    carry = lines.pop()!;
    for (const l of lines) {
      const t = parseTrapdLine(l);
      if (t) parsed.push(t);
    }
  };
  return {
    port: peer.port,
    peer,
    traps() {
      pump();
      return parsed;
    },
    stop: () => peer.stop(),
  };
}

// ---- the sender side: net-snmp's snmptrap and snmpinform ---------------------------------------

export interface CliSecurity {
  version: '1' | '2c' | '3';
  community?: string;
  /** v3 */
  user?: string;
  authProtocol?: string;
  authKey?: string;
  privProtocol?: string;
  privKey?: string;
  /** v3 traps: the sender's engine ID (hex with 0x). */
  engineId?: string;
  context?: string;
}

function securityArgs(s: CliSecurity): string[] {
  if (s.version !== '3') return [`-v${s.version}`, '-c', s.community ?? 'public'];
  const level = s.privKey ? 'authPriv' : s.authKey ? 'authNoPriv' : 'noAuthNoPriv';
  return [
    '-v3',
    '-l',
    level,
    '-u',
    s.user ?? 'svc',
    ...(s.authKey ? ['-a', s.authProtocol ?? 'SHA', '-A', s.authKey] : []),
    ...(s.privKey ? ['-x', s.privProtocol ?? 'AES', '-X', s.privKey] : []),
    ...(s.engineId ? ['-e', s.engineId] : []),
    ...(s.context !== undefined ? ['-n', s.context] : []),
  ];
}

/** `snmptrap` (v2c/v3) of `trapOid` with varbinds [oid, net-snmp type letter, value]. */
export function snmptrap(port: number, s: CliSecurity, trapOid: string, vbs: [string, string, string][] = []): Promise<string> {
  return run('snmptrap', [...securityArgs(s), `127.0.0.1:${port}`, '', trapOid, ...vbs.flat()]);
}

/** `snmptrap -v1`: enterprise, agent address, generic and specific trap. */
export function snmptrapV1(
  port: number,
  community: string,
  enterprise: string,
  agent: string,
  generic: number,
  specific: number,
  vbs: [string, string, string][] = [],
): Promise<string> {
  return run('snmptrap', ['-v1', '-c', community, `127.0.0.1:${port}`, enterprise, agent, String(generic), String(specific), '', ...vbs.flat()]);
}

/** `snmpinform` (v2c/v3): resolves once the receiver acknowledged (the tool exits 0), rejects otherwise. */
export function snmpinform(port: number, s: CliSecurity, trapOid: string, vbs: [string, string, string][] = [], timeoutS = 2, retries = 1): Promise<string> {
  return run('snmpinform', [...securityArgs(s), '-t', String(timeoutS), '-r', String(retries), `127.0.0.1:${port}`, '', trapOid, ...vbs.flat()]);
}

/** Runs `jobs` with at most `n` at a time. */
export async function pool(n: number, jobs: (() => Promise<unknown>)[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, jobs.length) }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
}

// pysnmp (Debian's python3-pysnmp4, snmpsim's own SNMP stack: an implementation independent of
// ours and of net-snmp) encodes one v2c trap per stdin line in one process: snmptrap costs a
// process per trap (about 20 ms here), too slow for the suite's 1,000-trap cases.
const PYSNMP_SENDER = `
import sys, socket
from pysnmp.proto import api
from pyasn1.codec.ber import encoder
m = api.protoModules[api.protoVersion2c]
port, community, trap_oid, body_oid = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = 0
for line in sys.stdin:
    pdu = m.TrapPDU(); m.apiTrapPDU.setDefaults(pdu)
    m.apiTrapPDU.setVarBinds(pdu, [(m.ObjectIdentifier('1.3.6.1.2.1.1.3.0'), m.TimeTicks(n)), (m.ObjectIdentifier('1.3.6.1.6.3.1.1.4.1.0'), m.ObjectIdentifier(trap_oid)), (m.ObjectIdentifier(body_oid), m.OctetString(line.rstrip('\\n')))])
    msg = m.Message(); m.apiMessage.setDefaults(msg); m.apiMessage.setCommunity(msg, community); m.apiMessage.setPDU(msg, pdu)
    s.sendto(encoder.encode(msg), ('127.0.0.1', port))
    n += 1
print(n)
`;

/** Every body as one v2c trap (community = channel) with the JSON body in one OctetString varbind (pysnmp). */
export function publishBodies(port: number, community: string, bodies: Buffer[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/usr/bin/python3', ['-c', PYSNMP_SENDER, String(port), community, TRAP_OID, BODY_OID], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 && Number(out.trim()) === bodies.length ? resolve() : reject(new Error(`pysnmp sender: exit ${code}: ${out}`))));
    p.stdin.end(bodies.map((b) => b.toString() + '\n').join(''));
  });
}

/** A UDP socket bound to a loopback port, so that nobody else can listen there. */
export async function holdUdpPort(): Promise<Socket & { port: number }> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return Object.assign(s, { port: s.address().port });
}

/** Records of a sink channel: the traps snmptrapd received with that community, `seq` and `pad` from their varbinds. */
export function trapdRecords(trapd: Trapd, community: string): Rec[] {
  return trapd
    .traps()
    .filter((t) => t.community === community)
    .map((t) => {
      const r: Rec = {};
      for (const v of t.varbinds) {
        if (v.oid === SEQ_OID) r.seq = v.value;
        else if (v.oid === PAD_OID) r.pad = v.value;
      }
      return r;
    });
}

export const snmpTrap: PeerFixture = {
  type: 'snmp_trap',
  badConfig: { role: 'sink', set: { version: '4' }, path: 'version' },
  async start() {
    const trapd = await startTrapd();
    const sourcePort = await freeUdpPort();
    const busy = await holdUdpPort();
    const closed = await freeUdpPort();
    return {
      source: {
        config: (ch: string): Cfg => ({ type: 'snmp_trap', host: '127.0.0.1', port: sourcePort, community: ch, resolve_oids: false }),
        publish: (ch, bodies) => publishBodies(sourcePort, ch, bodies),
        transforms: [{ type: 'json_flatten', field: BODY_OID }],
      },
      sink: {
        config: (ch: string): Cfg => ({
          type: 'snmp_trap',
          host: '127.0.0.1',
          port: trapd.port,
          community: ch,
          trap_oid: TRAP_OID,
          varbinds: [
            { oid: SEQ_OID, value_field: 'seq', type: 'Integer32' },
            { oid: PAD_OID, value_field: 'pad', type: 'OctetString' },
          ],
        }),
        async collect(ch: string): Promise<Collector> {
          return { records: () => trapdRecords(trapd, ch), close: async () => {} };
        },
      },
      // The source's wrong port is one another socket holds (it cannot listen there); the sink's is
      // one where nothing listens (ICMP port unreachable).
      wrongPort: (cfg: Cfg) => ({ ...cfg, port: cfg.trap_oid ? closed : busy.port }),
      noCredentials:
        'SNMPv1/v2c receivers drop a trap with a wrong community silently and a trap source has no peer to authenticate to (its check binds its own port); wrong SNMPv3 keys are tested in snmp_trap.test.ts as dropped notifications and unacknowledged informs',
      async stop() {
        busy.close();
        await trapd.stop();
      },
    };
  },
};
