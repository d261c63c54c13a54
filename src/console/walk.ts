// The console's walker (POST /api/walk/execute) and the request helpers it shares with the trap
// sender (OID input, v3 users, host resolution, peer errors). Values are shown by
// src/mib/varbinds.ts. Decisions where doc 1 says "not shown": docs/console.md (Walker).
import { lookup } from 'node:dns/promises';
import { httpError } from '../core/http-errors.js';
import { OidSyntaxError, type MibIndex } from '../mib/mib-index.js';
import { describeVarBind, groupVarBinds, netSnmpLine, netSnmpValue, type Grouped } from '../mib/varbinds.js';
import type { SnmpVersion } from '../snmp/message.js';
import { makeUser, type UsmUserConfig } from '../snmp/usm.js';
import { parseOid, SnmpInputError, SnmpResponseError, SnmpTimeoutError, type VarBind } from '../snmp/values.js';
import { walk } from '../snmp/walker.js';
import type { ServiceContext } from './service-context.js';

/** Walks running at once; more are 429 (each holds a socket and up to walk_max_oids varbinds). */
export const MAX_CONCURRENT_WALKS = 4;
/** A host name that does not resolve within this is a 400, not a hang. */
export const DNS_TIMEOUT_MS = 5000;
export const DEFAULT_WALK_OID = '1.3.6.1.2.1';

export interface SnmpV3Fields {
  username?: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
  context_name?: string;
}

export interface WalkRequest extends SnmpV3Fields {
  target: string;
  port?: number;
  community?: string;
  oid?: string;
  parse?: boolean;
  use_mibs?: boolean;
  json_format?: 'current' | 'grouped';
  version?: SnmpVersion;
  max_repetitions?: number;
  timeout_ms?: number;
  retries?: number;
  max_oids?: number;
}

// ---------------------------------------------------------------------------------------------
// Input

/**
 * A numeric OID from input that may be numeric or a MIB name (`IF-MIB::ifTable`, `ifDescr.3`,
 * `sysDescr.0`); 422 naming `what` when it is neither.
 */
export function resolveOidInput(text: string, ix: MibIndex | undefined, what: string): string {
  const s = String(text).trim();
  if (/^\.?\d+(\.\d+)*$/.test(s)) {
    try {
      return parseOid(s, what, true);
    } catch (e) {
      throw httpError('HTTP_INVALID', (e as Error).message);
    }
  }
  let r;
  try {
    r = ix?.toNumeric(s);
  } catch (e) {
    if (e instanceof OidSyntaxError) throw httpError('HTTP_INVALID', `${what} "${text}": ${e.message}`);
    throw e;
  }
  if (!r)
    throw httpError('HTTP_INVALID', `${what} "${text}" is neither a numeric OID nor a name known to the loaded MIBs (GET /api/mibs/browse/search finds names)`);
  return r.oid;
}

/** The USM user of a v3 request; 422 when fields are missing or wrong. */
export function v3User(req: SnmpV3Fields, version: SnmpVersion): UsmUserConfig | undefined {
  if (version !== '3') {
    if (req.username)
      throw httpError('HTTP_INVALID', `username is for SNMPv3; set version "3" (or leave username out for ${version === '1' ? 'SNMPv1' : 'SNMPv2c'})`);
    return undefined;
  }
  if (!req.username) throw httpError('HTTP_INVALID', 'SNMPv3 needs username (and auth_protocol/auth_key, priv_protocol/priv_key for authNoPriv/authPriv)');
  const cfg: UsmUserConfig = {
    name: req.username,
    authProtocol: req.auth_protocol,
    authKey: req.auth_key,
    privProtocol: req.priv_protocol,
    privKey: req.priv_key,
  };
  try {
    makeUser(cfg);
  } catch (e) {
    throw httpError('HTTP_INVALID', (e as Error).message);
  }
  return cfg;
}

/** The address of a host; 400 when it does not resolve (within DNS_TIMEOUT_MS). */
export async function resolveHost(host: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const r = await Promise.race([
      lookup(host),
      new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no DNS answer within ${DNS_TIMEOUT_MS} ms`)), DNS_TIMEOUT_MS))),
    ]);
    return r.address;
  } catch (e) {
    throw httpError(
      'HTTP_HOST_UNRESOLVED',
      `cannot resolve host "${host}" (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give an IP address or a resolvable name`,
    );
  } finally {
    clearTimeout(timer);
  }
}

const UNREACHABLE = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EPERM', 'EACCES', 'ENETDOWN', 'EHOSTDOWN']);

/**
 * The API error for a failed exchange with an agent or trap receiver: 504 no answer (naming host,
 * port, timeout and retries), 502 unreachable or an error/report from the peer.
 */
export function peerError(e: unknown, where: { host: string; port: number; version: SnmpVersion; timeoutMs: number; retries: number; what: string }): Error {
  const at = `${where.host}:${where.port}`;
  const creds = where.version === '3' ? 'the SNMPv3 user name, protocols and keys are right' : 'the community string is right';
  if (e instanceof SnmpTimeoutError) {
    if (/port unreachable/.test(e.message))
      return httpError('HTTP_SNMP_UNREACHABLE', `nothing listens on udp ${at} (ICMP port unreachable); check the host and port`);
    return httpError(
      'HTTP_SNMP_TIMEOUT',
      `no response from ${at} (SNMPv${where.version}) within ${where.timeoutMs} ms per attempt, ${where.retries + 1} attempts (timeout_ms ${where.timeoutMs}, retries ${where.retries}); check that ${where.what} runs there, that UDP is not filtered and that ${creds}`,
    );
  }
  if (e instanceof SnmpResponseError) {
    const hint = /refused the request/.test(e.message) ? `; check that ${creds}` : '';
    return httpError('HTTP_SNMP_AGENT_ERROR', `${e.message}${hint}`);
  }
  if (e instanceof SnmpInputError) return e.statusCode === 400 ? httpError('HTTP_INVALID', e.message) : e; // its own 4xx status: the handler answers it
  const code = (e as NodeJS.ErrnoException).code;
  if (code && UNREACHABLE.has(code)) return httpError('HTTP_SNMP_UNREACHABLE', `cannot reach udp ${at}: ${code}`);
  return e as Error;
}

// ---------------------------------------------------------------------------------------------
// The walk

export interface WalkResult {
  target: string;
  port: number;
  version: SnmpVersion;
  oid: string;
  oid_name?: string;
  operation: 'GETBULK' | 'GETNEXT';
  max_repetitions?: number;
  format: 'current' | 'grouped';
  parse: boolean;
  use_mibs: boolean;
  count: number;
  truncated: boolean;
  max_oids: number;
  duration_ms: number;
  results?: unknown[];
  scalars?: Grouped['scalars'];
  tables?: Grouped['tables'];
  other?: Grouped['other'];
}

export class Walker {
  private running = 0;

  constructor(private readonly ctx: ServiceContext) {}

  async execute(req: WalkRequest): Promise<WalkResult> {
    const { ctx } = this;
    const app = ctx.appSettings.get();
    const version = req.version ?? '2c';
    const port = req.port ?? 161;
    const parse = req.parse ?? true;
    const useMibs = req.use_mibs ?? false;
    const format = req.json_format ?? 'current';
    const timeoutMs = req.timeout_ms ?? app.walk_timeout_ms;
    const retries = req.retries ?? app.walk_retries;
    const maxRep = req.max_repetitions ?? app.walk_max_repetitions;
    const maxOids = Math.min(req.max_oids ?? app.walk_max_oids, app.walk_max_oids);
    const ix = useMibs || format === 'grouped' || !/^\.?[\d.]+$/.test(req.oid ?? '1') ? ctx.mibs.index() : undefined;
    const oid = resolveOidInput(req.oid ?? DEFAULT_WALK_OID, ix, 'oid');
    const user = v3User(req, version);
    if (this.running >= MAX_CONCURRENT_WALKS)
      throw httpError('HTTP_SERVICE_BUSY', `${MAX_CONCURRENT_WALKS} walks are already running; try again when one finishes`);
    this.running++;
    const started = performance.now();
    let vbs: VarBind[];
    try {
      const host = await resolveHost(req.target);
      // Walks and their duration count from here: a name that does not resolve sent nothing.
      ctx.stats.inc('walker', 'walks');
      const sent = performance.now();
      // One more than the cap tells a truncated walk from one that ended exactly at the cap.
      vbs = await walk({
        host,
        port,
        version,
        community: req.community ?? 'public',
        ...(user ? { user } : {}),
        contextName: req.context_name,
        timeoutMs,
        retries,
        oid,
        maxRepetitions: maxRep,
        maxOids: maxOids + 1,
      })
        .catch((e: unknown) => {
          ctx.stats.inc('walker', 'errors');
          throw peerError(e, { host: req.target, port, version, timeoutMs, retries, what: 'an SNMP agent' });
        })
        .finally(() => ctx.stats.set('walker', 'last_duration_ms', Math.round(performance.now() - sent)));
    } finally {
      this.running--;
    }
    const truncated = vbs.length > maxOids;
    if (truncated) vbs.length = maxOids;
    ctx.stats.inc('walker', 'oids', vbs.length);
    const names = useMibs ? ix : undefined;
    const res: WalkResult = {
      target: req.target,
      port,
      version,
      oid,
      ...(names ? { oid_name: names.toSymbolic(oid).symbolic } : {}),
      operation: version === '1' ? 'GETNEXT' : 'GETBULK',
      ...(version === '1' ? {} : { max_repetitions: maxRep }),
      format,
      parse,
      use_mibs: useMibs,
      count: vbs.length,
      truncated,
      max_oids: maxOids,
      duration_ms: 0,
    };
    if (format === 'grouped') {
      // Scalars and rows are keyed by name already; `other` entries keep their OID (and name).
      const cell = parse
        ? (vb: VarBind, where: string) => describeVarBind(vb, names, { oid: where !== 'cell', name: where === 'other' })
        : (vb: VarBind, where: string) => (where === 'other' ? netSnmpLine(vb, names) : netSnmpValue(vb, names));
      Object.assign(res, groupVarBinds(vbs, ix!, cell));
    } else res.results = parse ? vbs.map((vb) => describeVarBind(vb, names)) : vbs.map((vb) => netSnmpLine(vb, names));
    res.duration_ms = Math.round(performance.now() - started);
    return res;
  }
}
