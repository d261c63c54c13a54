// NetFlow v5 (Cisco's fixed format), NetFlow v9 (RFC 3954) and IPFIX (RFC 7011) decoders: pure
// functions of a datagram, its exporter and the FlowState (templates and sequence numbers per
// exporter and observation domain). A datagram that breaks its format throws FlowDecodeError with
// the reason; nothing of it is emitted then, and no template it carried is learned.
import type { Rec } from '../../types.js';
import { checkFieldLength, fieldSpec, ipv4, isoMs, readerOf, VARIABLE_LENGTH, type FieldSpec } from './ie.js';
import { FlowDecodeError, Reader } from './reader.js';
import type { ExporterState, FlowState, Template } from './state.js';

/** Most records decoded from one datagram: a template of 1-byte records would make 65,000 of them. */
export const MAX_RECORDS_PER_DATAGRAM = 8192;

const V5_HEADER = 24;
const V5_RECORD = 48;
/** Cisco's limit: a v5 datagram carries at most 30 flows. */
const V5_MAX_COUNT = 30;

/** The v5 record as IANA elements (docs/connectors/flow.md lists the mapping). */
export function decodeNetflow5(buf: Buffer, exporter: string, state: FlowState, now: number): Rec[] {
  const r = new Reader(buf);
  r.skip(2, 'version');
  const count = r.u16('count');
  if (count === 0 || count > V5_MAX_COUNT) throw new FlowDecodeError(`NetFlow v5: count ${count} is outside 1-${V5_MAX_COUNT}`);
  if (buf.length < V5_HEADER + count * V5_RECORD)
    throw new FlowDecodeError(`truncated: NetFlow v5 count ${count} needs ${V5_HEADER + count * V5_RECORD} bytes, the datagram has ${buf.length}`);
  const uptime = r.u32('sysUptime');
  const secs = r.u32('unix_secs');
  const nsecs = r.u32('unix_nsecs');
  const seq = r.u32('flow_sequence');
  const engineType = r.u8('engine_type');
  const engineId = r.u8('engine_id');
  const sampling = r.u16('sampling_interval');
  // The top two bits are the sampling mode, the other 14 the interval (0: not sampled).
  const interval = sampling & 0x3fff || 1;
  const e = state.exporter('netflow5', exporter, (engineType << 8) | engineId, now);
  state.sequence(e, seq, seq + count, uptime);
  const unixMs = secs * 1000 + Math.floor(nsecs / 1e6);
  const out: Rec[] = [];
  for (let i = 0; i < count; i++) {
    const at = V5_HEADER + i * V5_RECORD;
    const first = buf.readUInt32BE(at + 24);
    const last = buf.readUInt32BE(at + 28);
    out.push({
      flow_protocol: 'netflow5',
      exporter,
      engineType,
      engineId,
      samplingInterval: interval,
      sourceIPv4Address: ipv4(buf, at),
      destinationIPv4Address: ipv4(buf, at + 4),
      ipNextHopIPv4Address: ipv4(buf, at + 8),
      ingressInterface: buf.readUInt16BE(at + 12),
      egressInterface: buf.readUInt16BE(at + 14),
      packetDeltaCount: buf.readUInt32BE(at + 16),
      octetDeltaCount: buf.readUInt32BE(at + 20),
      flowStartSysUpTime: first,
      flowEndSysUpTime: last,
      flowStartMilliseconds: isoAt(unixMs, uptime, first),
      flowEndMilliseconds: isoAt(unixMs, uptime, last),
      sourceTransportPort: buf.readUInt16BE(at + 32),
      destinationTransportPort: buf.readUInt16BE(at + 34),
      tcpControlBits: buf[at + 37],
      protocolIdentifier: buf[at + 38],
      ipClassOfService: buf[at + 39],
      bgpSourceAsNumber: buf.readUInt16BE(at + 40),
      bgpDestinationAsNumber: buf.readUInt16BE(at + 42),
      sourceIPv4PrefixLength: buf[at + 44],
      destinationIPv4PrefixLength: buf[at + 45],
    });
  }
  return out;
}

/** The wall-clock time of a sysUptime value, from the header's time and uptime (as nfdump computes it). */
function isoAt(unixMs: number, uptimeMs: number, atUptime: number): string {
  // Unsigned 32-bit difference: a flow that began before the uptime counter wrapped is still in the past.
  const ago = (uptimeMs - atUptime) | 0;
  const ms = unixMs - ago;
  return isoMs(Number.isFinite(ms) && ms > 0 && ms < 8.64e15 ? ms : 0);
}

interface Header {
  protocol: 'netflow9' | 'ipfix';
  base: Rec;
  unixMs: number;
  uptimeMs?: number;
}

/** Template and options template sets parsed, checked whole before any is learned. */
type TemplateOp = { kind: 'define'; t: Template } | { kind: 'withdraw'; id: number | 'all'; options?: boolean };

function readFields(r: Reader, n: number, ipfix: boolean, where: string): FieldSpec[] {
  r.need(n * 4, `${where}: ${n} field specifiers`);
  const fields: FieldSpec[] = [];
  for (let i = 0; i < n; i++) {
    let id = r.u16('field type');
    const length = r.u16('field length');
    let enterprise = 0;
    if (ipfix && id & 0x8000) {
      id &= 0x7fff;
      enterprise = r.u32('enterprise number');
    }
    if (!ipfix && length === VARIABLE_LENGTH) throw new FlowDecodeError(`${where}: NetFlow v9 has no variable-length fields (field ${id} of length 65535)`);
    const f = fieldSpec(id, enterprise, length);
    checkFieldLength(f, where);
    fields.push(f);
  }
  return fields;
}

const minLengthOf = (fields: FieldSpec[]) => fields.reduce((n, f) => n + (f.length === VARIABLE_LENGTH ? 1 : f.length), 0);

function parseTemplateSet(r: Reader, setId: number, ipfix: boolean, now: number, ops: TemplateOp[]): void {
  const options = ipfix ? setId === 3 : setId === 1;
  // A set ends in padding shorter than a template header.
  while (r.left >= 4) {
    const id = r.u16('template id');
    const where = `${options ? 'options template' : 'template'} ${id}`;
    if (ipfix) {
      const count = r.u16('field count');
      if (count === 0) {
        // RFC 7011 section 8.1: a template withdrawal; id 2 (or 3) withdraws every (options) template.
        if (id === setId) ops.push({ kind: 'withdraw', id: 'all', options });
        else if (id >= 256) ops.push({ kind: 'withdraw', id });
        else throw new FlowDecodeError(`${where}: a withdrawal of template id ${id}, below 256`);
        continue;
      }
      if (id < 256) throw new FlowDecodeError(`${where}: template ids start at 256`);
      let scope = 0;
      if (options) {
        scope = r.u16('scope field count');
        if (scope === 0 || scope > count) throw new FlowDecodeError(`${where}: scope field count ${scope} of ${count} fields`);
      }
      const fields = readFields(r, count, true, where);
      ops.push({ kind: 'define', t: { id, fields, scopeCount: scope, minLength: minLengthOf(fields), learnedAt: now } });
    } else if (options) {
      const scopeLen = r.u16('option scope length');
      const optLen = r.u16('option length');
      if (scopeLen % 4 || optLen % 4) throw new FlowDecodeError(`${where}: scope length ${scopeLen} and option length ${optLen} must be multiples of 4`);
      if (id < 256) throw new FlowDecodeError(`${where}: template ids start at 256`);
      const scopes: FieldSpec[] = [];
      r.need(scopeLen + optLen, `${where}: scope and option fields`);
      for (let i = 0; i < scopeLen / 4; i++) {
        // v9 scope types (RFC 3954 section 6.1): 1 system, 2 interface, 3 line card, 4 cache, 5 template.
        const type = r.u16('scope type');
        const length = r.u16('scope length');
        if (length === 0) throw new FlowDecodeError(`${where}: scope field ${type} has length 0`);
        scopes.push({
          id: type,
          enterprise: 0,
          length,
          name: ['', 'scopeSystem', 'ingressInterface', 'lineCardId', 'cacheId', 'templateId'][type] ?? `scope${type}`,
          type: type === 2 ? 'unsigned' : 'octets',
        });
      }
      const fields = readFields(r, optLen / 4, false, where);
      if (!scopes.length && !fields.length) throw new FlowDecodeError(`${where}: no fields`);
      const all = [...scopes, ...fields];
      ops.push({ kind: 'define', t: { id, fields: all, scopeCount: Math.max(scopes.length, 1), minLength: minLengthOf(all), learnedAt: now } });
      // Options templates are padded to 4 bytes on their own.
      if (r.left < 4) r.pos = r.end;
    } else {
      const count = r.u16('field count');
      if (id < 256) throw new FlowDecodeError(`${where}: template ids start at 256`);
      if (count === 0) throw new FlowDecodeError(`${where}: a template of no fields`);
      const fields = readFields(r, count, false, where);
      ops.push({ kind: 'define', t: { id, fields, scopeCount: 0, minLength: minLengthOf(fields), learnedAt: now } });
    }
  }
}

interface DataSet {
  id: number;
  body: Buffer;
  /** The header of the datagram it came in (a held set decodes with its own). */
  h: Pick<Header, 'base' | 'unixMs' | 'uptimeMs'>;
  held?: boolean;
}

/** The fields of a template with their readers (readerOf), made once per template. */
function compiled(t: Template): NonNullable<Template['compiled']> {
  return (t.compiled ??= t.fields.map((f) => ({ name: f.name, length: f.length, keep: f.id !== 210 || f.enterprise !== 0, read: readerOf(f) })));
}

/**
 * A data record of `t` from `base` (flow_protocol, exporter, observationDomainId) before its fields
 * are read: a copy of one object that already has every property the decoder will set, in the
 * order it sets them, each undefined. Built up property by property, each record went through a
 * dozen hidden-class transitions and grew its property store several times (garbage, and slower
 * JSON encoding downstream); the copy is made at once with the final layout. A value left
 * undefined is absent from the record's JSON, as a property never set was.
 */
function recordShape(t: Template, base: Rec): Rec {
  const s = t.shape;
  if (s && s.exporter === base.exporter && s.observationDomainId === base.observationDomainId && s.flow_protocol === base.flow_protocol) return s;
  const shape: Rec = { flow_protocol: base.flow_protocol, exporter: base.exporter, observationDomainId: base.observationDomainId };
  for (const f of compiled(t)) if (f.keep && !Object.hasOwn(shape, f.name)) shape[f.name] = undefined;
  // Set to every flow after decoding (samplingOf).
  if (!Object.hasOwn(shape, 'samplingInterval')) shape.samplingInterval = undefined;
  return (t.shape = shape);
}

/** The records of one data set under its template; options records update the exporter instead. */
function decodeDataSet(body: Buffer, t: Template, e: ExporterState, h: Pick<Header, 'base' | 'unixMs' | 'uptimeMs'>, out: Rec[], limit: number): number {
  const fields = compiled(t);
  const nf = fields.length;
  const buf = body;
  const end = body.length;
  const shape = t.scopeCount ? undefined : recordShape(t, h.base);
  let pos = 0;
  let n = 0;
  // What is left shorter than a record is padding (RFC 7011 section 3.3.1, RFC 3954 section 5.3).
  while (end - pos >= t.minLength && end - pos > 0) {
    if (out.length >= limit) throw new FlowDecodeError(`more than ${MAX_RECORDS_PER_DATAGRAM} records in one datagram`);
    const rec: Rec = shape ? { ...shape } : {};
    for (let i = 0; i < nf; i++) {
      const f = fields[i]!;
      let len = f.length;
      // The messages are built only on failure: a template literal per field was most of the decode time.
      if (len === VARIABLE_LENGTH) {
        // RFC 7011 section 7: one length byte, or 255 and a 2-byte length.
        if (end - pos < 1) new Reader(buf, pos).need(1, `length of ${f.name}`);
        len = buf[pos++]!;
        if (len === 255) {
          if (end - pos < 2) new Reader(buf, pos).need(2, `long length of ${f.name}`);
          len = buf.readUInt16BE(pos);
          pos += 2;
        }
      }
      if (len > end - pos) new Reader(buf, pos).need(len, `${f.name} of template ${t.id}`);
      if (f.keep) rec[f.name] = f.read(buf, pos, len);
      pos += len;
    }
    n++;
    if (t.scopeCount) applyOptions(rec, e);
    else {
      withTimes(rec, h, e);
      out.push(rec);
    }
  }
  return n;
}

/** Sampling intervals and interface names an exporter sends in options records. */
function applyOptions(o: Rec, e: ExporterState): void {
  const interval = num(o.samplingInterval) ?? num(o.samplerRandomInterval) ?? psampRate(o);
  if (typeof o.systemInitTimeMilliseconds === 'string') {
    const ms = Date.parse(o.systemInitTimeMilliseconds);
    if (Number.isFinite(ms)) e.systemInitMs = ms;
  }
  const sampler = num(o.samplerId) ?? num(o.selectorId);
  const limit = 65_536;
  if (interval !== undefined && interval > 0) {
    if (sampler !== undefined) {
      if (e.samplers.size < limit || e.samplers.has(sampler)) e.samplers.set(sampler, interval);
    } else e.sampling = interval;
  }
  const ifIndex = num(o.ingressInterface) ?? num(o.egressInterface);
  const name = typeof o.interfaceName === 'string' ? o.interfaceName : typeof o.interfaceDescription === 'string' ? o.interfaceDescription : undefined;
  if (ifIndex !== undefined && ifIndex !== 0 && name && (e.interfaceNames.size < limit || e.interfaceNames.has(ifIndex))) e.interfaceNames.set(ifIndex, name);
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** PSAMP systematic count-based sampling (RFC 5477): `interval` packets taken, then `space` skipped: 1 in (interval + space) / interval. */
function psampRate(o: Rec): number | undefined {
  const taken = num(o.samplingPacketInterval);
  if (!taken) return undefined;
  return (taken + (num(o.samplingPacketSpace) ?? 0)) / taken;
}

/** Wall-clock times of sysUptime-relative fields (NetFlow v9), as nfdump adds them. */
function withTimes(rec: Rec, h: Pick<Header, 'unixMs' | 'uptimeMs'>, e: ExporterState): void {
  const first = num(rec.flowStartSysUpTime);
  const last = num(rec.flowEndSysUpTime);
  if (first === undefined && last === undefined) return;
  // NetFlow v9: relative to the header's sysUptime and time. IPFIX: to systemInitTimeMilliseconds, from an options record (RFC 7011 IE 160).
  const at =
    h.uptimeMs !== undefined
      ? (x: number) => isoAt(h.unixMs, h.uptimeMs!, x)
      : e.systemInitMs !== undefined
        ? (x: number) => isoMs(e.systemInitMs! + x)
        : undefined;
  if (!at) return;
  if (first !== undefined && rec.flowStartMilliseconds === undefined) rec.flowStartMilliseconds = at(first);
  if (last !== undefined && rec.flowEndMilliseconds === undefined) rec.flowEndMilliseconds = at(last);
}

/** The sampling rate of one flow: its own field, its sampler's announced interval, the exporter's, or 1. */
function samplingOf(rec: Rec, e: ExporterState): number {
  const own = num(rec.samplingInterval) ?? num(rec.samplingPacketInterval);
  if (own) return own;
  const sampler = num(rec.samplerId) ?? num(rec.selectorId);
  return (sampler !== undefined ? e.samplers.get(sampler) : undefined) ?? e.sampling ?? 1;
}

/** NetFlow v9 (version 9) or IPFIX (version 10). */
export function decodeTemplated(buf: Buffer, exporter: string, state: FlowState, now: number): Rec[] {
  const r = new Reader(buf);
  const version = r.u16('version');
  const ipfix = version === 10;
  let h: Header;
  let domain: number;
  let seq: number;
  if (ipfix) {
    const length = r.u16('message length');
    if (length < 16) throw new FlowDecodeError(`IPFIX: message length ${length} is shorter than its header`);
    if (length > buf.length) throw new FlowDecodeError(`truncated: IPFIX message length ${length}, the datagram has ${buf.length} bytes`);
    const exportTime = r.u32('export time');
    seq = r.u32('sequence number');
    domain = r.u32('observation domain id');
    h = { protocol: 'ipfix', unixMs: exportTime * 1000, base: { flow_protocol: 'ipfix', exporter, observationDomainId: domain } };
    // Bytes past the message length are not part of it (RFC 7011 section 3.1).
    (r as { end: number }).end = length;
  } else {
    r.skip(2, 'count');
    const uptimeMs = r.u32('sysUptime');
    const secs = r.u32('unix seconds');
    seq = r.u32('package sequence');
    domain = r.u32('source id');
    h = { protocol: 'netflow9', unixMs: secs * 1000, uptimeMs, base: { flow_protocol: 'netflow9', exporter, observationDomainId: domain } };
  }

  // 1. The sets, every length checked, templates parsed: nothing is learned from a broken datagram.
  const ops: TemplateOp[] = [];
  const data: DataSet[] = [];
  while (r.left > 0) {
    // NetFlow v9 exporters may pad the datagram after the last flowset.
    if (!ipfix && r.left < 4 && buf.subarray(r.pos, r.end).every((b) => b === 0)) break;
    const setId = r.u16('set id');
    const setLength = r.u16('set length');
    if (setLength < 4) throw new FlowDecodeError(`set ${setId} at offset ${r.pos - 4}: length ${setLength} is shorter than its header`);
    const set = r.sub(setLength - 4, `set ${setId} of length ${setLength}`);
    if (ipfix ? setId === 2 || setId === 3 : setId === 0 || setId === 1) parseTemplateSet(set, setId, ipfix, now, ops);
    else if (setId >= 256) data.push({ id: setId, body: buf.subarray(set.pos, set.end), h });
    else if (ipfix) throw new FlowDecodeError(`set id ${setId} is reserved (RFC 7011 section 3.3.2)`);
    // v9 ids 2-255 are reserved for future flowset types: skipped, as RFC 3954 section 5.3 asks.
  }

  const e = state.exporter(h.protocol, exporter, domain, now);
  // 2. Templates learned, withdrawn; data decoded or held for its template.
  const released: DataSet[] = [];
  for (const op of ops) {
    if (op.kind === 'withdraw') state.withdraw(e, op.id, op.options);
    else if (state.addTemplate(e, op.t)) for (const p of state.takePending(e, op.t.id)) released.push({ id: p.templateId, body: p.body, h: p, held: true });
  }
  const out: Rec[] = [];
  let records = 0;
  let held = false;
  // Options records first: the sampling rate and time base they announce apply to the flows of the same datagram.
  const sets = [...released, ...data];
  const isOptions = (d: DataSet) => (e.templates.get(d.id)?.scopeCount ?? 0) > 0;
  for (const set of [...sets.filter(isOptions), ...sets.filter((d) => !isOptions(d))]) {
    const t = e.templates.get(set.id);
    if (!t) {
      held = true;
      state.hold(e, { templateId: set.id, body: set.body, base: h.base, unixMs: h.unixMs, uptimeMs: h.uptimeMs }, now);
      continue;
    }
    const n = decodeDataSet(set.body, t, e, set.h, out, MAX_RECORDS_PER_DATAGRAM);
    if (!set.held) records += n;
  }
  for (const rec of out) {
    rec.samplingInterval = samplingOf(rec, e);
    if (e.interfaceNames.size) {
      const inName = e.interfaceNames.get(num(rec.ingressInterface) ?? -1);
      const outName = e.interfaceNames.get(num(rec.egressInterface) ?? -1);
      if (inName) rec.in_if_name = inName;
      if (outName) rec.out_if_name = outName;
    }
  }
  // IPFIX counts data records; with sets held for a template the count is unknown until they decode.
  state.sequence(e, seq, ipfix ? (held ? undefined : seq + records) : seq + 1, h.uptimeMs);
  return out;
}
