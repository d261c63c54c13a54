// How the `ves` sink turns one record into one VES 7.1.1 event (Common Event Format 30.1.1): the
// commonEventHeader from the sink's domain and source_name and the record's own header fields, and
// the domain's fields block (faultFields, measurementFields, ...) from the rest of the record.
// Every rule here is written for the user in docs/connectors/ves.md; the published schema
// (test/fixtures/ves/CommonEventFormat_30.1.1.json) is the test collector's oracle, not read here.
import { exactNumber } from '../../../util/exact-number.js';
import { NOT_A_TIME, timeParser } from '../../common/time.js';
import type { Rec } from '../../types.js';

/** The header version and VES Event Listener version every event carries. */
export const HEADER_VERSION = '4.1';
export const LISTENER_VERSION = '7.1.1';

/** What a record's value must become in a fields block. */
type FieldType = 'string' | 'integer' | 'number' | 'hashMap' | 'given' | readonly string[];

interface DomainSpec {
  /** The fields block: `faultFields`. */
  block: string;
  /** Its version field and the one value the schema allows. */
  versionField: string;
  version: string;
  /** Fields of the block a record may fill (by name), with their types; `given`: passed as the record has it. */
  fields: Record<string, FieldType>;
  /** Fields the schema requires (besides the version), with the default used when the record has none. */
  required: Record<string, string | undefined>;
  /** The hashMap that takes the record's other fields. */
  extras: string;
  /** The arrayOfNamedHashMap that takes the record's other fields that are objects of scalars (else they go to `extras` as JSON text). */
  named?: string;
}

const SEVERITIES = ['CRITICAL', 'MAJOR', 'MINOR', 'WARNING', 'NORMAL'] as const;
const VF_STATUS = ['Active', 'Idle', 'Preparing to terminate', 'Ready to terminate', 'Requesting termination'] as const;
const STATES = ['inService', 'maintenance', 'outOfService'] as const;
const SYSLOG_SEV = ['Alert', 'Critical', 'Debug', 'Emergency', 'Error', 'Info', 'Notice', 'Warning'] as const;
export const PRIORITIES = ['High', 'Medium', 'Normal', 'Low'] as const;

/** The domains this sink builds, from the schema's definitions (required fields and enums as published). */
export const DOMAINS: Record<string, DomainSpec> = {
  fault: {
    block: 'faultFields',
    versionField: 'faultFieldsVersion',
    version: '4.0',
    fields: {
      alarmAdditionalInformation: 'hashMap',
      alarmCondition: 'string',
      alarmInterfaceA: 'string',
      eventCategory: 'string',
      eventSeverity: SEVERITIES,
      eventSourceType: 'string',
      specificProblem: 'string',
      vfStatus: VF_STATUS,
    },
    required: { alarmCondition: undefined, eventSeverity: undefined, specificProblem: undefined, eventSourceType: 'other', vfStatus: 'Active' },
    extras: 'alarmAdditionalInformation',
  },
  heartbeat: {
    block: 'heartbeatFields',
    versionField: 'heartbeatFieldsVersion',
    version: '3.0',
    fields: { additionalFields: 'hashMap', heartbeatInterval: 'integer' },
    required: { heartbeatInterval: undefined },
    extras: 'additionalFields',
  },
  measurement: {
    block: 'measurementFields',
    versionField: 'measurementFieldsVersion',
    version: '4.0',
    fields: {
      additionalFields: 'hashMap',
      additionalMeasurements: 'given',
      additionalObjects: 'given',
      codecUsageArray: 'given',
      concurrentSessions: 'integer',
      configuredEntities: 'integer',
      cpuUsageArray: 'given',
      diskUsageArray: 'given',
      featureUsageArray: 'hashMap',
      filesystemUsageArray: 'given',
      hugePagesArray: 'given',
      ipmi: 'given',
      latencyDistribution: 'given',
      loadArray: 'given',
      machineCheckExceptionArray: 'given',
      meanRequestLatency: 'number',
      measurementInterval: 'number',
      memoryUsageArray: 'given',
      numberOfMediaPortsInUse: 'integer',
      requestRate: 'number',
      nfcScalingMetric: 'integer',
      nicPerformanceArray: 'given',
      processStatsArray: 'given',
    },
    required: { measurementInterval: undefined },
    extras: 'additionalFields',
    named: 'additionalMeasurements',
  },
  notification: {
    block: 'notificationFields',
    versionField: 'notificationFieldsVersion',
    version: '2.0',
    fields: {
      additionalFields: 'hashMap',
      arrayOfNamedHashMap: 'given',
      changeContact: 'string',
      changeIdentifier: 'string',
      changeType: 'string',
      newState: 'string',
      oldState: 'string',
      stateInterface: 'string',
    },
    required: { changeIdentifier: undefined, changeType: undefined },
    extras: 'additionalFields',
    named: 'arrayOfNamedHashMap',
  },
  other: {
    block: 'otherFields',
    versionField: 'otherFieldsVersion',
    version: '3.0',
    fields: { arrayOfNamedHashMap: 'given', hashMap: 'hashMap', jsonObjects: 'given' },
    required: {},
    extras: 'hashMap',
    named: 'arrayOfNamedHashMap',
  },
  pnfRegistration: {
    block: 'pnfRegistrationFields',
    versionField: 'pnfRegistrationFieldsVersion',
    version: '2.0',
    fields: {
      additionalFields: 'hashMap',
      lastServiceDate: 'string',
      macAddress: 'string',
      manufactureDate: 'string',
      modelNumber: 'string',
      oamV4IpAddress: 'string',
      oamV6IpAddress: 'string',
      serialNumber: 'string',
      softwareVersion: 'string',
      unitFamily: 'string',
      unitType: 'string',
      vendorName: 'string',
    },
    required: {},
    extras: 'additionalFields',
  },
  stateChange: {
    block: 'stateChangeFields',
    versionField: 'stateChangeFieldsVersion',
    version: '4.0',
    fields: { additionalFields: 'hashMap', newState: STATES, oldState: STATES, stateInterface: 'string' },
    required: { newState: undefined, oldState: undefined, stateInterface: undefined },
    extras: 'additionalFields',
  },
  syslog: {
    block: 'syslogFields',
    versionField: 'syslogFieldsVersion',
    version: '4.0',
    fields: {
      additionalFields: 'hashMap',
      eventSourceHost: 'string',
      eventSourceType: 'string',
      syslogFacility: 'integer',
      syslogMsg: 'string',
      syslogMsgHost: 'string',
      syslogPri: 'integer',
      syslogProc: 'string',
      syslogProcId: 'number',
      syslogSData: 'string',
      syslogSdId: 'string',
      syslogSev: SYSLOG_SEV,
      syslogTag: 'string',
      syslogTs: 'string',
      syslogVer: 'number',
    },
    required: { syslogMsg: undefined, syslogTag: undefined, eventSourceType: 'other' },
    extras: 'additionalFields',
  },
};

export const SUPPORTED_DOMAINS = Object.keys(DOMAINS) as (keyof typeof DOMAINS)[];
/** Domains of the schema this sink does not build: their blocks are nested structures a flat record does not map onto. */
export const UNSUPPORTED_DOMAINS = ['mobileFlow', 'perf3gpp', 'sipSignaling', 'thresholdCrossingAlert', 'voiceQuality'] as const;

/** commonEventHeader fields a record may set by carrying a top-level field of that name. */
export const HEADER_STRINGS = [
  'eventId',
  'eventName',
  'eventType',
  'sourceName',
  'sourceId',
  'reportingEntityId',
  'nfcNamingCode',
  'nfNamingCode',
  'nfVendorName',
  'timeZoneOffset',
] as const;
export const HEADER_FIELDS = new Set<string>([...HEADER_STRINGS, 'priority', 'startEpochMicrosec', 'lastEpochMicrosec']);

/** A record that cannot become an event of the domain: the reason goes to the DLQ. */
export class EventError extends Error {}

const isObject = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);
const isScalar = (v: unknown): v is string | number | bigint | boolean => ['string', 'number', 'bigint', 'boolean'].includes(typeof v);

/** A scalar as the string a VES hashMap holds (numbers exact: a bigint keeps every digit). */
function text(v: string | number | bigint | boolean): string {
  return typeof v === 'bigint' ? String(exactNumber(v)) : String(v);
}

/** Any value as a hashMap value: scalars as text, objects and lists as JSON text. */
function hashValue(v: unknown): string {
  if (isScalar(v)) return text(v);
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? exactNumber(x) : x));
}

const describe = (v: unknown) =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'a list'
      : typeof v === 'object'
        ? 'an object'
        : `${typeof v} ${JSON.stringify(typeof v === 'bigint' ? String(v) : v)}`;

/** A record value as the type the block field has; throws EventError naming the field. */
function convert(where: string, v: unknown, type: FieldType): unknown {
  if (Array.isArray(type)) {
    const s = typeof v === 'string' ? v.trim().toLowerCase() : undefined;
    const hit = s === undefined ? undefined : type.find((x) => x.toLowerCase() === s);
    if (hit === undefined) throw new EventError(`${where} must be one of ${type.join(', ')} (got ${describe(v)})`);
    return hit;
  }
  switch (type) {
    case 'string':
      if (isScalar(v)) return text(v);
      throw new EventError(`${where} must be a string (got ${describe(v)})`);
    case 'integer': {
      const n = typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : typeof v === 'bigint' ? Number(v) : v;
      if (typeof n === 'number' && Number.isSafeInteger(n)) return n;
      throw new EventError(`${where} must be an integer (got ${describe(v)})`);
    }
    case 'number': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : typeof v === 'bigint' ? Number(v) : v;
      if (typeof n === 'number' && Number.isFinite(n)) return n;
      throw new EventError(`${where} must be a number (got ${describe(v)})`);
    }
    case 'hashMap': {
      if (!isObject(v)) throw new EventError(`${where} must be an object of name/value pairs (got ${describe(v)})`);
      const out: Record<string, string> = {};
      for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = hashValue(x);
      return out;
    }
    default:
      return v;
  }
}

export interface EventOptions {
  domain: string;
  sourceName: string;
  /** Record field holding the event time (ISO 8601, or epoch s/ms/us/ns by magnitude). */
  timestampField?: string;
}

export interface EventMeta {
  /** This event's number in the sink's run (commonEventHeader.sequence). */
  sequence: number;
  /** Default eventId: `<source_name>-<run id>-<sequence>`. */
  runId: string;
  /** Now, in microseconds since the epoch: the time of an event whose record has none. */
  nowMicros: number;
}

/** Builds events for one sink config. */
export function eventBuilder(o: EventOptions) {
  const spec = DOMAINS[o.domain];
  if (!spec) throw new Error(`ves: domain '${o.domain}' is not supported; use one of ${SUPPORTED_DOMAINS.join(', ')}`);
  const parseTime = o.timestampField !== undefined ? timeParser({ unit: 'auto' }) : undefined;

  const epoch = (r: Rec, name: 'startEpochMicrosec' | 'lastEpochMicrosec'): number | undefined => {
    if (!(name in r) || r[name] === null) return undefined;
    return convert(name, r[name], 'number') as number;
  };

  return function build(r: Rec, m: EventMeta): Rec {
    // commonEventHeader
    const header: Rec = {
      domain: o.domain,
      eventId: `${o.sourceName}-${m.runId}-${m.sequence}`,
      eventName: `${o.domain}_${o.sourceName}`,
      lastEpochMicrosec: 0,
      priority: 'Normal',
      reportingEntityName: o.sourceName,
      sequence: m.sequence,
      sourceName: o.sourceName,
      startEpochMicrosec: 0,
      version: HEADER_VERSION,
      vesEventListenerVersion: LISTENER_VERSION,
    };
    for (const k of HEADER_STRINGS) {
      const v = r[k];
      if (v === undefined || v === null) continue;
      const s = convert(k, v, 'string') as string;
      if (s === '') throw new EventError(`${k} is empty`);
      header[k] = s;
    }
    if (r.priority !== undefined && r.priority !== null) header.priority = convert('priority', r.priority, PRIORITIES);
    let start = epoch(r, 'startEpochMicrosec');
    if (start === undefined && parseTime) {
      const v = r[o.timestampField!];
      const ms = parseTime(v);
      if (ms === NOT_A_TIME || !Number.isFinite(ms))
        throw new EventError(`timestamp_field '${o.timestampField}' is ${v === undefined || v === null ? 'missing' : `not a time (${describe(v)})`}`);
      start = ms * 1000;
    }
    start ??= m.nowMicros;
    header.startEpochMicrosec = start;
    header.lastEpochMicrosec = epoch(r, 'lastEpochMicrosec') ?? start;

    // the domain's fields block
    const block: Rec = {};
    const given = r[spec.block];
    if (given !== undefined && given !== null) {
      if (!isObject(given)) throw new EventError(`${spec.block} must be an object (got ${describe(given)})`);
      for (const [k, v] of Object.entries(given)) {
        if (v === null || v === undefined || k === spec.versionField) continue;
        const type = spec.fields[k];
        if (type === undefined)
          throw new EventError(`${spec.block}.${k} is not a field of ${spec.block}; its fields are ${Object.keys(spec.fields).join(', ')}`);
        block[k] = convert(`${spec.block}.${k}`, v, type);
      }
    }
    const extras: Record<string, string> = {};
    const named: { name: string; hashMap: Record<string, string> }[] = [];
    for (const [k, v] of Object.entries(r)) {
      if (v === undefined || v === null || HEADER_FIELDS.has(k) || k === spec.block || k === spec.versionField) continue;
      const type = spec.fields[k];
      if (type !== undefined && k !== spec.extras && k !== spec.named) {
        block[k] = convert(k, v, type);
      } else if (k === spec.extras) {
        Object.assign(extras, convert(k, v, 'hashMap'));
      } else if (k === spec.named) {
        if (!Array.isArray(v)) throw new EventError(`${k} must be a list of {name, hashMap} (got ${describe(v)})`);
        named.push(...(v as { name: string; hashMap: Record<string, string> }[]));
      } else if (spec.named && isObject(v) && Object.values(v).every((x) => x === null || isScalar(x))) {
        named.push({ name: k, hashMap: convert(k, v, 'hashMap') as Record<string, string> });
      } else {
        extras[k] = hashValue(v);
      }
    }
    if (Object.keys(extras).length > 0) block[spec.extras] = { ...((block[spec.extras] as Record<string, string> | undefined) ?? {}), ...extras };
    if (named.length > 0 && spec.named) block[spec.named] = [...((block[spec.named] as unknown[] | undefined) ?? []), ...named];
    for (const [k, dflt] of Object.entries(spec.required)) {
      if (block[k] !== undefined && block[k] !== '') continue;
      if (dflt === undefined) throw new EventError(`a ${o.domain} event needs ${spec.block}.${k}: the record has no field ${k}`);
      block[k] = dflt;
    }
    block[spec.versionField] = spec.version;
    return { commonEventHeader: header, [spec.block]: block };
  };
}
