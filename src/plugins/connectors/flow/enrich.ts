// Interface enrichment (`enrich_interfaces`): each exporter's IF-MIB (ifName, ifAlias, ifHighSpeed)
// polled through the product's one SNMP stack (src/snmp/: SnmpSession, walkSession; the per-agent
// credentials as snmp_poll's, common/snmp.ts), cached per exporter address, polled again after
// `refresh_seconds` and after a detected restart of the exporter, and added to every flow as
// in_if_name, in_if_alias, in_if_speed and out_*. The flows of an exporter whose first poll is
// still running wait for it, bounded twice: at most `wait_seconds` (whatever the poll's own
// deadline, which a slow agent stretches to walks of many timeouts), and at most `maxWaiting` flows
// of all exporters; past either they go on without names, counted
// (svc_flow_enrich_unnamed_total{reason}). An exporter that does not answer has its flows delivered
// without names, with a counted warning. Nothing here can stop the stream: a failed poll is a
// warning and a metric.
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../../core/errors.js';
import type { Logger } from '../../../observability/log.js';
import { SnmpSession, type TargetOptions } from '../../../snmp/session.js';
import { walkSession } from '../../../snmp/walker.js';
import { agentSessionOptions, communityField, perAgentFields, v3Fields, versionField, type SnmpFields } from '../../common/snmp.js';
import { rateLimitedWarn } from '../../connector-runtime/rate-limited-warn.js';
import type { Rec } from '../../types.js';

/** IF-MIB columns (ifXTable): ifName, ifHighSpeed (Mbit/s), ifAlias. */
export const IF_NAME = '1.3.6.1.2.1.31.1.1.1.1';
export const IF_HIGH_SPEED = '1.3.6.1.2.1.31.1.1.1.15';
export const IF_ALIAS = '1.3.6.1.2.1.31.1.1.1.18';

/** Interfaces read from one agent (per column): a table larger than this is cut there. */
export const MAX_INTERFACES = 65_536;
/** Polls running at once (each a UDP socket and up to three walks). */
const MAX_CONCURRENT_POLLS = 16;
/** Bytes kept of one ifName or ifAlias (ifAlias is at most 64 in IF-MIB; an agent may send more). */
const MAX_TEXT = 255;

export const enrichConfig = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 161, description: 'UDP port of the exporters’ SNMP agents.' }),
    community: communityField('SNMPv1/v2c community of the exporters’ agents.'),
    version: versionField("SNMP version: '1', '2c' (GETBULK walks) or '3' (USM: security_name and keys)."),
    ...v3Fields,
    timeout: Type.Number({ exclusiveMinimum: 0, maximum: 60, default: 1, description: 'Seconds to wait for each answer before sending again.' }),
    retries: Type.Integer({ minimum: 0, maximum: 20, default: 1, description: 'Requests sent again after a timeout.' }),
    max_repetitions: Type.Integer({ minimum: 1, maximum: 1000, default: 25, description: 'GETBULK max-repetitions of the IF-MIB walks.' }),
    wait_seconds: Type.Number({
      minimum: 0,
      maximum: 60,
      default: 2,
      description:
        'The flows of an exporter whose interfaces were never read wait this long at most for its first poll (so that the first flows are named too); then they, and its flows until the poll ends, go on without names, counted in svc_flow_enrich_unnamed_total{reason="wait_timeout"}. 0: never wait.',
    }),
    refresh_seconds: Type.Integer({
      minimum: 1,
      default: 3600,
      description:
        'An exporter’s interfaces are polled again this long after the last poll (and at once after it restarts); flows keep the cached names meanwhile. An exporter that did not answer is tried again after the same time.',
    }),
    exporters: Type.Array(
      Type.Object(
        {
          address: Type.String({ minLength: 1, description: 'The exporter, as the flows’ `exporter` field names it (the address its datagrams come from).' }),
          host: Type.Optional(
            Type.String({ minLength: 1, description: 'Where its SNMP agent answers, when not at the exporter’s address (a management address).' }),
          ),
          enabled: Type.Boolean({ default: true, description: 'false: this exporter is not polled (its flows are delivered without interface names).' }),
          ...perAgentFields,
        },
        { additionalProperties: false },
      ),
      {
        default: [],
        description:
          'Exporters whose agent differs from the defaults above (port, community, version, SNMPv3 user, management address); every other exporter is polled at its own address with the defaults.',
      },
    ),
  },
  {
    additionalProperties: false,
    description:
      'Name each flow’s interfaces from its exporter’s IF-MIB (ifName, ifAlias, ifHighSpeed), polled over SNMP, cached and refreshed: adds in_if_name, in_if_alias, in_if_speed (Mbit/s) and the same for out_if. SNMP credentials as in snmp_poll, by default and per exporter. An exporter that does not answer has its flows delivered without names, counted in svc_flow_enrich_failures_total.',
  },
);

export type EnrichConfig = (typeof enrichConfig)['static'];

export interface IfInfo {
  name?: string;
  alias?: string;
  /** ifHighSpeed: Mbit/s. */
  speed?: number;
}

interface Entry {
  ifs?: Map<number, IfInfo>;
  /** When the last poll ended (success or failure). */
  polledAt: number;
  polling?: Promise<void>;
  /** A restart was seen: poll again at the next flow. */
  stale: boolean;
  /** Flows waiting for the first poll, with where they go. */
  waiting: { recs: Rec[]; deliver: (recs: Rec[]) => void }[];
  waitingCount: number;
  /** Ends the wait of `waiting` at wait_seconds after the first of them came. */
  waitTimer?: NodeJS.Timeout;
  /** The wait for the first poll ran out: flows go on at once until the poll ends. */
  waitedOut?: boolean;
}

/** Why flows went on without names while their exporter's first poll was still running. */
export type UnnamedReason = 'wait_timeout' | 'wait_full';

export interface EnrichEvents {
  /** The exporter's agent did not answer or refused (its flows go on without names). */
  failed?(exporter: string, reason: string): void;
  polled?(exporter: string, interfaces: number): void;
  /** `n` flows went on without names before the exporter's first poll ended (wait_seconds ran out, or the wait buffer was full). */
  unnamed?(exporter: string, reason: UnnamedReason, n: number): void;
}

/** Reads `exporter`'s interfaces; `signal` aborts when the source closes (the poll's socket is closed then). */
export type PollInterfaces = (exporter: string, signal: AbortSignal) => Promise<Map<number, IfInfo>>;

const text = (v: unknown): string | undefined =>
  Buffer.isBuffer(v) ? v.subarray(0, MAX_TEXT).toString('utf8').replace(/\0+$/, '') : typeof v === 'string' ? v.slice(0, MAX_TEXT) : undefined;

/** The ifIndex of an instance OID under `column`, or undefined. */
function indexOf(oid: string, column: string): number | undefined {
  if (!oid.startsWith(`${column}.`)) return undefined;
  const rest = oid.slice(column.length + 1);
  if (!/^\d{1,10}$/.test(rest)) return undefined;
  const n = Number(rest);
  return n > 0 && n <= 0x7fffffff ? n : undefined;
}

/** The session options of `exporter`'s agent: its entry of `exporters`, else the defaults at its own address. */
export function agentOf(c: EnrichConfig, exporter: string): TargetOptions | undefined {
  const entry = c.exporters.find((e) => e.address === exporter);
  if (entry && !entry.enabled) return undefined;
  return agentSessionOptions(
    entry?.host ?? exporter,
    (entry ?? {}) as SnmpFields,
    c as SnmpFields & EnrichConfig,
    `flow enrich_interfaces: exporter ${exporter}`,
  );
}

/** Walks ifName, ifAlias and ifHighSpeed of one agent; an abort of `signal` closes its session (the walk fails at once). */
export async function pollInterfaces(opts: TargetOptions, maxRepetitions: number, signal?: AbortSignal): Promise<Map<number, IfInfo>> {
  const session = await SnmpSession.open(opts);
  const abort = () => session.close();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    if (signal?.aborted) throw new Error('the flow source closed');
    const ifs = new Map<number, IfInfo>();
    const at = (i: number) => {
      let x = ifs.get(i);
      if (!x) ifs.set(i, (x = {}));
      return x;
    };
    for (const vb of await walkSession(session, { oid: IF_NAME, maxRepetitions, maxOids: MAX_INTERFACES })) {
      const i = indexOf(vb.oid, IF_NAME);
      const v = text(vb.value);
      if (i !== undefined && v) at(i).name = v;
    }
    for (const vb of await walkSession(session, { oid: IF_ALIAS, maxRepetitions, maxOids: MAX_INTERFACES })) {
      const i = indexOf(vb.oid, IF_ALIAS);
      const v = text(vb.value);
      if (i !== undefined && v) at(i).alias = v;
    }
    for (const vb of await walkSession(session, { oid: IF_HIGH_SPEED, maxRepetitions, maxOids: MAX_INTERFACES })) {
      const i = indexOf(vb.oid, IF_HIGH_SPEED);
      if (i !== undefined && typeof vb.value === 'number') at(i).speed = vb.value;
    }
    if (!ifs.size) throw new Error('the agent has no IF-MIB ifXTable (ifName, ifAlias, ifHighSpeed)');
    return ifs;
  } finally {
    signal?.removeEventListener('abort', abort);
    session.close();
  }
}

/**
 * Adds the interfaces' names, aliases and speeds to one flow (ingressInterface, egressInterface;
 * sFlow counters' ifIndex). The property names are written out, not built (`${prefix}_name`): a
 * computed key per field cost more than decoding the flow (2.2 of 3.2 µs per flow, measured), and
 * flows of one exporter then share V8's hidden classes, which keeps JSON encoding on its fast path.
 */
export function applyInterfaces(rec: Rec, ifs: Map<number, IfInfo>): void {
  const inIf = typeof rec.ingressInterface === 'number' && rec.ingressInterface !== 0 ? ifs.get(rec.ingressInterface) : undefined;
  if (inIf) {
    if (inIf.name !== undefined) rec.in_if_name = inIf.name;
    if (inIf.alias !== undefined) rec.in_if_alias = inIf.alias;
    if (inIf.speed !== undefined) rec.in_if_speed = inIf.speed;
  }
  const outIf = typeof rec.egressInterface === 'number' && rec.egressInterface !== 0 ? ifs.get(rec.egressInterface) : undefined;
  if (outIf) {
    if (outIf.name !== undefined) rec.out_if_name = outIf.name;
    if (outIf.alias !== undefined) rec.out_if_alias = outIf.alias;
    if (outIf.speed !== undefined) rec.out_if_speed = outIf.speed;
  }
  if (rec.flow_type === 'counters' && typeof rec.ifIndex === 'number' && rec.ifIndex !== 0) {
    const x = ifs.get(rec.ifIndex);
    if (x) {
      if (x.name !== undefined) rec.if_name = x.name;
      if (x.alias !== undefined) rec.if_alias = x.alias;
      if (x.speed !== undefined) rec.if_speed = x.speed;
    }
  }
}

export class InterfaceEnricher {
  private readonly cache = new Map<string, Entry>();
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private waitingTotal = 0;
  private closed = false;
  /** Aborted at close(): polls still running close their sessions. */
  private readonly closing = new AbortController();
  private readonly warn;

  constructor(
    private readonly c: EnrichConfig,
    log: Logger,
    private readonly events: EnrichEvents = {},
    private readonly limits = { maxExporters: 4096, maxWaiting: 20_000 },
    private readonly poll: PollInterfaces = async (exporter, signal) => {
      const opts = agentOf(c, exporter);
      if (!opts) return new Map();
      return pollInterfaces(opts, c.max_repetitions, signal);
    },
    private readonly now: () => number = Date.now,
  ) {
    this.warn = rateLimitedWarn(
      log,
      (n, f) =>
        `flow: interfaces of ${n} exporter poll(s) could not be read over SNMP; their flows go on without names. The latest: ${f.exporter}: ${f.reason}`,
    );
  }

  /** Hands `recs` (flows of `exporter`) to `deliver` with their interfaces: now, or when the exporter's first poll ends. */
  enrich(exporter: string, recs: Rec[], deliver: (recs: Rec[]) => void): void {
    let e = this.cache.get(exporter);
    if (!e) {
      if (this.cache.size >= this.limits.maxExporters) {
        // The exporter heard least recently is forgotten (its interfaces are polled again if it comes back).
        const [oldest] = this.cache.keys();
        const old = this.cache.get(oldest!)!;
        this.cache.delete(oldest!);
        this.flush(old);
      }
      e = { polledAt: 0, stale: true, waiting: [], waitingCount: 0 };
    } else this.cache.delete(exporter);
    this.cache.set(exporter, e);
    if (e.stale || this.now() - e.polledAt >= this.c.refresh_seconds * 1000) this.start(exporter, e);
    if (!e.ifs && e.polling) {
      // The first poll is still running: wait for it while the ceilings allow.
      if (e.waitedOut || this.c.wait_seconds === 0) this.events.unnamed?.(exporter, 'wait_timeout', recs.length);
      else if (this.waitingTotal + recs.length > this.limits.maxWaiting) this.events.unnamed?.(exporter, 'wait_full', recs.length);
      else {
        e.waiting.push({ recs, deliver });
        e.waitingCount += recs.length;
        this.waitingTotal += recs.length;
        e.waitTimer ??= setTimeout(() => {
          e.waitTimer = undefined;
          e.waitedOut = true;
          this.events.unnamed?.(exporter, 'wait_timeout', e.waitingCount);
          this.flush(e);
        }, this.c.wait_seconds * 1000).unref();
        return;
      }
    }
    if (e.ifs?.size) for (const r of recs) applyInterfaces(r, e.ifs);
    deliver(recs);
  }

  /** Flows waiting for a first poll, of all exporters (at most limits.maxWaiting). */
  get waiting(): number {
    return this.waitingTotal;
  }

  /** The exporter restarted (its interfaces may have been renumbered): polled again at its next flow. */
  restarted(exporter: string): void {
    const e = this.cache.get(exporter);
    if (e) e.stale = true;
  }

  /** What is cached for `exporter` (tests, the docs' figures). */
  interfaces(exporter: string): Map<number, IfInfo> | undefined {
    return this.cache.get(exporter)?.ifs;
  }

  /** Delivers the waiting flows without names; polls still running end unseen. */
  close(): void {
    this.closed = true;
    this.closing.abort();
    this.warn.stop();
    for (const e of this.cache.values()) this.flush(e);
    this.queue.length = 0;
  }

  private flush(e: Entry): void {
    clearTimeout(e.waitTimer);
    e.waitTimer = undefined;
    const waiting = e.waiting;
    e.waiting = [];
    this.waitingTotal -= e.waitingCount;
    e.waitingCount = 0;
    for (const w of waiting) {
      if (e.ifs?.size) for (const r of w.recs) applyInterfaces(r, e.ifs);
      w.deliver(w.recs);
    }
  }

  private start(exporter: string, e: Entry): void {
    if (e.polling) return;
    e.stale = false;
    e.polling = this.slot()
      .then(async () => {
        if (this.closed) return;
        try {
          e.ifs = await this.poll(exporter, this.closing.signal);
          this.events.polled?.(exporter, e.ifs.size);
        } catch (err) {
          if (this.closed) return;
          const reason = errorMessage(err);
          // Names already known are kept: a device that stops answering keeps its last names.
          e.ifs ??= new Map();
          this.events.failed?.(exporter, reason);
          this.warn.add(1, { connector: 'flow', exporter, reason });
        } finally {
          this.release();
        }
      })
      .finally(() => {
        e.polledAt = this.now();
        e.polling = undefined;
        e.waitedOut = false;
        if (!this.closed) this.flush(e);
      });
  }

  private slot(): Promise<void> {
    if (this.running < MAX_CONCURRENT_POLLS) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((r) => this.queue.push(() => (this.running++, r())));
  }

  private release(): void {
    this.running--;
    this.queue.shift()?.();
  }
}
