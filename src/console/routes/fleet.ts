// The agent fleet (issue 14; beyond spec doc 1): POST starts N simulated agents, GET shows them,
// DELETE stops them. Conventions of the simulator routes: {detail} errors, 422 on bad input, 409
// on a busy port or a fleet already running. The service lives with this route scope and is
// stopped when the console closes. Decisions: docs/console.md (Agent fleet).
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ConsoleDeps } from '../deps.js';
import { DEFAULT_FLEET_AGENTS, FleetService, MAX_FLEET_AGENTS } from '../fleet.js';
import { bulkLimits } from '../simulator.js';
import { defaultBindHost, Nullable, StatusFields } from '../udp-service-base.js';

const tags = ['simulator'];

const V3User = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 32 }),
    auth_protocol: Type.Optional(Type.String({ description: 'MD5, SHA, SHA224, SHA256, SHA384, SHA512; default SHA when auth_key is given' })),
    auth_key: Type.Optional(Type.String({ description: 'Auth passphrase, at least 8 characters; omit for noAuthNoPriv' })),
    priv_protocol: Type.Optional(
      Type.String({ description: 'DES, 3DES, AES (= AES128), AES192, AES256, AES192C, AES256C; default AES128 when priv_key is given' }),
    ),
    priv_key: Type.Optional(Type.String({ description: 'Privacy passphrase, at least 8 characters; needs auth' })),
  },
  { additionalProperties: false },
);

const StartBody = Type.Object(
  {
    agents: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_FLEET_AGENTS, description: `Number of agents (default ${DEFAULT_FLEET_AGENTS})` })),
    base_port: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 65535,
        description: 'Agent i listens on base_port + i; 0 (default): each agent on a free port of its own (GET .../agents lists them)',
      }),
    ),
    host: Type.Optional(Type.String({ minLength: 1, description: 'IP address to bind (default SVC_HOST when it is an IP address, else 127.0.0.1)' })),
    interfaces: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Fewest interfaces an agent has (default 20)' })),
    interface_spread: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 999, description: 'Agent i has interfaces + 0..interface_spread interfaces, from the seed (default 8)' }),
    ),
    community: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'v1/v2c read community of every agent (default public)' })),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295, description: 'Everything that varies between agents derives from it (default 1)' })),
    fast_share: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'Share of agents whose counters run 100x faster, so Counter32 wraps within seconds (default 0.1)' }),
    ),
    v3_users: Type.Optional(
      Type.Array(V3User, { maxItems: 100, description: 'SNMPv3 users of every agent; each agent has its own engine ID. Keys are never shown back' }),
    ),
  },
  { additionalProperties: false },
);
type StartBody = Static<typeof StartBody>;

const Status = Type.Object({
  state: StatusFields.state,
  since: StatusFields.since,
  error: StatusFields.error,
  agents: Nullable(Type.Integer()),
  host: Nullable(Type.String()),
  base_port: Nullable(Type.Integer({ description: '0: ephemeral ports' })),
  ports: Nullable(Type.Object({ first: Type.Integer(), last: Type.Integer(), consecutive: Type.Boolean() }, { description: 'while running' })),
  community: Nullable(Type.String()),
  seed: Nullable(Type.Integer()),
  interfaces: Nullable(
    Type.Object({ min: Type.Integer(), max: Type.Integer(), total: Type.Integer() }, { description: 'while running: per agent and in all' }),
  ),
  fast_share: Nullable(Type.Number()),
  versions: Type.Array(Type.String()),
  v3_users: Type.Array(Type.Object({ username: Type.String(), auth_protocol: Nullable(Type.String()), priv_protocol: Nullable(Type.String()) })),
  started_at: Nullable(Type.String()),
  requests: Type.Integer({ description: 'messages received by all agents since the start' }),
  errors: Type.Integer({ description: 'refused or undecodable messages (v3 discovery and time sync excluded)' }),
});

const Agent = Type.Object({
  index: Type.Integer(),
  host: Type.String(),
  port: Type.Integer(),
  sys_name: Type.String(),
  interfaces: Type.Integer(),
  engine_id: Type.String({ description: 'hex' }),
  speed: Type.Number({ description: 'counter speed, 1 = the default device (~40 % of line rate)' }),
  fast: Type.Boolean(),
});
const AgentsQuery = Type.Object({
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_FLEET_AGENTS, default: MAX_FLEET_AGENTS })),
});

export default async function fleetRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const fleet = new FleetService(bulkLimits(deps.settings));
  const host = defaultBindHost(deps.settings.HOST);
  app.addHook('onClose', async () => fleet.close());
  const status = { 200: Status };

  app.get('/api/simulator/fleet', { schema: { tags, summary: 'Agent fleet state and configuration (never keys)', response: status } }, async () =>
    fleet.status(),
  );

  app.post(
    '/api/simulator/fleet',
    {
      schema: {
        tags,
        body: Type.Optional(Type.Union([StartBody, Type.Null()])),
        response: status,
        summary: 'Start a fleet of simulated agents (409 when one runs or a port is taken, 403 privileged port, 422 bad input); every field optional',
      },
    },
    async (req: FastifyRequest<{ Body: StartBody | null | undefined }>) => {
      await fleet.start(req.body ?? {}, host);
      return fleet.status();
    },
  );

  app.delete(
    '/api/simulator/fleet',
    { schema: { tags, response: status, summary: 'Stop the fleet and close every socket (a no-op when none runs)' } },
    async () => {
      await fleet.stop();
      return fleet.status();
    },
  );

  app.get(
    '/api/simulator/fleet/agents',
    {
      schema: {
        tags,
        querystring: AgentsQuery,
        response: { 200: Type.Object({ agents: Type.Array(Agent), total: Type.Integer() }) },
        summary: "The running fleet's agents: port, sysName, interfaces, engine ID (409 when none runs)",
      },
    },
    async (req: FastifyRequest<{ Querystring: Static<typeof AgentsQuery> }>) => fleet.agents(req.query.offset ?? 0, req.query.limit ?? MAX_FLEET_AGENTS),
  );
}
