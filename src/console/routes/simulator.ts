// The SNMP agent simulator (spec doc 1 sections 2-4): status, start, stop, restart, custom OID
// overrides (data) and the activity log. Decisions where doc 1 says "not shown": docs/console.md.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { OidOverride } from '../../snmp/agent.js';
import type { ConsoleDeps } from '../deps.js';
import { DEFAULT_COMMUNITY, DEFAULT_SIMULATOR_PORT, MAX_OVERRIDES } from '../simulator.js';
import { bindFields, defaultBindHost, EngineId, Nullable, StatusFields } from '../udp-service-base.js';

const tags = ['simulator'];

const V3User = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 32 }),
    auth_protocol: Type.Optional(
      Type.String({ description: 'MD5, SHA, SHA224, SHA256, SHA384, SHA512 (dashes allowed, e.g. SHA-256); default SHA when auth_key is given' }),
    ),
    auth_key: Type.Optional(Type.String({ description: 'Auth passphrase, at least 8 characters; omit for noAuthNoPriv' })),
    priv_protocol: Type.Optional(
      Type.String({
        description:
          'DES, 3DES, AES (= AES128), AES128, AES192, AES256 (net-snmp key extension), AES192C, AES256C (Cisco); default AES128 when priv_key is given',
      }),
    ),
    priv_key: Type.Optional(Type.String({ description: 'Privacy passphrase, at least 8 characters; needs auth' })),
  },
  { additionalProperties: false },
);

const bind = bindFields(DEFAULT_SIMULATOR_PORT, 161);
const StartBody = Type.Object(
  {
    port: bind.port,
    community: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: `v1/v2c read community (default ${DEFAULT_COMMUNITY})` })),
    host: bind.host,
    write_community: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Community allowed to SET (default none: read-only). SET values last until the simulator stops.',
      }),
    ),
    engine_id: Type.Optional(EngineId('SNMPv3 engine ID, 5-32 bytes hex (default: generated once and kept)')),
    v3_users: Type.Optional(Type.Array(V3User, { maxItems: 100, description: 'SNMPv3 USM users; keys are never shown back' })),
  },
  { additionalProperties: false },
);
type StartBody = Static<typeof StartBody>;

const Status = Type.Object({
  ...StatusFields,
  community: Type.String(),
  writable: Type.Boolean({ description: 'a write community is configured (it is not shown)' }),
  versions: Type.Array(Type.String(), { description: "'1', '2c', and '3' when there are v3 users" }),
  v3_users: Type.Array(Type.Object({ username: Type.String(), auth_protocol: Nullable(Type.String()), priv_protocol: Nullable(Type.String()) })),
  engine_id: Nullable(Type.String({ description: 'hex' })),
  started_at: Nullable(Type.String()),
  uptime_s: Nullable(Type.Integer()),
  oids: Nullable(Type.Integer({ description: 'OIDs served while running (device plus overrides)' })),
  overrides: Type.Integer({ description: 'number of custom OID overrides' }),
  log_entries: Type.Integer(),
  resume_on_console_start: Type.Boolean({ description: 'it was started and not stopped: it comes back when the console restarts' }),
});

const Override = Type.Object(
  {
    oid: Type.String({ minLength: 1, description: 'numeric OID of the instance, e.g. 1.3.6.1.2.1.1.5.0' }),
    type: Type.String({
      minLength: 1,
      description:
        'Integer32, OctetString (or string), hex, ObjectIdentifier, IpAddress, Counter32, Gauge32, TimeTicks, Opaque (hex), Counter64; aliases as in docs/snmp.md',
    }),
    value: Type.Unknown({ description: 'a value fitting the type; Counter64 above 2^53 as a decimal string' }),
  },
  { additionalProperties: false },
);
// The same shape as GET answers, so a saved list can be posted back.
const OverridesBody = Type.Object({ overrides: Type.Array(Override, { maxItems: MAX_OVERRIDES }) }, { additionalProperties: false });
const OverridesResponse = Type.Object({
  overrides: Type.Array(Override),
  count: Type.Integer(),
  applied_live: Type.Optional(Type.Boolean({ description: 'POST: the running simulator serves them already' })),
});

const LogEntry = Type.Object({
  id: Type.Integer({ description: 'increasing sequence number' }),
  time: Type.String(),
  source: Type.String({ description: 'manager address:port' }),
  version: Type.String({ description: "'1', '2c', '3' or '?' (undecodable)" }),
  principal: Type.String({ description: 'community or v3 user name' }),
  request: Type.String({ description: 'get, getnext, getbulk, set, or unknown for refused messages' }),
  oids: Type.Array(Type.String(), { description: 'first 10 requested OIDs' }),
  varbinds: Type.Integer(),
  error: Type.Optional(
    Type.String({ description: 'why a message was refused (unknown community, wrongDigest...) or a v3 step (engine discovery, time sync)' }),
  ),
});
const LogsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000 })) });

export default async function simulatorRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const sim = deps.simulator;
  const host = defaultBindHost(deps.settings.HOST);
  const defaults = () => sim.normalize({}, host);
  const status = { 200: Status };

  app.get('/api/simulator/status', { schema: { tags, summary: 'Simulator running state and configuration (never keys)', response: status } }, async () =>
    sim.status(),
  );

  app.post(
    '/api/simulator/start',
    {
      schema: {
        tags,
        body: Type.Optional(Type.Union([StartBody, Type.Null()])),
        response: status,
        summary: 'Start the simulator (409 when running or the port is taken, 403 privileged port, 422 bad input); every field optional, the body too',
      },
    },
    async (req: FastifyRequest<{ Body: StartBody | null | undefined }>) => {
      await sim.start(sim.normalize(req.body ?? {}, host));
      return sim.status();
    },
  );

  app.post(
    '/api/simulator/stop',
    { schema: { tags, response: status, summary: 'Stop the simulator (a no-op when stopped; clears state error)' } },
    async () => {
      await sim.stop();
      return sim.status();
    },
  );

  app.post(
    '/api/simulator/restart',
    { schema: { tags, response: status, summary: 'Stop if running, then start with the last start config (defaults when never started)' } },
    async () => {
      await sim.restart(defaults());
      return sim.status();
    },
  );

  app.get(
    '/api/simulator/data',
    { schema: { tags, response: { 200: OverridesResponse }, summary: 'Custom OID overrides (they win over the simulated device)' } },
    async () => {
      const overrides = sim.getOverrides();
      return { overrides, count: overrides.length };
    },
  );

  app.post(
    '/api/simulator/data',
    {
      schema: {
        tags,
        body: OverridesBody,
        response: { 200: OverridesResponse },
        summary: 'Replace the custom OID overrides: validated (422 names the entry), persisted, applied live',
      },
    },
    async (req: FastifyRequest<{ Body: Static<typeof OverridesBody> }>) => {
      const applied = await sim.setOverrides(req.body.overrides as OidOverride[]);
      const overrides = sim.getOverrides();
      return { overrides, count: overrides.length, applied_live: applied };
    },
  );

  app.get(
    '/api/simulator/logs',
    {
      schema: {
        tags,
        querystring: LogsQuery,
        response: {
          200: Type.Object({
            entries: Type.Array(LogEntry),
            total: Type.Integer({ description: 'entries kept' }),
            capacity: Type.Integer({ description: 'simulator_log_limit' }),
          }),
        },
        summary: 'Recent activity, newest first (at most simulator_log_limit kept, in memory)',
      },
    },
    async (req: FastifyRequest<{ Querystring: Static<typeof LogsQuery> }>) => sim.logs(req.query.limit),
  );

  app.delete(
    '/api/simulator/logs',
    { schema: { tags, response: { 200: Type.Object({ ok: Type.Boolean(), cleared: Type.Integer() }) }, summary: 'Clear the activity log' } },
    async () => ({ ok: true, cleared: sim.clearLogs() }),
  );
}
