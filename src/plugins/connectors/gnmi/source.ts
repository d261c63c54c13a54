// Source `gnmi` (stream): one gNMI Subscribe RPC to one target (a router, a switch, a gNMI
// gateway), in STREAM, ONCE or POLL mode, each update handed on as one JSON record (records.ts).
// gNMI has no acknowledgement: what the target sent while the source was down, or what was in
// flight when the pipeline failed, is not sent again (at-most-once). A lost session (the target
// restarted, the network broke, the target ended the RPC) is opened again with the shared backoff,
// and the subscription is sent again on the new RPC; the target then sends its current state
// again before sync_response, as the gNMI specification asks.
//
// Modes: STREAM keeps the RPC open (SAMPLE at sample_interval, ON_CHANGE on change, TARGET_DEFINED
// as the target chooses). POLL keeps it open and sends a Poll every poll_interval_seconds (the
// target answers with a snapshot and sync_response). ONCE: the target sends one snapshot and ends
// the RPC; this source, being a stream, then subscribes again (ONCE) every poll_interval_seconds on
// the same channel: a snapshot per interval, as gnmic's `--mode once` run from a scheduler would.
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../../core/errors.js';
import { secret } from '../../../core/secrets.js';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type LintIssue, type SourceMeta } from '../../types.js';
import { ANSWER_TIMEOUT_MS, capabilities, describeError, openClient, targetAddress, type SubscribeCall, type SubscribeResponse } from './client.js';
import { parsePath } from './path.js';
import { notificationRecords } from './records.js';

export const ENCODINGS = ['json', 'bytes', 'proto', 'ascii', 'json_ietf'] as const;

const subscription = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      description:
        'Path to subscribe to, `origin:/elem/elem[key=value]/leaf` (origin optional; `*` wildcards as the target allows); every leaf under it is received.',
    }),
    mode: Type.Union([Type.Literal('SAMPLE'), Type.Literal('ON_CHANGE'), Type.Literal('TARGET_DEFINED')], {
      default: 'TARGET_DEFINED',
      description:
        'How the target sends updates in `stream` mode: SAMPLE every `sample_interval`, ON_CHANGE when a value changes, TARGET_DEFINED as the target chooses per leaf. Ignored in `once` and `poll` modes.',
    }),
    sample_interval: Type.Integer({
      minimum: 0,
      default: 0,
      description: 'Nanoseconds between samples of a SAMPLE subscription (10000000000 = 10 s); 0 lets the target use its lowest interval.',
    }),
  },
  { additionalProperties: false },
);

const config = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'Host name or address of the gNMI target.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 57400, description: 'gNMI port of the target.' }),
    username: Type.Optional(Type.String({ minLength: 1, description: 'User name, sent as the `username` metadata of every RPC.' })),
    password: secret('Password of `username`, sent as the `password` metadata of every RPC.'),
    tls: Type.Boolean({ default: true, description: 'Connect with TLS; false opens an insecure (plain-text) channel, where the credentials travel in clear.' }),
    tls_ca: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Path of a PEM file of CA certificates that sign the target's certificate; default: the system's trusted CAs.",
      }),
    ),
    tls_server_name: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "Name to check in the target's certificate (and to send as TLS SNI) instead of `host`: for a target reached by address whose certificate names it by DNS name.",
      }),
    ),
    tls_skip_verify: Type.Boolean({
      default: false,
      description:
        'Accept any certificate from the target (no CA or name check): encryption without authentication, for lab targets with self-made certificates only.',
    }),
    subscription_mode: Type.Union([Type.Literal('stream'), Type.Literal('once'), Type.Literal('poll')], {
      default: 'stream',
      description:
        '`stream`: the target streams updates; `poll`: a snapshot each poll_interval_seconds on one open RPC; `once`: a snapshot RPC, made again every poll_interval_seconds.',
    }),
    poll_interval_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 60,
      description: 'Seconds between two Poll requests (`poll`) or two snapshot RPCs (`once`).',
    }),
    encoding: Type.Union(
      ENCODINGS.map((e) => Type.Literal(e)),
      {
        default: 'json',
        description:
          'Encoding the target is asked to use for values (SubscriptionList.encoding); a target refuses one it does not support (`supported_encodings` of Capabilities).',
      },
    ),
    subscriptions: Type.Array(subscription, { minItems: 1, description: 'The paths to subscribe to, all in one SubscriptionList.' }),
    ...reconnectFields(),
  },
  { additionalProperties: false },
);

type Config = typeof config.static;

function lint(c: Config): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.password !== undefined && c.username === undefined) issues.push({ path: 'password', message: 'password needs a username' });
  for (const k of ['tls_ca', 'tls_server_name'] as const)
    if (c[k] !== undefined && !c.tls) issues.push({ path: k, message: `${k} is used only with tls: true` });
  if (c.tls_skip_verify && !c.tls) issues.push({ path: 'tls_skip_verify', message: 'tls_skip_verify is used only with tls: true' });
  if (c.tls && c.tls_skip_verify && (c.tls_ca !== undefined || c.tls_server_name !== undefined))
    issues.push({ path: 'tls_skip_verify', message: 'tls_skip_verify checks nothing: tls_ca and tls_server_name would be ignored; use one or the other' });
  c.subscriptions.forEach((s, i) => {
    try {
      parsePath(s.path);
    } catch (e) {
      issues.push({ path: `subscriptions.${i}.path`, message: `invalid gNMI path ${errorMessage(e)}` });
    }
  });
  return issues;
}

/** The first SubscribeRequest: every subscription in one list. */
export function subscribeRequest(c: Config) {
  return {
    subscribe: {
      subscription: c.subscriptions.map((s) => ({ path: parsePath(s.path), mode: s.mode, sample_interval: String(s.sample_interval) })),
      mode: c.subscription_mode.toUpperCase(),
      encoding: c.encoding.toUpperCase(),
    },
  };
}

export default defineSource({
  key: 'gnmi',
  summary: 'Subscribe to a gNMI target (STREAM, ONCE or POLL; SAMPLE, ON_CHANGE, TARGET_DEFINED): one JSON record per update.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-most-once',
    why: 'a gNMI target neither acknowledges updates nor keeps a backlog for a client: updates sent while the source is disconnected or reconnecting, or in flight when the pipeline fails, are not sent again. After a reconnect the target sends its current state again (up to sync_response), so the latest value of every leaf comes back, not the changes in between.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Interface counters every 10 s, and oper-status on change, over TLS',
      yaml: 'type: gnmi\nhost: rtr1.example.net\nport: 57400\nusername: svc\npassword: ${GNMI_PASSWORD:-change-me}\ntls_ca: /etc/svc/gnmi-ca.pem\nsubscriptions:\n  - path: /interfaces/interface/state/counters\n    mode: SAMPLE\n    sample_interval: 10000000000\n  - path: /interfaces/interface[name=Ethernet1]/state/oper-status\n    mode: ON_CHANGE',
    },
    {
      title: 'A snapshot of the system state every 5 minutes (POLL), insecure lab target',
      yaml: "type: gnmi\nhost: 10.0.0.5\ntls: false\nsubscription_mode: poll\npoll_interval_seconds: 300\nencoding: json_ietf\nsubscriptions:\n  - path: 'openconfig:/system/state'",
    },
  ],
  async test(c) {
    const client = await openClient(c);
    try {
      await capabilities(client, ANSWER_TIMEOUT_MS);
    } finally {
      client.close();
    }
  },
  create(c, ctx) {
    const request = subscribeRequest(c);
    const address = targetAddress(c.host, c.port);
    const meta: SourceMeta = { target: address };
    const pollMs = c.poll_interval_seconds * 1000;
    return streamSource<Message>(ctx, {
      type: 'gnmi',
      reconnect: c,
      acknowledges: false,
      async connect({ push, lost, signal }) {
        const client = await openClient(c);
        let closed = false;
        let paused = false;
        let call: SubscribeCall | undefined;
        let timer: NodeJS.Timeout | undefined;

        const onResponse = (r: SubscribeResponse) => {
          if (r.response !== 'update' || !r.update) return; // sync_response: the initial state is complete
          for (const rec of notificationRecords(r.update, address)) push({ body: Buffer.from(JSON.stringify(rec)), meta });
        };

        /** One Subscribe RPC; resolves at its first answer (headers or a message), rejects if it fails before. */
        const subscribe = () =>
          new Promise<void>((resolve, reject) => {
            let answered = false;
            const s = client.stub.Subscribe(client.metadata());
            call = s;
            if (paused) s.pause();
            const first = setTimeout(() => {
              if (answered) return;
              answered = true;
              s.cancel();
              reject(new Error(`${address} did not answer the subscription within ${ANSWER_TIMEOUT_MS / 1000} s`));
            }, ANSWER_TIMEOUT_MS);
            const answer = () => {
              if (answered) return;
              answered = true;
              clearTimeout(first);
              resolve();
            };
            s.on('metadata', answer);
            s.on('data', (r: SubscribeResponse) => {
              answer();
              onResponse(r);
            });
            s.on('error', () => {}); // the outcome is read from 'status'
            // An RPC the target ended (status OK) is over once its last message was read too (a
            // paused call may still hold some): then ONCE takes the next snapshot after
            // poll_interval_seconds, and STREAM or POLL counts the session as lost.
            let ok = false;
            let readAll = false;
            const over = () => {
              if (!ok || !readAll || closed || s !== call) return;
              if (c.subscription_mode !== 'once') return lost(new Error(`${address} ended the subscription`));
              timer = setTimeout(() => {
                if (closed) return;
                subscribe().catch((e: unknown) => lost(e as Error));
              }, pollMs);
            };
            s.on('end', () => {
              readAll = true;
              over();
            });
            s.on('status', (st: { code: number; details: string }) => {
              if (closed || s !== call) return;
              if (!answered) {
                answered = true;
                clearTimeout(first);
                return reject(describeError(st, address));
              }
              if (st.code !== 0) return lost(describeError(st, address));
              ok = true;
              over();
            });
            s.write(request);
          });

        try {
          await subscribe();
        } catch (e) {
          closed = true;
          client.close();
          throw e;
        }
        if (c.subscription_mode === 'poll') {
          timer = setInterval(() => {
            if (closed || signal.aborted) return;
            call?.write({ poll: {} });
          }, pollMs);
        }
        const session: Session<Message> = {
          pause() {
            paused = true;
            call?.pause();
            if (!signal.aborted)
              ctx.log.debug(
                { connector: 'gnmi', target: address },
                'gnmi: the pipeline is behind; stopped reading the subscription (HTTP/2 flow control holds the target back)',
              );
          },
          resume() {
            paused = false;
            call?.resume();
            ctx.log.debug({ connector: 'gnmi', target: address }, 'gnmi: reading the subscription again');
          },
          async close() {
            closed = true;
            clearTimeout(timer);
            clearInterval(timer);
            call?.cancel();
            client.close();
          },
        };
        return session;
      },
    });
  },
});
