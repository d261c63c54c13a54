// Source `flow` (stream, UDP): a NetFlow v5, NetFlow v9 (RFC 3954), IPFIX (RFC 7011) and sFlow v5
// collector. Each datagram is decoded here (decode.ts) into one record per flow, named with IANA's
// information element names; a datagram that does not decode goes to the DLQ at stage parse with
// the reason and its bytes, and the stream goes on. Templates, data waiting for templates and
// sequence numbers are kept per exporter and observation domain, capped and expiring (state.ts).
// UDP cannot be slowed down: while the pipeline is behind (HIGH_WATER flows queued) datagrams are
// dropped and counted, as syslog and snmp_trap do. Built on streamSource(): at-most-once.
import { isIPv6 } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError } from '../../../core/errors.js';
import { bindUdp } from '../../../snmp/udp.js';
import { listenError } from '../../connector-runtime/listen.js';
import { rateLimitedWarn } from '../../connector-runtime/rate-limited-warn.js';
import { warnIfRecvBufferCapped } from '../../connector-runtime/udp-buffer.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type PluginContext, type Rec } from '../../types.js';
import { decodeFlowDatagram } from './decode.js';
import { enrichConfig, InterfaceEnricher } from './enrich.js';
import { flowMetrics } from './metrics.js';
import { FlowDecodeError } from './reader.js';
import { DEFAULT_LIMITS, FlowState, type FlowLimits } from './state.js';

/** Most flows in one unit. */
const MAX_BATCH = 1000;
/** Queued flows above which arriving datagrams are dropped (UDP senders cannot be slowed down). */
export const HIGH_WATER = 20_000;

/** The IANA-registered ports: NetFlow 2055 (Cisco's usual), IPFIX 4739 (RFC 7011), sFlow 6343. */
export const DEFAULT_PORTS = { netflow5: 2055, netflow9: 2055, ipfix: 4739, sflow: 6343, auto: 2055 } as const;

const config = Type.Object(
  {
    protocol: Type.Union([Type.Literal('auto'), Type.Literal('netflow5'), Type.Literal('netflow9'), Type.Literal('ipfix'), Type.Literal('sflow')], {
      default: 'auto',
      description:
        'Flow format taken on the port: netflow5, netflow9, ipfix, sflow, or auto (every one, told apart by the version at the head of each datagram). A datagram of another format is dead-lettered.',
    }),
    host: Type.String({
      default: '0.0.0.0',
      minLength: 1,
      description: 'Address to listen on: 0.0.0.0 (every IPv4 interface), :: (IPv6 and IPv4), or one address of this machine.',
    }),
    port: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        description: 'UDP port to listen on. Default by protocol: 2055 (netflow5, netflow9, auto), 4739 (ipfix, IANA), 6343 (sflow, IANA).',
      }),
    ),
    scale_by_sampling: Type.Boolean({
      default: false,
      description:
        'Multiply octetDeltaCount and packetDeltaCount by the flow’s samplingInterval (from the v5 header, the exporter’s options records or the sFlow sample), as nfdump -S and pmacct do, so that totals estimate the traffic seen. Every record carries samplingInterval either way.',
    }),
    buffer_size: Type.Integer({
      minimum: 1024,
      default: 4_194_304,
      description:
        'The socket receive buffer in bytes (SO_RCVBUF), which absorbs bursts of datagrams; the kernel caps it at net.core.rmem_max (a warning says so: raise it with sysctl).',
    }),
    template_timeout_seconds: Type.Integer({
      minimum: 1,
      default: 1800,
      description: 'A template (NetFlow v9, IPFIX) not sent again for this long is forgotten, as RFC 7011 section 8.4 asks of a UDP collector.',
    }),
    pending_timeout_seconds: Type.Integer({
      minimum: 0,
      default: 10,
      description:
        'Data sets that arrive before their template are held this long for it, then dropped and counted (reason no_template). 0 drops them at once.',
    }),
    max_exporters: Type.Integer({
      minimum: 1,
      default: DEFAULT_LIMITS.maxExporters,
      description: 'Exporters (address and observation domain) remembered at once; past it the one heard least recently is forgotten with its templates.',
    }),
    max_templates_per_exporter: Type.Integer({
      minimum: 1,
      default: DEFAULT_LIMITS.maxTemplatesPerExporter,
      description: 'Templates one exporter (and observation domain) may define; further ones are refused and counted (template_limit).',
    }),
    max_pending_per_exporter: Type.Integer({
      minimum: 0,
      default: DEFAULT_LIMITS.maxPendingPerExporter,
      description:
        'Data sets held for a template per exporter; further ones are dropped and counted (pending_limit). The bytes held in all are capped at 16 MiB.',
    }),
    enrich_interfaces: Type.Optional(enrichConfig),
    max_queue_size: Type.Integer({
      minimum: 1,
      default: HIGH_WATER,
      description:
        'Flows received but not yet handed to the pipeline; while it is full, arriving datagrams are dropped, counted and logged (at most one warning per 10 s).',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

export const portOf = (c: Pick<Config, 'protocol' | 'port'>) => c.port ?? DEFAULT_PORTS[c.protocol];
const where = (c: Config) => `udp ${isIPv6(c.host) ? `[${c.host}]` : c.host}:${portOf(c)}`;

/** What a running source has counted (tests and logs). */
export interface FlowStats {
  datagrams: number;
  flows: number;
  malformed: number;
  dropped: number;
  gaps: number;
  restarts: number;
  /** Polls of an exporter's interfaces (enrich_interfaces) that failed. */
  enrichFailures: number;
  /** Flows that went on without interface names before their exporter's first poll ended (wait_seconds, the wait's ceiling). */
  enrichUnnamed: number;
}

const limitsOf = (c: Config): FlowLimits => ({
  ...DEFAULT_LIMITS,
  maxExporters: c.max_exporters,
  maxTemplatesPerExporter: c.max_templates_per_exporter,
  maxPendingPerExporter: c.max_pending_per_exporter,
  templateTimeoutMs: c.template_timeout_seconds * 1000,
  pendingTimeoutMs: c.pending_timeout_seconds * 1000,
});

/** Bytes and packets times the sampling rate (scale_by_sampling). */
function scale(rec: Rec): void {
  const k = rec.samplingInterval;
  if (typeof k !== 'number' || k <= 1) return;
  for (const f of ['octetDeltaCount', 'packetDeltaCount']) if (typeof rec[f] === 'number') rec[f] = (rec[f] as number) * k;
}

const bindError = (e: unknown, c: Config): SourceError =>
  listenError(e, c.host, where(c), 'another flow collector such as nfcapd or pmacct, or another pipeline');

async function listen(c: Config, ctx: PluginContext, push: (m: Message) => void, stats: FlowStats): Promise<Session<Message>> {
  const log = ctx.log;
  const telemetry = ctx.telemetry;
  const gaps = telemetry?.metric?.('svc_flow_sequence_gaps_total');
  const restarts = telemetry?.metric?.('svc_flow_exporter_restarts_total');
  const enrichFailures = telemetry?.metric?.('svc_flow_enrich_failures_total');
  const enrichUnnamed = telemetry?.metric?.('svc_flow_enrich_unnamed_total');
  const malformed = rateLimitedWarn(log, (n, f) => `flow: ${n} datagram(s) did not decode and were dead-lettered; the latest: ${f.reason}`);
  const drops = rateLimitedWarn(log, (n, f) => `flow: ${n} datagram(s) or data set(s) dropped (${f.reason}): ${f.detail}`);
  const state = new FlowState(limitsOf(c), {
    gap(exporter, _protocol, missing) {
      stats.gaps += missing;
      gaps?.inc({ exporter }, missing);
    },
    restart(exporter, protocol, why) {
      stats.restarts++;
      enricher?.restarted(exporter);
      restarts?.inc({ exporter });
      log.info({ connector: 'flow', exporter, protocol, why }, `flow: exporter ${exporter} restarted (${why})`);
    },
    dropped(reason, n, detail) {
      if (n > 0) telemetry?.dropped?.(reason, n);
      drops.add(Math.max(n, 1), { connector: 'flow', reason, detail });
    },
  });
  const enricher =
    c.enrich_interfaces &&
    new InterfaceEnricher(
      c.enrich_interfaces,
      log,
      {
        failed(exporter) {
          stats.enrichFailures++;
          enrichFailures?.inc({ exporter });
        },
        unnamed(exporter, reason, n) {
          stats.enrichUnnamed += n;
          enrichUnnamed?.inc({ exporter, reason }, n);
        },
      },
      { maxExporters: c.max_exporters, maxWaiting: c.max_queue_size },
    );
  let dropping = false;
  const empty = Buffer.alloc(0);
  const deliver = (msg: Buffer) => (records: Rec[]) => {
    for (let i = 0; i < records.length; i++) {
      const rec = records[i]!;
      if (c.scale_by_sampling) scale(rec);
      push({ body: i === 0 ? msg : empty, record: rec });
    }
  };
  const socket = await bindUdp(c.host, portOf(c), c.buffer_size, (msg, rinfo) => {
    if (dropping) {
      if (ctx.signal.aborted) return;
      stats.dropped++;
      telemetry?.dropped?.('queue_full', 1);
      drops.add(1, { connector: 'flow', reason: 'queue_full', detail: `the pipeline is ${c.max_queue_size} flows behind (UDP senders cannot be slowed down)` });
      return;
    }
    stats.datagrams++;
    // An IPv4 exporter seen on a dual-stack socket is named by its IPv4 address.
    const exporter = rinfo.address.startsWith('::ffff:') && rinfo.address.includes('.') ? rinfo.address.slice(7) : rinfo.address;
    let records: Rec[];
    try {
      records = decodeFlowDatagram(msg, exporter, state, c.protocol);
    } catch (e) {
      const reason = e instanceof FlowDecodeError ? e.message : `decoder failed: ${(e as Error).message}`;
      stats.malformed++;
      malformed.add(1, { connector: 'flow', exporter, reason });
      push({ body: msg, error: `flow datagram from ${exporter}: ${reason}` });
      return;
    }
    stats.flows += records.length;
    // The datagram's bytes ride on its first flow (bytes_in); a datagram of templates only still counts them.
    if (!records.length) return;
    if (enricher) enricher.enrich(exporter, records, deliver(msg));
    else deliver(msg)(records);
  });
  // Data sets held for a template expire even when the exporter has gone quiet.
  const sweeper = setInterval(() => state.sweep(Date.now()), 1000).unref();
  warnIfRecvBufferCapped(socket, c.buffer_size, 'flow', log);
  return {
    pause() {
      dropping = true;
    },
    resume() {
      dropping = false;
    },
    async close() {
      clearInterval(sweeper);
      enricher?.close();
      malformed.stop();
      drops.stop();
      await new Promise<void>((r) => socket.close(() => r()));
    },
  };
}

export default defineSource({
  key: 'flow',
  summary: 'Collect NetFlow v5, NetFlow v9, IPFIX and sFlow v5 over UDP: one record per flow, fields named with IANA’s IPFIX information elements.',
  mode: 'stream',
  status: 'beta',
  delivery: {
    guarantee: 'at-most-once',
    why: 'flow exporters send UDP datagrams that cannot be asked for again: one lost on the network, sent while the source is stopped, or dropped while the pipeline is behind is gone (sequence gaps are counted in svc_flow_sequence_gaps_total).',
  },
  config,
  metrics: flowMetrics,
  resources: (c) => [{ kind: 'listen', protocol: 'udp', host: c.host, port: portOf(c), name: 'flow' }],
  examples: [
    { title: 'Every format on the NetFlow port', yaml: 'type: flow\nprotocol: auto\nport: 2055' },
    { title: 'IPFIX on its IANA port, bytes and packets scaled by the sampling rate', yaml: 'type: flow\nprotocol: ipfix\nscale_by_sampling: true' },
    { title: 'sFlow from switches, a large receive buffer', yaml: 'type: flow\nprotocol: sflow\nport: 6343\nbuffer_size: 16777216' },
  ],
  async test(c) {
    // Binds briefly and releases: proves the address and port are free and allowed.
    let s;
    try {
      s = await bindUdp(c.host, portOf(c), 1 << 16, () => {});
    } catch (e) {
      throw bindError(e, c);
    }
    await new Promise<void>((r) => s.close(() => r()));
  },
  create(c, ctx) {
    const stats: FlowStats = { datagrams: 0, flows: 0, malformed: 0, dropped: 0, gaps: 0, restarts: 0, enrichFailures: 0, enrichUnnamed: 0 };
    const source = streamSource<Message>(ctx, {
      type: 'flow',
      // A port that cannot be bound (in use, privileged) is tried a few times, then the run fails.
      reconnect: { reconnect_delay_seconds: 1, max_reconnect_attempts: 3 },
      acknowledges: false,
      maxBatch: Math.min(MAX_BATCH, c.max_queue_size),
      highWater: c.max_queue_size,
      async connect({ push }) {
        try {
          return await listen(c, ctx, push, stats);
        } catch (e) {
          throw e instanceof SourceError ? e : bindError(e, c);
        }
      },
    });
    return Object.assign(source, { stats });
  },
});
