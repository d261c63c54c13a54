// What the SNMP connectors (snmp_trap source and sink, snmp_poll) share: the version and SNMPv3 (USM) fields, the USM user built
// from them, and MIB resolution through the MIB store (src/mib/store.ts: the bundled MIBs, the
// uploaded source groups, plus the pipeline's own mib_dirs). The protocol itself is the one SNMP
// stack of the product (src/snmp/): TrapReceiver, the trap sender's encoders, USM with every
// auth and privacy protocol.
import { resolve } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { MibIndex } from '../../mib/mib-index.js';
import type { MibResolver } from '../../mib/resolver.js';
import type { SnmpVersion } from '../../snmp/message.js';
import type { TargetOptions } from '../../snmp/session.js';
import { parseAuthProtocol, parsePrivProtocol, type UsmUserConfig } from '../../snmp/usm.js';
import { secret } from '../../core/secrets.js';
import { SourceError } from '../../core/errors.js';
import type { LintIssue } from '../types.js';

export const AUTH_PROTOCOLS = ['MD5', 'SHA', 'SHA224', 'SHA256', 'SHA384', 'SHA512'] as const;
export const PRIV_PROTOCOLS = ['DES', '3DES', 'AES', 'AES128', 'AES192', 'AES256'] as const;

const lit = <T extends string>(xs: readonly T[]) => xs.map((x) => Type.Literal(x));

export const versionField = (description: string) => Type.Union([Type.Literal('1'), Type.Literal('2c'), Type.Literal('3')], { default: '2c', description });

export const communityField = (description: string) => Type.String({ default: 'public', writeOnly: true, description });

const authProtocol = (description: string) => Type.Union(lit(AUTH_PROTOCOLS), { default: 'SHA', description });
const privProtocol = (description: string) => Type.Union(lit(PRIV_PROTOCOLS), { default: 'AES128', description });

/** SNMPv3 (USM) fields of doc 3; the security level follows from the keys given. */
export const v3Fields = {
  security_name: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'SNMPv3 user (USM security name); required with version 3.' })),
  auth_protocol: authProtocol('SNMPv3 authentication protocol (HMAC): MD5, SHA (SHA-1), SHA224, SHA256, SHA384 or SHA512 (RFC 7860).'),
  auth_key: secret('SNMPv3 authentication passphrase (at least 8 characters). Without it the user is noAuthNoPriv.'),
  priv_protocol: privProtocol(
    'SNMPv3 privacy protocol: DES, 3DES (3DES-EDE, Reeder draft), AES = AES128 (RFC 3826), AES192 or AES256 (Blumenthal key extension, as net-snmp). Used only with priv_key.',
  ),
  priv_key: secret('SNMPv3 privacy passphrase (at least 8 characters); needs auth_key (authPriv).'),
  context_name: Type.Optional(Type.String({ description: 'SNMPv3 context name (default empty).' })),
};

/**
 * The SNMP fields one agent of a list may set over the top-level ones (snmp_poll's `targets`, the
 * flow source's `enrich_interfaces.exporters`): port, community, version and the SNMPv3 fields.
 */
export const perAgentFields = {
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'UDP port of this agent (default: the top-level port).' })),
  community: secret('Community of this agent (default: the top-level community).'),
  version: Type.Optional(
    Type.Union([Type.Literal('1'), Type.Literal('2c'), Type.Literal('3')], { description: 'SNMP version of this agent (default: the top-level version).' }),
  ),
  security_name: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'SNMPv3 user of this agent.' })),
  auth_protocol: Type.Optional(Type.Union(lit(AUTH_PROTOCOLS), { description: 'SNMPv3 authentication protocol of this agent.' })),
  auth_key: secret('SNMPv3 authentication passphrase of this agent.'),
  priv_protocol: Type.Optional(Type.Union(lit(PRIV_PROTOCOLS), { description: 'SNMPv3 privacy protocol of this agent.' })),
  priv_key: secret('SNMPv3 privacy passphrase of this agent.'),
  context_name: Type.Optional(Type.String({ description: 'SNMPv3 context name of this agent.' })),
};

/** The per-agent SNMP fields (top level and list entries). */
export interface SnmpFields {
  port?: number;
  community?: string;
  version?: SnmpVersion;
  security_name?: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
  context_name?: string;
}

export const PER_AGENT_KEYS = [
  'port',
  'community',
  'version',
  'security_name',
  'auth_protocol',
  'auth_key',
  'priv_protocol',
  'priv_key',
  'context_name',
] as const;

/**
 * The session options of one agent at `host`: its own fields over the top-level ones (`who` names
 * it in the error of an SNMPv3 agent without a user).
 */
export function agentSessionOptions(
  host: string,
  entry: SnmpFields,
  top: SnmpFields & { timeout: number; retries: number },
  who: string,
): TargetOptions & { port: number; version: SnmpVersion } {
  const f: SnmpFields = {};
  for (const k of PER_AGENT_KEYS) (f as Record<string, unknown>)[k] = entry[k] ?? top[k];
  const port = f.port ?? 161;
  const version = f.version ?? '2c';
  let user: UsmUserConfig | undefined;
  if (version === '3') {
    if (!f.security_name) throw new SourceError(`${who}: SNMPv3 needs security_name`);
    user = {
      name: f.security_name,
      ...(f.auth_key ? { authProtocol: f.auth_protocol ?? 'SHA', authKey: f.auth_key } : {}),
      ...(f.auth_key && f.priv_key ? { privProtocol: f.priv_protocol ?? 'AES128', privKey: f.priv_key } : {}),
    };
  }
  return {
    host,
    port,
    version,
    community: f.community ?? 'public',
    ...(user ? { user } : {}),
    ...(f.context_name ? { contextName: f.context_name } : {}),
    timeoutMs: Math.round(top.timeout * 1000),
    retries: top.retries,
  };
}

/** One entry of the source's `users` list: a fleet with different credentials. */
export const userItem = Type.Object(
  {
    security_name: Type.String({ minLength: 1, maxLength: 32, description: 'USM security name.' }),
    auth_protocol: authProtocol('Authentication protocol of this user.'),
    auth_key: secret('Authentication passphrase of this user (none: noAuthNoPriv).'),
    priv_protocol: privProtocol('Privacy protocol of this user.'),
    priv_key: secret('Privacy passphrase of this user (needs auth_key).'),
    engine_id: Type.Optional(
      Type.String({
        pattern: '^(0x)?([0-9a-fA-F]{2}){5,32}$',
        description:
          "Hex engine ID of the sender these keys belong to (snmptrapd's createUser -e): the same user name may then have other keys on other engines. Absent: the keys hold for any sender engine.",
      }),
    ),
  },
  { additionalProperties: false },
);

export interface V3Config {
  version: '1' | '2c' | '3';
  security_name?: string;
  auth_protocol: string;
  auth_key?: string;
  priv_protocol: string;
  priv_key?: string;
  context_name?: string;
}

/** The USM user of a config (version 3), protocols checked; undefined for v1/v2c. */
export function usmUser(c: Pick<V3Config, 'security_name' | 'auth_protocol' | 'auth_key' | 'priv_protocol' | 'priv_key'>): UsmUserConfig {
  return {
    name: c.security_name ?? '',
    ...(c.auth_key !== undefined ? { authProtocol: parseAuthProtocol(c.auth_protocol), authKey: c.auth_key } : {}),
    ...(c.priv_key !== undefined ? { privProtocol: parsePrivProtocol(c.priv_protocol), privKey: c.priv_key } : {}),
  };
}

/** Cross-field rules of one set of USM fields (`at` prefixes the paths: `users[2].`). */
export function lintUser(u: { auth_key?: string; priv_key?: string }, at = ''): LintIssue[] {
  const issues: LintIssue[] = [];
  if (u.priv_key !== undefined && u.auth_key === undefined)
    issues.push({ path: `${at}priv_key`, message: 'privacy needs authentication: set auth_key too (authPriv), or remove priv_key' });
  for (const k of ['auth_key', 'priv_key'] as const) {
    const v = u[k];
    if (v !== undefined && v.length < 8 && !/^\$\{/.test(v))
      issues.push({ path: `${at}${k}`, message: 'an SNMPv3 passphrase has at least 8 characters (RFC 3414)' });
  }
  return issues;
}

export function lintV3(c: V3Config): LintIssue[] {
  const issues = lintUser(c);
  const v3Set = c.security_name !== undefined || c.auth_key !== undefined || c.priv_key !== undefined;
  if (c.version === '3' && c.security_name === undefined) issues.push({ path: 'security_name', message: 'version 3 needs security_name (the USM user)' });
  if (c.version !== '3' && v3Set) issues.push({ path: 'version', message: "SNMPv3 fields (security_name, auth_key, priv_key) are set: use version '3'" });
  return issues;
}

// ---- MIB resolution ------------------------------------------------------------------------------

export interface MibConfig {
  mib_dirs?: string[];
  mib_modules?: string[];
}

/**
 * The MIB index of the run's MIBs (`mibs`: PluginContext.mibs, what the process knows: the MIB
 * store, a worker's MIBs synced from its manager) with `mib_dirs` in front (most specific first).
 * Throws when a module of `mib_modules` is not loaded.
 */
export async function mibIndex(c: MibConfig, mibs: MibResolver | undefined): Promise<MibIndex> {
  if (!mibs) throw new Error('MIB names cannot be resolved here: this run was given no MIBs (PluginContext.mibs)');
  const ix = await mibs.index((c.mib_dirs ?? []).map((d) => resolve(d)));
  const missing = (c.mib_modules ?? []).filter((m) => !ix.module(m));
  if (missing.length)
    throw new Error(
      `MIB module${missing.length > 1 ? 's' : ''} ${missing.join(', ')} not loaded: put ${missing.length > 1 ? 'their sources' : 'its source'} in a directory of mib_dirs (or upload ${missing.length > 1 ? 'them' : 'it'} to the MIB store), and check that ${missing.length > 1 ? 'they compile' : 'it compiles'} (GET /api/mibs)`,
    );
  return ix;
}

/**
 * A numeric OID for `text`: numeric as is; `MODULE::name[.index]`; or a bare `name[.index]`,
 * looked up in the modules of `mib_modules` first, then in every loaded module. Undefined when unknown.
 */
export function resolveName(ix: MibIndex | undefined, modules: string[], text: string): string | undefined {
  const s = text.trim();
  if (/^\.?\d+(\.\d+)+$/.test(s)) return s.replace(/^\./, '');
  if (!ix) return undefined;
  try {
    if (!s.includes('::'))
      for (const m of modules) {
        const r = ix.toNumeric(`${m}::${s}`);
        if (r) return r.oid;
      }
    return ix.toNumeric(s)?.oid;
  } catch {
    return undefined;
  }
}
