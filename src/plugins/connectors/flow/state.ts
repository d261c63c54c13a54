// What the decoders remember between datagrams, per exporter and observation domain: templates,
// data sets waiting for their template, sequence numbers and uptime, sampling rates and interface
// names the exporter announced in options records. Everything here is capped (per exporter and in
// all) and expires, because every key and count in it comes from the network.
import type { Rec } from '../../types.js';
import type { FieldRead, FieldSpec } from './ie.js';

export type FlowProtocol = 'netflow5' | 'netflow9' | 'ipfix' | 'sflow';

export interface Template {
  id: number;
  fields: FieldSpec[];
  /** Options templates: how many of the first fields are scope fields (0: a data template). */
  scopeCount: number;
  /** Bytes of the shortest record (a variable-length field counts its 1-byte length). */
  minLength: number;
  learnedAt: number;
  /** The fields' readers, made at the first data set (netflow.ts). */
  compiled?: { name: string; length: number; keep: boolean; read: FieldRead }[];
  /** Every property a flow record of this template gets, in order, unset (netflow.ts recordShape). */
  shape?: Rec;
}

interface PendingSet {
  templateId: number;
  body: Buffer;
  /** The header fields of the datagram it came in (time base of sysUptime fields). */
  base: Rec;
  uptimeMs?: number;
  unixMs: number;
  at: number;
}

export interface ExporterState {
  key: string;
  address: string;
  protocol: FlowProtocol;
  domain: number;
  templates: Map<number, Template>;
  pending: PendingSet[];
  pendingBytes: number;
  lastSeen: number;
  /** The sequence number the next datagram should carry (unknown at first and after pending data). */
  expected?: number;
  uptimeMs?: number;
  /** Sampling interval announced in options records: exporter-wide, and per sampler / selector id. */
  sampling?: number;
  samplers: Map<number, number>;
  /** IPFIX: the exporter's boot time (systemInitTimeMilliseconds), the base of its sysUpTime fields. */
  systemInitMs?: number;
  /** Interface names announced in options records (ifIndex -> name). */
  interfaceNames: Map<number, string>;
}

export interface FlowLimits {
  /** Exporters (address, protocol, observation domain) remembered; the least recently heard is forgotten. */
  maxExporters: number;
  /** Templates per exporter (and domain). */
  maxTemplatesPerExporter: number;
  /** Templates in all. */
  maxTemplates: number;
  /** A template not refreshed for this long is forgotten (RFC 7011 section 8.4: UDP templates expire). */
  templateTimeoutMs: number;
  /** Data sets waiting for their template, per exporter. */
  maxPendingPerExporter: number;
  /** Bytes of data sets waiting for their template, in all. */
  maxPendingBytes: number;
  /** A data set whose template does not come within this time is dropped. */
  pendingTimeoutMs: number;
  /** Interface names and sampler ids remembered per exporter. */
  maxOptionsPerExporter: number;
}

export const DEFAULT_LIMITS: FlowLimits = {
  maxExporters: 4096,
  maxTemplatesPerExporter: 512,
  maxTemplates: 65_536,
  templateTimeoutMs: 30 * 60_000,
  maxPendingPerExporter: 256,
  maxPendingBytes: 16 * 1024 * 1024,
  pendingTimeoutMs: 10_000,
  maxOptionsPerExporter: 65_536,
};

/** What the decoders report beside records (the source turns them into metrics and logs). */
export interface FlowEvents {
  /** `missing` sequence numbers skipped (flows for v5, records for IPFIX, datagrams for v9 and sFlow). */
  gap?(exporter: string, protocol: FlowProtocol, missing: number): void;
  restart?(exporter: string, protocol: FlowProtocol, why: string): void;
  /** Data that was given up: `reason` is a class (no_template, template_limit, pending_limit, exporter_limit). */
  dropped?(reason: string, n: number, detail: string): void;
}

export class FlowState {
  readonly exporters = new Map<string, ExporterState>();
  templateCount = 0;
  pendingBytes = 0;
  private lastSweep = 0;

  constructor(
    readonly limits: FlowLimits = DEFAULT_LIMITS,
    readonly events: FlowEvents = {},
  ) {}

  /** The state of one exporter and domain, created (evicting the least recently heard at the cap) and marked as heard now. */
  exporter(protocol: FlowProtocol, address: string, domain: number, now: number): ExporterState {
    this.sweep(now);
    const key = `${protocol}|${address}|${domain}`;
    let e = this.exporters.get(key);
    if (e) {
      // Re-inserted so that the map's order is the order last heard (eviction takes the first).
      this.exporters.delete(key);
    } else {
      if (this.exporters.size >= this.limits.maxExporters) {
        const [oldest] = this.exporters.values();
        this.forget(oldest!);
        this.events.dropped?.('exporter_limit', 0, `exporter ${oldest!.address} forgotten: more than ${this.limits.maxExporters} exporters`);
      }
      e = {
        key,
        address,
        protocol,
        domain,
        templates: new Map(),
        pending: [],
        pendingBytes: 0,
        lastSeen: now,
        samplers: new Map(),
        interfaceNames: new Map(),
      };
    }
    e.lastSeen = now;
    this.exporters.set(key, e);
    return e;
  }

  private forget(e: ExporterState): void {
    this.templateCount -= e.templates.size;
    this.pendingBytes -= e.pendingBytes;
    if (e.pending.length) this.events.dropped?.('no_template', e.pending.length, `exporter ${e.address} forgotten with data sets waiting for templates`);
    this.exporters.delete(e.key);
  }

  /** Learns (or replaces) a template; false when a cap refuses it. */
  addTemplate(e: ExporterState, t: Template): boolean {
    const had = e.templates.has(t.id);
    if (!had) {
      if (e.templates.size >= this.limits.maxTemplatesPerExporter || this.templateCount >= this.limits.maxTemplates) {
        this.events.dropped?.('template_limit', 1, `template ${t.id} of ${e.address} refused: template cap reached`);
        return false;
      }
      this.templateCount++;
    }
    e.templates.set(t.id, t);
    return true;
  }

  withdraw(e: ExporterState, id: number | 'all', options?: boolean): void {
    for (const t of [...e.templates.values()]) {
      if (id === 'all' ? options === undefined || t.scopeCount > 0 === options : t.id === id) {
        e.templates.delete(t.id);
        this.templateCount--;
      }
    }
  }

  /** Keeps a data set until its template comes; false when a cap refuses it (counted as dropped). */
  hold(e: ExporterState, p: Omit<PendingSet, 'at'>, now: number): boolean {
    if (e.pending.length >= this.limits.maxPendingPerExporter || this.pendingBytes + p.body.length > this.limits.maxPendingBytes) {
      this.events.dropped?.(
        'pending_limit',
        1,
        `data set for template ${p.templateId} of ${e.address} dropped: the buffer of data waiting for templates is full`,
      );
      return false;
    }
    // A copy: the datagram's buffer is not kept alive for a few bytes of it.
    e.pending.push({ ...p, body: Buffer.from(p.body), at: now });
    e.pendingBytes += p.body.length;
    this.pendingBytes += p.body.length;
    return true;
  }

  /** The data sets waiting for template `id`, taken out of the buffer. */
  takePending(e: ExporterState, id: number): PendingSet[] {
    if (!e.pending.length) return [];
    const taken = e.pending.filter((p) => p.templateId === id);
    if (!taken.length) return taken;
    e.pending = e.pending.filter((p) => p.templateId !== id);
    for (const p of taken) {
      e.pendingBytes -= p.body.length;
      this.pendingBytes -= p.body.length;
    }
    return taken;
  }

  /** Expires templates and waiting data sets, at most once a second. */
  sweep(now: number, force = false): void {
    if (!force && now - this.lastSweep < 1000) return;
    this.lastSweep = now;
    const { templateTimeoutMs, pendingTimeoutMs } = this.limits;
    for (const e of [...this.exporters.values()]) {
      for (const t of [...e.templates.values()]) {
        if (now - t.learnedAt > templateTimeoutMs) {
          e.templates.delete(t.id);
          this.templateCount--;
        }
      }
      if (e.pending.length) {
        const expired = e.pending.filter((p) => now - p.at > pendingTimeoutMs);
        if (expired.length) {
          e.pending = e.pending.filter((p) => now - p.at <= pendingTimeoutMs);
          for (const p of expired) {
            e.pendingBytes -= p.body.length;
            this.pendingBytes -= p.body.length;
          }
          const ids = [...new Set(expired.map((p) => p.templateId))].join(', ');
          this.events.dropped?.(
            'no_template',
            expired.length,
            `${expired.length} data set(s) of ${e.address} dropped: template(s) ${ids} did not come within ${pendingTimeoutMs / 1000} s`,
          );
        }
      }
      if (!e.templates.size && !e.pending.length && now - e.lastSeen > templateTimeoutMs) this.exporters.delete(e.key);
    }
  }

  /** Follows the sequence number of one datagram; `next` is what the following one should carry (undefined: unknown). */
  sequence(e: ExporterState, seq: number, next: number | undefined, uptimeMs?: number): void {
    if (uptimeMs !== undefined && e.uptimeMs !== undefined && uptimeMs < e.uptimeMs) {
      // sysUptime went back: the exporter restarted (nfdump and pmacct detect it so); its sequence starts over.
      this.events.restart?.(e.address, e.protocol, `sysUptime went back from ${e.uptimeMs} to ${uptimeMs} ms`);
    } else if (e.expected !== undefined && seq !== e.expected) {
      const ahead = (seq - e.expected) >>> 0;
      // Back at the start of a stream: 0, or at most this datagram's own count (softflowd 1.1.0 sends
      // IPFIX sequence numbers that already count the message's records, and v9's starts at 1).
      const count = next === undefined ? 0 : (next - seq) >>> 0;
      const atStart = seq === 0 || seq <= count;
      if (ahead < 0x8000_0000) this.events.gap?.(e.address, e.protocol, ahead);
      else if (atStart || (uptimeMs === undefined && 0x1_0000_0000 - ahead > RESTART_BEHIND)) {
        // The sequence started over (or, for IPFIX, which has no uptime, went far back): a restart.
        this.events.restart?.(e.address, e.protocol, `sequence number went back from ${e.expected} to ${seq}`);
      } else {
        // A little behind: a datagram reordered or repeated on the way; neither a gap nor a restart, and the expectation stands.
        if (uptimeMs !== undefined) e.uptimeMs = uptimeMs;
        return;
      }
    }
    if (uptimeMs !== undefined) e.uptimeMs = uptimeMs;
    e.expected = next === undefined ? undefined : next >>> 0;
  }
}

/** How far behind the expected sequence number an IPFIX message must be to count as a restart, not reordering. */
const RESTART_BEHIND = 100_000;
