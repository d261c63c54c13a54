// Source `snmp_poll` (batch): each run GETs or walks `oids` on one agent (`host`) or on a fleet
// (`targets`, `targets_file`), at most `max_concurrency` targets at a time, each within
// `target_timeout_seconds`. One unit per target: a JSON array of its records (one flat record, or
// one per table row with yield_rows), each with `_target` and `_polled_at`. A target that does not
// answer, refuses us or runs out of time is one message in the run's errors and one count of
// svc_snmp_poll_errors_total; it never fails the run. Protocol: the product's one SNMP stack
// (src/snmp/: SnmpSession, walkSession, USM); names: the MIB store (common/snmp.ts mibIndex).
// Decisions: docs/connectors/snmp_poll.md.
import { fleetUnits, owned, TargetDeadlineError } from '../../connector-runtime/target-fleet.js';
import { Type } from '@sinclair/typebox';
import { errorMessage, SourceError } from '../../../core/errors.js';
import type { MibIndex } from '../../../mib/mib-index.js';
import { SnmpSession, UdpSocketPool } from '../../../snmp/session.js';
import { parseOid, SnmpInputError, SnmpResponseError, SnmpTimeoutError, type VarBind } from '../../../snmp/values.js';
import { walkSession } from '../../../snmp/walker.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type LintIssue, type PluginContext, type Rec, type SourceUnit } from '../../types.js';
import { communityField, lintUser, lintV3, mibIndex, perAgentFields, resolveName, v3Fields, versionField } from '../../common/snmp.js';
import { flatRecord, isAbsent, rowRecords, type RowOptions } from './rows.js';
import { snmpPollMetrics } from './metrics.js';
import { loadTargetIds, loadTargets, type PollTarget } from './targets.js';

/** sysUpTime.0: what test() asks for. */
const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';

/** Varbinds per GET request (a longer `oids` list is sent in several requests). */
export const GET_BATCH = 50;

const targetItem = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'Agent host name or address.' }),
    name: Type.Optional(Type.String({ minLength: 1, description: 'What `_target` says for this agent (default host:port).' })),
    ...perAgentFields,
  },
  { additionalProperties: false },
);

const config = Type.Object(
  {
    host: Type.Optional(Type.String({ minLength: 1, description: 'Agent host name or address; required unless targets or targets_file lists the agents.' })),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 161, description: 'UDP port of the agent(s).' }),
    community: communityField('SNMPv1/v2c community. A wrong one gets no answer at all (agents stay silent): it shows as a timeout.'),
    version: versionField("SNMP version: '1', '2c' (GETBULK walks) or '3' (USM: security_name and keys)."),
    oids: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description:
        'Objects to poll: numeric (1.3.6.1.2.1.1.3.0) or MIB names (sysUpTime.0, IF-MIB::ifTable, ifHCInOctets.1). With get, a scalar named without an instance gets .0; with walk, each is a subtree.',
    }),
    operation: Type.Union([Type.Literal('get'), Type.Literal('walk')], {
      default: 'get',
      description: 'get: one GET of the oids; walk: walk each oid as a subtree (GETBULK, GETNEXT with version 1).',
    }),
    resolve_oids: Type.Boolean({ default: true, description: 'Name fields by MIB object (ifInOctets); false keeps numeric OIDs as field names.' }),
    mib_dirs: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Directories of extra MIB sources, loaded in front of the MIB store (uploaded and bundled MIBs).',
    }),
    mib_modules: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'MIB modules that must be loaded (the run fails naming a missing one); bare names in oids are looked up in them first.',
    }),
    yield_rows: Type.Boolean({
      default: false,
      description: 'One record per table row (use with walk): the index, the INDEX objects and the columns. False: one record per target.',
    }),
    index_depth: Type.Integer({
      minimum: 0,
      maximum: 128,
      default: 0,
      description: "Row index length in OID arcs: 0 takes it from the table's INDEX clause in the MIB (the last arc without one); above 0 the last N arcs.",
    }),
    classify: Type.Boolean({
      default: false,
      description: 'Add `_snmp_widths` (field to 32 or 64) for Counter32 and Counter64 values: the wrap width counter_delta uses.',
    }),
    ...v3Fields,
    timeout: Type.Number({ exclusiveMinimum: 0, maximum: 60, default: 1, description: 'Seconds to wait for each answer before sending again (net-snmp -t).' }),
    retries: Type.Integer({ minimum: 0, maximum: 20, default: 5, description: 'Requests sent again after a timeout (net-snmp -r).' }),
    max_repetitions: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'GETBULK max-repetitions of a walk (net-snmp snmpbulkwalk -Cr).' }),
    targets: Type.Optional(
      Type.Array(targetItem, {
        minItems: 1,
        description: 'Agents to poll (instead of host); each entry overrides the top-level port, community, version and SNMPv3 fields.',
      }),
    ),
    targets_file: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'File of agents, read at each run: one host[:port] per line (# comments), or a YAML/JSON list of host[:port] strings or targets entries.',
      }),
    ),
    max_concurrency: Type.Integer({ minimum: 1, maximum: 10000, default: 100, description: 'Targets polled at the same time.' }),
    target_timeout_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 60,
      description: 'Deadline for one target (all its requests, retries included); past it the target is reported as an error and skipped.',
    }),
  },
  { additionalProperties: false },
);

export type SnmpPollConfig = (typeof config)['static'];

const NAME_RE = /^\.?(?:[A-Za-z][A-Za-z0-9-]*::)?[A-Za-z0-9.-]+$/;

function lint(c: SnmpPollConfig): LintIssue[] {
  const issues: LintIssue[] = [];
  const given = (['host', 'targets', 'targets_file'] as const).filter((k) => c[k] !== undefined);
  if (given.length !== 1)
    issues.push({
      path: given[1] ?? 'host',
      message: given.length ? `set only one of host, targets, targets_file (got ${given.join(', ')})` : 'set host (one agent), targets or targets_file',
    });
  // A fleet may give each target its own SNMPv3 user instead of a top-level one.
  const fleet = c.targets !== undefined || c.targets_file !== undefined;
  issues.push(...lintV3(c).filter((i) => !(fleet && i.path === 'security_name')));
  c.targets?.forEach((t, i) => {
    issues.push(...lintUser(t, `targets.${i}.`));
    if ((t.version ?? c.version) === '3' && (t.security_name ?? c.security_name) === undefined)
      issues.push({ path: `targets.${i}.security_name`, message: 'an SNMPv3 target needs security_name' });
  });
  c.oids.forEach((o, i) => {
    if (!NAME_RE.test(o.trim()))
      issues.push({ path: `oids.${i}`, message: `"${o}" is neither a numeric OID nor a MIB name (like IF-MIB::ifTable or sysUpTime.0)` });
    else if (/^\.?\d+(\.\d+)*$/.test(o.trim())) {
      try {
        parseOid(o);
      } catch (e) {
        issues.push({ path: `oids.${i}`, message: errorMessage(e) });
      }
    }
  });
  if (c.yield_rows && c.operation !== 'walk') issues.push({ path: 'yield_rows', message: 'yield_rows groups the rows of walked tables: set operation: walk' });
  return issues;
}

/** Why a target failed, as the reason label of svc_snmp_poll_errors_total. */
function reasonOf(e: unknown): string {
  if (e instanceof TargetDeadlineError) return 'deadline';
  if (e instanceof SnmpTimeoutError) return /port unreachable/.test(e.message) ? 'unreachable' : 'timeout';
  if (e instanceof SnmpResponseError) return 'refused';
  const code = (e as NodeJS.ErrnoException).code;
  if (code && /^E(HOSTUNREACH|NETUNREACH|ADDRNOTAVAIL|NOTFOUND|AI_AGAIN|CONNREFUSED)/.test(code)) return 'unreachable';
  if (e instanceof SnmpInputError) return 'unreachable';
  return 'error';
}

/** The message for a target that failed: what happened and what to check, never a secret. */
function failure(t: PollTarget, e: unknown, c: { timeout: number; retries: number }): string {
  const creds = t.version === '3' ? 'the SNMPv3 user, protocols and keys' : 'the community';
  if (e instanceof TargetDeadlineError) return e.message;
  if (e instanceof SnmpTimeoutError) {
    if (/port unreachable/.test(e.message)) return `nothing listens on udp ${t.host}:${t.port} (ICMP port unreachable); check the host and port`;
    return `no answer from udp ${t.host}:${t.port} within ${c.timeout}s (${c.retries + 1} attempts): wrong ${t.version === '3' ? 'SNMPv3 credentials' : 'community'}, or no agent`;
  }
  if (e instanceof SnmpResponseError) return `${e.message}${/refused the request/.test(e.message) ? `; check ${creds}` : ''}`;
  return errorMessage(e);
}

/** The numeric OIDs of `oids` (names resolved through the MIB index); a name that does not resolve fails the run. */
function numericOids(c: SnmpPollConfig, ix: MibIndex | undefined): string[] {
  return c.oids.map((text, i) => {
    const oid = resolveName(ix, c.mib_modules ?? [], text);
    if (!oid) {
      throw new SourceError(
        ix
          ? `snmp_poll: oids[${i}] "${text}" is neither a numeric OID nor a name known to the loaded MIBs; check the spelling, or add its MIB with mib_dirs`
          : `snmp_poll: oids[${i}] "${text}" is a MIB name`,
      );
    }
    let out: string;
    try {
      out = parseOid(oid, `oids[${i}]`, c.operation === 'walk');
    } catch (e) {
      throw new SourceError(`snmp_poll: ${errorMessage(e)}`);
    }
    // A scalar named without its instance: GET its instance 0 (as a user of `sysUpTime` means).
    if (c.operation === 'get' && ix) {
      const node = ix.definitions(out)[0];
      if (node?.kind === 'scalar') out += '.0';
    }
    return out;
  });
}

/** The MIB index a config needs: for names in oids or for resolve_oids; undefined when neither. */
async function indexFor(c: SnmpPollConfig, mibs: PluginContext['mibs']): Promise<MibIndex | undefined> {
  const named = c.oids.some((o) => !/^\.?\d+(\.\d+)*$/.test(o.trim()));
  if (!named && !c.resolve_oids && !(c.mib_modules ?? []).length) return undefined;
  try {
    return await mibIndex(c, mibs);
  } catch (e) {
    throw new SourceError(`snmp_poll: ${errorMessage(e)}`, { cause: e });
  }
}

const topFields = (c: SnmpPollConfig) => ({ ...c, timeout: c.timeout ?? 1, retries: c.retries ?? 5 });

/** Polls one target: its records (one flat record, or its rows). */
async function pollTarget(
  t: PollTarget,
  c: SnmpPollConfig,
  oids: string[],
  rowOpts: RowOptions,
  signal: AbortSignal,
  sockets: UdpSocketPool,
): Promise<{ records: Rec[]; notes: string[] }> {
  const session = await SnmpSession.open(t.options, sockets);
  const onAbort = () => session.close();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const base: Rec = { _target: t.id, _polled_at: '' };
    const notes: string[] = [];
    let records: Rec[];
    if (c.operation === 'walk') {
      const walks: { root: string; vbs: VarBind[] }[] = [];
      for (const root of oids) walks.push({ root, vbs: await walkSession(session, { oid: root, maxRepetitions: c.max_repetitions ?? 10 }) });
      base._polled_at = new Date().toISOString();
      records = c.yield_rows
        ? rowRecords(walks, base, rowOpts)
        : [
            flatRecord(
              walks.flatMap((w) => w.vbs),
              base,
              rowOpts,
            ),
          ];
    } else {
      const vbs: VarBind[] = [];
      for (let i = 0; i < oids.length; i += GET_BATCH) vbs.push(...(await session.get(oids.slice(i, i + GET_BATCH))).varbinds);
      base._polled_at = new Date().toISOString();
      const missing = vbs.filter(isAbsent);
      if (missing.length) notes.push(`snmp_poll: ${t.id}: ${missing.map((vb) => `${vb.oid} ${vb.type}`).join(', ')}`);
      records = [flatRecord(vbs, base, rowOpts)];
    }
    return { records, notes };
  } finally {
    signal.removeEventListener('abort', onAbort);
    session.close();
  }
}

export default defineSource({
  key: 'snmp_poll',
  summary: 'GET or walk SNMP objects on one agent or a fleet (v1, v2c, v3), one record per target or per table row.',
  mode: 'batch',
  status: 'beta',
  delivery: {
    guarantee: 'at-least-once',
    why: 'polling consumes nothing on the agent: a run that fails leaves nothing acknowledged, and the next run polls again (a sample is the value at that time: a missed run is a gap, never a partial record).',
  },
  config,
  metrics: snmpPollMetrics,
  lint,
  examples: [
    {
      title: 'Uptime and description of one agent',
      yaml: 'type: snmp_poll\nhost: 192.0.2.10\ncommunity: ${SNMP_COMMUNITY:-public}\noids: [sysUpTime.0, sysDescr.0, sysName.0]',
    },
    {
      title: 'Interface counters of a fleet, one record per interface, widths for counter_delta',
      yaml: 'type: snmp_poll\ntargets:\n  - host: 192.0.2.10\n    name: core1\n  - host: 192.0.2.11\n    name: core2\n    community: ${EDGE_COMMUNITY:-edge}\noperation: walk\noids: [IF-MIB::ifTable, IF-MIB::ifXTable]\nyield_rows: true\nclassify: true\nmax_concurrency: 50',
    },
    {
      title: 'SNMPv3 authPriv (SHA-256 / AES-192) from a targets file',
      yaml: 'type: snmp_poll\ntargets_file: /etc/svc/routers.txt\nversion: "3"\nsecurity_name: poller\nauth_protocol: SHA256\nauth_key: ${SNMP_AUTH_KEY:-change-me-auth}\npriv_protocol: AES192\npriv_key: ${SNMP_PRIV_KEY:-change-me-priv}\noperation: walk\noids: [ipAddrTable]\nyield_rows: true',
    },
  ],
  async test(c, ctx) {
    const top = { ...topFields(c), retries: Math.min(c.retries ?? 5, 1) };
    const [t] = await loadTargets(
      {
        ...(c.host !== undefined ? { host: c.host } : {}),
        ...(c.targets ? { targets: c.targets.slice(0, 1) } : {}),
        ...(c.targets_file ? { targets_file: c.targets_file } : {}),
      },
      top,
    );
    if (!t) throw new Error('no target to check: the targets file lists none');
    let session: SnmpSession | undefined;
    const abort = () => session?.close();
    ctx.signal.addEventListener('abort', abort, { once: true });
    try {
      session = await SnmpSession.open(t.options);
      // Any answer (a value, or noSuchObject) proves the address and the credentials.
      await session.get([SYS_UPTIME]);
    } catch (e) {
      throw new Error(`${t.id}: ${failure(t, e, top)}`, { cause: e });
    } finally {
      ctx.signal.removeEventListener('abort', abort);
      session?.close();
    }
  },
  // A fleet splits by agent (issue 33): the identity is `_target` (the entry's name, else host:port).
  shard: {
    async targets(c) {
      return loadTargetIds(c, topFields(c));
    },
  },
  create(c, ctx) {
    const notes: string[] = [];
    return {
      notes,
      units: (signal) => pollUnits(c, ctx, signal, notes),
    };
  },
});

/** Polls every target (at most max_concurrency at once) and yields one unit per target that answered. */
async function* pollUnits(c: SnmpPollConfig, ctx: PluginContext, signal: AbortSignal, notes: string[]): AsyncGenerator<SourceUnit> {
  const report = connectionReporter(ctx, 'snmp_poll');
  const top = topFields(c);
  const ix = await indexFor(c, ctx.mibs);
  const oids = numericOids(c, ix);
  const shard = ctx.shard;
  const targets = owned(
    // A shard builds its own targets only (the fleet's file is parsed once, cached while unchanged).
    await loadTargets(c, top, shard && ((id) => shard.targets.has(id))),
    (t) => t.id,
    ctx.shard,
    (ids) => notes.push(`snmp_poll: ${ids.length} target(s) of this shard are not in this worker's target list (${ids.slice(0, 10).join(', ')}): not polled`),
  );
  const rowOpts: RowOptions = {
    ix: c.resolve_oids ? ix : undefined,
    indexDepth: c.index_depth ?? 0,
    classify: c.classify ?? false,
    cache: new Map(),
    splits: new Map(),
  };
  const limit = c.max_concurrency ?? 100;
  const deadlineMs = (c.target_timeout_seconds ?? 60) * 1000;
  const pollSeconds = ctx.telemetry?.metric?.('svc_snmp_poll_seconds');
  const pollErrors = ctx.telemetry?.metric?.('svc_snmp_poll_errors_total');
  report('connecting');
  let answered = 0;
  let failed = 0;
  // One connected socket per poll in flight, reused from target to target (docs/connectors/snmp_poll.md).
  const sockets = new UdpSocketPool(limit);
  try {
    yield* fleetUnits({
      targets,
      limit,
      deadlineMs,
      signal,
      deadlineMessage: (t) => `${t.id}: no complete answer within target_timeout_seconds (${c.target_timeout_seconds ?? 60}s); skipped`,
      poll: (t, aborted) => pollTarget(t, c, oids, rowOpts, aborted, sockets),
      accept(t, { records, notes: n }, seconds) {
        pollSeconds?.observe({ target: t.id }, seconds);
        answered++;
        report('connected');
        notes.push(...n);
        const body = Buffer.from(JSON.stringify(records));
        return {
          meta: { source_path: `udp://${t.id}`, snmp_target: t.id },
          size: body.length,
          async *read() {
            yield body;
          },
        };
      },
      fail(t, e, seconds) {
        failed++;
        pollSeconds?.observe({ target: t.id }, seconds);
        pollErrors?.inc({ target: t.id, reason: reasonOf(e) });
        const msg = e instanceof TargetDeadlineError ? e.message : `${t.id}: ${failure(t, e, top)}`;
        notes.push(`snmp_poll: ${msg}`);
        ctx.log.warn({ target: t.id, reason: reasonOf(e) }, `snmp_poll: ${ctx.redact ? ctx.redact(msg) : msg}`);
      },
    });
  } finally {
    sockets.close();
  }
  if (!signal.aborted && answered === 0 && failed > 0) report('disconnected', `no target answered (${failed} failed)`);
}
