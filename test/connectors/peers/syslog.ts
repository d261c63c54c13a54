// Peer fixtures for the syslog source: util-linux `logger` sending RFC 5424 (and RFC 3164) over
// UDP and TCP (octet-counted or LF-framed) to the source's port, and Debian's rsyslogd started
// with a config of its own (imtcp input on a free port, omfwd forwarding octet-counted TCP to us),
// its own work directory and PID file, killed by its PID.
//
// The source listens, so every conformance channel is a port of its own: config(channel) takes the
// next free port (UDP and TCP both free), publish(channel) sends there.
import { spawn } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cfg, Peer, PeerFixture } from '../conformance.js';
import { peerProcess, type PeerProcess } from './process.js';
import { pace } from '../../helpers/wait.js';

/** A loopback port free for both TCP and UDP a moment ago. */
export async function freeSyslogPort(): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const udp = createSocket('udp4');
    const ok = await new Promise<boolean>((r) => {
      udp.once('error', () => r(false));
      udp.bind(port, '127.0.0.1', () => r(true));
    });
    await new Promise<void>((r) => udp.close(() => r()));
    await new Promise<void>((r) => server.close(() => r()));
    if (ok) return port;
  }
}

/** Holds `port` on 127.0.0.1 for TCP and UDP (a port in use, for test()). */
export async function holdPort(): Promise<{ port: number; release(): Promise<void> }> {
  const port = await freeSyslogPort();
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  const udp: UdpSocket = createSocket('udp4');
  await new Promise<void>((r) => udp.bind(port, '127.0.0.1', () => r()));
  return {
    port,
    async release() {
      await new Promise<void>((r) => udp.close(() => r()));
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export interface LoggerOptions {
  protocol: 'udp' | 'tcp';
  /** RFC 5424 (default) or RFC 3164. */
  format?: 'rfc5424' | 'rfc3164';
  octetCount?: boolean;
  tag?: string;
  extra?: string[];
}

/** Runs util-linux `logger`, one message per line of `lines` (stdin), to 127.0.0.1:`port`. */
export function logger(port: number, lines: string[], o: LoggerOptions): Promise<void> {
  const args = [
    o.format === 'rfc3164' ? '--rfc3164' : '--rfc5424',
    o.protocol === 'tcp' ? '--tcp' : '--udp',
    ...(o.octetCount ? ['--octet-count'] : []),
    '-n',
    '127.0.0.1',
    '-P',
    String(port),
    '-t',
    o.tag ?? 'conf',
    // Lines up to 64 KiB (logger's default cuts at 1 KiB).
    '-S',
    '65536',
    ...(o.extra ?? []),
  ];
  return new Promise((resolve, reject) => {
    const p = spawn('logger', args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`logger ${args.join(' ')} exited ${code}: ${err}`))));
    p.stdin.end(lines.map((l) => l + '\n').join(''));
  });
}

/**
 * UDP into a listener that also runs a pipeline: logger sends as fast as it can, and a burst of
 * a thousand datagrams can outrun a busy event loop. Pieces of 100 with a short pause between
 * them keep the test about the connector, not about the kernel's buffer.
 */
async function loggerPaced(port: number, lines: string[], o: LoggerOptions): Promise<void> {
  if (o.protocol === 'tcp') return logger(port, lines, o);
  for (let i = 0; i < lines.length; i += 100) {
    await logger(port, lines.slice(i, i + 100), o);
    await pace(20);
  }
}

export interface Rsyslog {
  /** imtcp input port: send into it with logger --tcp. */
  inPort: number;
  pid(): number;
  stop(): Promise<void>;
}

/**
 * A private rsyslogd: imtcp on a free loopback port, forwarding every message to
 * 127.0.0.1:`forwardPort` over TCP with octet-counted framing in RFC 5424 (its
 * RSYSLOG_SyslogProtocol23Format template). Its own config, work directory and PID file.
 */
export async function startRsyslog(forwardPort: number, opts: { framing?: 'octet-counted' | 'traditional' } = {}): Promise<Rsyslog> {
  // Not test/helpers/fs.ts: the bench imports this module outside vitest.
  const dir = mkdtempSync(join(tmpdir(), 'svc-rsyslog-'));
  const work = join(dir, 'work');
  mkdirSync(work);
  const inPort = await freeSyslogPort();
  const cfg = join(dir, 'rsyslog.conf');
  writeFileSync(
    cfg,
    `global(workDirectory="${work}")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="${inPort}")
action(type="omfwd" target="127.0.0.1" port="${forwardPort}" protocol="tcp" TCP_Framing="${opts.framing ?? 'octet-counted'}" template="RSYSLOG_SyslogProtocol23Format"
       action.resumeRetryCount="-1" action.resumeInterval="1")
`,
  );
  const proc: PeerProcess = peerProcess('rsyslogd', ['-n', '-f', cfg, '-i', join(dir, 'rsyslogd.pid')], inPort, { name: 'rsyslogd' });
  await proc.start();
  return {
    inPort,
    pid: proc.pid,
    async stop() {
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The transforms that bring a published JSON body back to the top of the record: it is the syslog MSG. */
export const bodyTransforms: Cfg[] = [{ type: 'json_flatten', field: 'message' }];

function fixture(protocol: 'udp' | 'tcp'): PeerFixture {
  return {
    type: 'syslog',
    label: protocol,
    badConfig: { role: 'source', set: { protocol: 'sctp' }, path: 'protocol' },
    async start(): Promise<Peer> {
      const held = await holdPort();
      // Ports for the channels, taken ahead (config() is synchronous).
      const pool: number[] = [];
      for (let i = 0; i < 24; i++) {
        let p = await freeSyslogPort();
        while (pool.includes(p) || p === held.port) p = await freeSyslogPort();
        pool.push(p);
      }
      const ports = new Map<string, number>();
      const portOf = (channel: string) => {
        let p = ports.get(channel);
        if (p === undefined) {
          p = pool.shift();
          if (p === undefined) throw new Error('syslog fixture: out of pre-allocated ports');
          ports.set(channel, p);
        }
        return p;
      };
      return {
        source: {
          config: (channel) => ({
            type: 'syslog',
            host: '127.0.0.1',
            port: portOf(channel),
            protocol,
            // UDP: a receive buffer that absorbs a burst of 1,000 datagrams (rmem_max here is 4 MiB).
            ...(protocol === 'udp' ? { buffer_size: 4 * 1024 * 1024 } : {}),
          }),
          // RFC 5424 with the JSON body as MSG: over UDP, or TCP with octet counting.
          publish: (channel, bodies) =>
            loggerPaced(
              portOf(channel),
              bodies.map((b) => b.toString()),
              { protocol, octetCount: protocol === 'tcp' },
            ),
          transforms: bodyTransforms,
          // The socket is bound when the source reports `connected`.
          settleMs: 50,
        },
        // A port held by another socket: the listening source cannot bind it.
        wrongPort: (cfg) => ({ ...cfg, port: held.port }),
        noCredentials: 'syslog has no authentication (RFC 5424/5426/6587); TLS (RFC 5425) is not part of the spec',
        async stop() {
          await held.release();
        },
      };
    },
  };
}

export const syslogUdp = fixture('udp');
export const syslogTcp = fixture('tcp');
