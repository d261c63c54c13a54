// The trap receiver and sender (spec doc 1 sections 2-4): status, start, stop, the received events
// (newest first) and clearing them, and sending traps/informs. Decisions where doc 1 says "not
// shown": docs/console.md (Traps).
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ConsoleDeps } from '../deps.js';
import { DEFAULT_TRAP_PORT, MAX_RECEIVER_USERS, SEND_RETRIES, SEND_TIMEOUT_MS } from '../traps.js';
import { bindFields, defaultBindHost, EngineId, Nullable, StatusFields } from '../udp-service-base.js';
import { V3Fields, Version } from './walk.js';

const tags = ['traps'];

const ReceiverUser = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 32 }),
    auth_protocol: V3Fields.auth_protocol,
    auth_key: V3Fields.auth_key,
    priv_protocol: V3Fields.priv_protocol,
    priv_key: V3Fields.priv_key,
    engine_id: Type.Optional(EngineId("the sender's engine ID these keys belong to (hex, like snmptrapd's createUser -e); absent: any sender engine")),
  },
  { additionalProperties: false },
);

const bind = bindFields(DEFAULT_TRAP_PORT, 162);
const StartBody = Type.Object(
  {
    port: bind.port,
    community: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'accepted v1/v2c community; absent: any community is accepted (others are dropped and counted)',
      }),
    ),
    resolve_mibs: Type.Optional(
      Type.Boolean({ description: 'name the notification and varbinds from the active MIB bundle, with enum labels (default false)' }),
    ),
    host: bind.host,
    engine_id: Type.Optional(EngineId('our engine ID for v3 informs (hex, 5-32 bytes; default: generated once and kept)')),
    v3_users: Type.Optional(
      Type.Array(ReceiverUser, {
        maxItems: MAX_RECEIVER_USERS,
        description: 'SNMPv3 USM users (hundreds are fine; a name may repeat with different engine_id); keys are never shown back',
      }),
    ),
  },
  { additionalProperties: false },
);
type StartBody = Static<typeof StartBody>;

const Status = Type.Object({
  ...StatusFields,
  community: Nullable(Type.String({ description: 'null: any community' })),
  resolve_mibs: Type.Boolean(),
  v3_users: Type.Integer({ description: 'number of configured SNMPv3 users' }),
  engine_id: Nullable(Type.String({ description: 'hex; the engine ID v3 inform senders discover' })),
  started_at: Nullable(Type.String()),
  received: Type.Integer({ description: 'notifications accepted since this start' }),
  informs_acknowledged: Type.Integer(),
  dropped: Type.Integer({
    description: 'messages dropped since this start (wrong community, unknown user, bad digest, malformed, out of the time window, replays)',
  }),
  replays: Type.Integer({
    description: 'of dropped: replays of an authenticated SNMPv3 notification received already (same engine, boots, time, msgID and MAC)',
  }),
  last_drop: Nullable(Type.Object({ time: Type.String(), source: Type.String(), reason: Type.String() })),
  events: Type.Integer({ description: 'events stored (GET /api/traps/)' }),
  event_limit: Type.Integer({ description: 'application setting trap_event_limit' }),
  resume_on_console_start: Type.Boolean({ description: 'started and not stopped: it comes back when the console restarts' }),
});

const VarBindView = Type.Object({
  oid: Type.Optional(Type.String()),
  name: Type.Optional(Type.String({ description: 'MODULE::name.instance (resolve_mibs)' })),
  type: Type.String(),
  value: Type.Unknown({ description: 'Counter64 above 2^53-1 as a decimal string; OctetString text, or hex when encoding is hex' }),
  encoding: Type.Optional(Type.String()),
  label: Type.Optional(Type.String({ description: 'enum label, or the MIB name of an OID value' })),
  bits: Type.Optional(Type.Array(Type.String())),
  display: Type.Optional(Type.String({ description: 'DISPLAY-HINT form' })),
});

const V1View = Type.Object({ enterprise: Type.String(), agent_addr: Type.String(), generic_trap: Type.Integer(), specific_trap: Type.Integer() });

const TrapEventView = Type.Object({
  id: Type.Integer({ description: 'increasing per console run' }),
  time: Type.String(),
  source: Type.String({ description: 'sender address:port' }),
  version: Type.String(),
  kind: Type.String({ description: 'trap or inform' }),
  community: Type.Optional(Type.String()),
  user: Type.Optional(Type.String()),
  engine_id: Type.Optional(Type.String({ description: "v3: the authoritative engine ID (the sender's for traps, ours for informs)" })),
  trap_oid: Type.String(),
  trap_name: Type.Optional(Type.String({ description: 'resolve_mibs: MODULE::notification' })),
  uptime: Type.Optional(Type.Integer({ description: 'sysUpTime.0 (v1: time-stamp), hundredths of a second' })),
  varbinds: Type.Array(VarBindView),
  v1: Type.Optional(V1View),
  acknowledged: Type.Optional(Type.Boolean()),
});

const ListQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: 'at most this many (default: all stored)' })) });

const SendBody = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 255, description: 'destination host' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'destination UDP port (default 162)' })),
    community: Type.Optional(Type.String({ maxLength: 255, description: 'v1/v2c community (default public)' })),
    oid: Type.String({ minLength: 1, maxLength: 1024, description: 'notification OID: numeric or a MIB name (IF-MIB::linkDown); unknown names are 422' }),
    varbinds: Type.Optional(
      Type.Array(
        Type.Object(
          {
            oid: Type.String({ minLength: 1, maxLength: 1024, description: 'numeric or a MIB name (IF-MIB::ifIndex.3)' }),
            type: Type.Optional(
              Type.String({
                description:
                  'Integer32, OctetString (string), hex, ObjectIdentifier, IpAddress, Counter32, Gauge32 (Unsigned32), TimeTicks, Counter64, Opaque (hex), Null; net-snmp letters i u t a o s x c C n. Optional when the MIB gives the syntax.',
              }),
            ),
            value: Type.Optional(
              Type.Unknown({ description: 'fitting the type; Counter64 beyond 2^53 as a decimal string; enum labels for enumerated INTEGERs' }),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 1000 },
      ),
    ),
    version: Type.Optional(Version),
    inform: Type.Optional(Type.Boolean({ description: 'send an inform and wait for the acknowledgement (v2c, v3); no acknowledgement: 504' })),
    ...V3Fields,
    engine_id: Type.Optional(EngineId('v3 traps: our engine ID (hex) as the receiver knows it (snmptrapd createUser -e); default: one per process')),
    agent_addr: Type.Optional(Type.String({ pattern: '^\\d{1,3}(\\.\\d{1,3}){3}$', description: 'v1 traps: agent-addr (default 127.0.0.1)' })),
    uptime: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 4294967295, description: 'sysUpTime.0 to send, hundredths of a second (default: console process uptime)' }),
    ),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 60000, description: `informs: per-attempt timeout (default ${SEND_TIMEOUT_MS})` })),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: `informs: retries (default ${SEND_RETRIES})` })),
  },
  { additionalProperties: false },
);
type SendBody = Static<typeof SendBody>;

const SendResponse = Type.Object({
  sent: Type.Boolean(),
  target: Type.String(),
  port: Type.Integer(),
  version: Type.String(),
  kind: Type.String(),
  trap_oid: Type.String(),
  trap_name: Type.String({ description: 'MIB name of the notification (numeric when unknown)' }),
  uptime: Type.Integer(),
  varbinds: Type.Array(VarBindView, { description: 'as sent (after sysUpTime.0 and snmpTrapOID.0)' }),
  v1: Type.Optional(V1View),
  acknowledged: Type.Optional(Type.Boolean()),
  duration_ms: Type.Integer(),
});

export default async function trapRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const { traps } = deps;
  app.get(
    '/api/traps/status',
    { schema: { tags, summary: 'Trap receiver running state, config (keys never shown) and counters', response: { 200: Status } } },
    async () => traps.status(),
  );

  app.post(
    '/api/traps/start',
    {
      schema: {
        tags,
        summary: `Start the trap receiver (default port ${DEFAULT_TRAP_PORT}); 409 running or port in use, 403 privileged port: state error with the reason`,
        body: Type.Optional(Type.Union([StartBody, Type.Null()])),
        response: { 200: Status },
      },
    },
    async (req: FastifyRequest<{ Body: StartBody | null | undefined }>) => {
      await traps.start(await traps.normalize(req.body ?? {}, defaultBindHost(deps.settings.HOST)));
      return traps.status();
    },
  );

  app.post(
    '/api/traps/stop',
    { schema: { tags, summary: 'Stop the trap receiver (stopping a stopped receiver is fine; it clears state error)', response: { 200: Status } } },
    async () => {
      await traps.stop();
      return traps.status();
    },
  );

  app.get(
    '/api/traps/',
    {
      schema: {
        tags,
        summary: 'Received notifications, newest first (up to trap_event_limit kept)',
        querystring: ListQuery,
        response: { 200: Type.Object({ total: Type.Integer(), count: Type.Integer(), traps: Type.Array(TrapEventView) }) },
      },
    },
    async (req: FastifyRequest<{ Querystring: Static<typeof ListQuery> }>) => traps.list(req.query.limit),
  );

  app.delete(
    '/api/traps/',
    { schema: { tags, summary: 'Clear the received notifications', response: { 200: Type.Object({ cleared: Type.Integer() }) } } },
    async () => traps.clear(),
  );

  app.post(
    '/api/traps/send',
    {
      schema: {
        tags,
        summary: 'Send a trap (v1, v2c, v3) or an inform (v2c, v3); 422 unknown names or values that do not fit, 504 inform not acknowledged',
        body: SendBody,
        response: { 200: SendResponse },
      },
    },
    async (req: FastifyRequest<{ Body: SendBody }>) => traps.send(req.body),
  );
}
