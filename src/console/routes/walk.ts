// POST /api/walk/execute (spec doc 1 sections 2 and 4): walk a target agent, results parsed or as
// net-snmp text, flat or grouped by table. Decisions where doc 1 says "not shown": docs/console.md.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ConsoleDeps } from '../deps.js';
import { DEFAULT_WALK_OID, MAX_CONCURRENT_WALKS, Walker } from '../walk.js';

const tags = ['walker'];

/** SNMPv3 fields shared by the walk and the trap send requests. */
export const V3Fields = {
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'SNMPv3 user (version "3")' })),
  auth_protocol: Type.Optional(Type.String({ description: 'MD5, SHA, SHA224, SHA256, SHA384, SHA512 (dashes allowed); default SHA when auth_key is given' })),
  auth_key: Type.Optional(Type.String({ description: 'auth passphrase, at least 8 characters; omit for noAuthNoPriv' })),
  priv_protocol: Type.Optional(
    Type.String({
      description: 'DES, 3DES, AES (= AES128), AES192, AES256 (net-snmp key extension), AES192C, AES256C (Cisco); default AES128 when priv_key is given',
    }),
  ),
  priv_key: Type.Optional(Type.String({ description: 'privacy passphrase, at least 8 characters; needs auth' })),
  context_name: Type.Optional(Type.String({ maxLength: 255, description: 'SNMPv3 context name (default empty)' })),
};

export const Version = Type.Union([Type.Literal('1'), Type.Literal('2c'), Type.Literal('3')], {
  description: "SNMP version: '1' (GETNEXT walk), '2c' (default), '3'",
});

const WalkBody = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 255, description: 'host of the agent: IP address or name' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 161, description: 'agent UDP port (default 161)' })),
    community: Type.Optional(Type.String({ maxLength: 255, default: 'public', description: 'v1/v2c community (default public)' })),
    oid: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        default: DEFAULT_WALK_OID,
        description: `start OID: numeric (default ${DEFAULT_WALK_OID}), or a name the loaded MIBs know (IF-MIB::ifTable, ifTable, sysDescr.0)`,
      }),
    ),
    parse: Type.Optional(
      Type.Boolean({ default: true, description: 'true (default): typed JSON varbinds {oid, type, value}; false: lines as snmpwalk -On prints them' }),
    ),
    use_mibs: Type.Optional(
      Type.Boolean({ default: false, description: 'name OIDs from the active MIB bundle (IF-MIB::ifInOctets.3), with enum labels and DISPLAY-HINT forms' }),
    ),
    json_format: Type.Optional(
      Type.Union([Type.Literal('current'), Type.Literal('grouped')], {
        default: 'current',
        description: "'current' (default): a flat list in walk order; 'grouped': scalars and tables (rows keyed by index, columns by name)",
      }),
    ),
    version: Type.Optional(Version),
    ...V3Fields,
    max_repetitions: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 200, description: 'GETBULK max-repetitions (default: application setting walk_max_repetitions)' }),
    ),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 60000, description: 'per-request timeout (default: walk_timeout_ms)' })),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: 'retries per request (default: walk_retries)' })),
    max_oids: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: 'stop after this many OIDs (default and upper bound: walk_max_oids)' })),
  },
  { additionalProperties: false },
);
type WalkBody = Static<typeof WalkBody>;

const WalkResponse = Type.Object({
  target: Type.String(),
  port: Type.Integer(),
  version: Type.String(),
  oid: Type.String({ description: 'numeric start OID' }),
  oid_name: Type.Optional(Type.String({ description: 'use_mibs: its MIB name' })),
  operation: Type.String({ description: 'GETBULK (v2c, v3) or GETNEXT (v1)' }),
  max_repetitions: Type.Optional(Type.Integer()),
  format: Type.String(),
  parse: Type.Boolean(),
  use_mibs: Type.Boolean(),
  count: Type.Integer({ description: 'varbinds returned' }),
  truncated: Type.Boolean({ description: 'the walk stopped at max_oids before the end of the subtree' }),
  max_oids: Type.Integer(),
  duration_ms: Type.Integer(),
  results: Type.Optional(
    Type.Array(Type.Unknown(), { description: "current: {oid, name?, type, value, encoding?, label?, bits?, display?} (parse) or 'OID = TYPE: value' lines" }),
  ),
  scalars: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'grouped: MODULE::name.0 -> {oid, type, value, ...} (parse) or the value text' }),
  ),
  tables: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: 'grouped: MODULE::table -> {oid, entry, index, columns, row_count, rows: {index: {column: cell}}}',
    }),
  ),
  other: Type.Optional(Type.Array(Type.Unknown(), { description: 'grouped: varbinds the MIBs do not place in a table or scalar' })),
});

export default async function walkRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const walker = new Walker(deps);
  app.post(
    '/api/walk/execute',
    {
      schema: {
        tags,
        summary: `Walk a subtree of a target agent (GETBULK for v2c/v3, GETNEXT for v1); 504 no answer, 502 unreachable or refused, 400 unknown host, 429 beyond ${MAX_CONCURRENT_WALKS} walks at once`,
        body: WalkBody,
        response: { 200: WalkResponse },
      },
    },
    async (req: FastifyRequest<{ Body: WalkBody }>) => walker.execute(req.body),
  );
}
