// Source `webhook` (stream): every POST to /webhooks/<path> becomes one unit of input. The body is
// accepted (202) into a bounded queue; a full queue answers 503 so senders back off.
//
// Under the daemon (services.stateDir) each body is appended to a spool on disk before the 202, and
// the spool is committed only once the unit holding it is delivered (done(true)). A crash therefore
// never loses an acknowledged body: the next start replays what was not committed. Delivery is
// at-least-once: bodies delivered just before a crash (commit not yet recorded) come again. The
// queue and spool are shared with prometheus_rw: src/plugins/connector-runtime/webhook-stream.ts.
import { Type } from '@sinclair/typebox';
import { webhookStream } from '../../connector-runtime/webhook-stream.js';
import { defineSource } from '../../types.js';

export { spoolDir } from '../../connector-runtime/webhook-stream.js';

const config = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      pattern: '^/?[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*/?$',
      description: 'Served at POST /webhooks/<path>; nested paths (a/b/c) are allowed.',
    }),
    secret: Type.Optional(
      Type.String({ minLength: 1, writeOnly: true, description: 'Bearer token the sender must present (Authorization: Bearer <secret>); 401 otherwise.' }),
    ),
    max_queue_size: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Requests held before the pipeline takes them; beyond it the endpoint answers 503.',
    }),
  },
  { additionalProperties: false },
);

export default defineSource({
  key: 'webhook',
  summary: 'Receive HTTP POST bodies at /webhooks/<path> (VES events, alarms, JSON from any system).',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a body is answered 202 only once it is on disk in the spool, and committed there only after its unit was delivered; a crash replays what was not committed.',
  },
  config,
  resources: (c) => [{ kind: 'ingress', path: c.path }],
  // Nothing to reach: the daemon serves the path itself once the stream runs.
  async test() {},
  examples: [
    { title: 'Alarm webhook with a shared secret', yaml: 'type: webhook\npath: alarms/core\nsecret: ${ALARM_SECRET:-change-me}\nmax_queue_size: 5000' },
  ],
  create: (c, ctx) => webhookStream(c, ctx, { type: 'webhook' }),
});
