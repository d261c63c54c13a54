// Sink `nats`: publishes each record as one core NATS message, then flushes (a PING answered by the
// server) before the write counts: the server has received every message of the batch. Core NATS
// stores nothing: a subscriber that is not connected at that moment never gets them
// (at-most-once end to end). A refused publish (permissions) or an oversized record fails the
// batch for good; a lost connection is retried by the runtime on a new one.
import { Type } from '@sinclair/typebox';
import type { NatsConnection } from '@nats-io/transport-node';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink } from '../../types.js';
import { authFields, connectNats, hasWildcard, isInvalidArgument, isPermissionViolation, lintAuth, onLost, serverFields } from './client.js';

const config = Type.Object(
  {
    ...serverFields,
    subject: Type.String({ minLength: 1, pattern: '^\\S+$', description: 'Subject every message is published to (no wildcards).' }),
    ...authFields,
  },
  { additionalProperties: false },
);

interface Link {
  nc: NatsConnection;
  /** Publishes the server refused since the last write (-ERR 'Permissions Violation for Publish'). */
  refused?: Error;
}

export default defineSink({
  key: 'nats',
  summary: 'Publish each record as a core NATS message; the write waits until the server has them all.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-most-once',
    why: 'a write counts once the server answered a flush after the last message, so the server has them all; but core NATS neither stores messages nor confirms them to subscribers: one that is disconnected or slow misses them, and a write retried after a lost connection may publish part of a batch twice.',
  },
  config,
  lint(c) {
    const issues = lintAuth(c);
    if (hasWildcard(c.subject)) issues.push({ path: 'subject', message: "a sink publishes to one subject: no wildcard tokens ('*', '>')" });
    return issues;
  },
  examples: [
    {
      title: 'Enriched alarms to one subject',
      yaml: "type: nats\nservers: ['nats://nats-1:4222', 'nats://nats-2:4222']\nsubject: alarms.enriched\nusername: svc\npassword: ${NATS_PASSWORD:-change-me}",
    },
  ],
  async test(c) {
    const nc = await connectNats(c, 'svc connector test');
    try {
      await nc.flush();
    } finally {
      await nc.close().catch(() => {});
    }
  },
  create(c, ctx) {
    const link = new Connection<Link>(
      ctx,
      'nats',
      async (lost) => {
        const nc = await connectNats(c, `svc ${ctx.pipeline} ${ctx.component ?? 'sink'}`);
        const l: Link = { nc };
        onLost(nc, lost);
        void (async () => {
          for await (const s of nc.status()) {
            if (s.type === 'error' && isPermissionViolation(s.error) && s.error.operation === 'publish') l.refused ??= s.error;
          }
        })().catch(() => {});
        return l;
      },
      async ({ nc }) => nc.close().catch(() => {}),
    );
    /** Errors that come from the data or a refusal, not from the connection: retrying cannot help. */
    const permanent = (e: unknown) => isInvalidArgument(e) || isPermissionViolation(e);
    return {
      async write(batch) {
        const bytes = await link.use(
          async (l) => {
            l.refused = undefined;
            let sent = 0;
            try {
              for (const r of batch.records!) {
                const value = ctx.encoder.one(r);
                l.nc.publish(c.subject, value);
                sent += value.length;
              }
            } catch (e) {
              if (isInvalidArgument(e))
                throw new WriteError(`nats: ${e.message} (a record is larger than the server's max_payload of ${l.nc.info?.max_payload ?? '?'} bytes)`, false, {
                  cause: e,
                });
              throw e;
            }
            await l.nc.flush();
            // The server answers a refused publish with -ERR before the PONG; its status event is dispatched asynchronously.
            await new Promise((r) => setImmediate(r));
            const refused = l.refused as Error | undefined; // set by the status loop meanwhile
            if (refused) throw new WriteError(`nats: ${refused.message}`, false, { cause: refused });
            return sent;
          },
          (e) => !permanent(e),
        );
        return { bytes };
      },
      close: () => link.end(),
    };
  },
});
