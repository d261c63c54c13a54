// Sink `redis`: each record is one list element (RPUSH, one command per batch) or one stream entry
// (XADD with a `data` field, MAXLEN ~ when maxlen is set; one script call per batch). A batch of
// more than one command (above 10,000 records) runs in a MULTI/EXEC transaction: all of it or none
// of it lands, so a retried write does not duplicate half a batch. The write resolves once Redis replied to EXEC (durable as Redis's persistence
// settings make it). A key of the wrong type fails the batch for good; other failures are retried.
import { Type } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink } from '../../types.js';
import { checkRedis, connectRedis, isReplyError, serverFields } from './client.js';
import { redisDlqReader } from './dlq-reader.js';

/** Most elements in one RPUSH or script call (a batch above it is split into several, inside one transaction). */
const ARGS_MAX = 10_000;

/**
 * Stream mode appends a batch with one small Lua script (XADD per record, atomic as a whole) rather
 * than a MULTI of one XADD per record: measured on 200,000 records, the client spent about 2.9 CPU-s
 * building one ioredis Command per XADD; the script takes one per 10,000 records. KEYS: the stream;
 * ARGV[1]: maxlen (0 = none); ARGV[2..]: the records.
 */
const SCRIPTS = {
  svcXadd: {
    numberOfKeys: 1,
    lua: "local n = tonumber(ARGV[1]) for i = 2, #ARGV do if n > 0 then redis.call('XADD', KEYS[1], 'MAXLEN', '~', n, '*', 'data', ARGV[i]) else redis.call('XADD', KEYS[1], '*', 'data', ARGV[i]) end end return #ARGV - 1",
  },
};

const config = Type.Object(
  {
    ...serverFields,
    key: Type.String({ minLength: 1, description: 'The list or stream to write.' }),
    mode: Type.Union([Type.Literal('list'), Type.Literal('stream')], {
      default: 'list',
      description: '`list`: RPUSH, one element per record (one command per batch); `stream`: XADD, one entry per record with the record in its `data` field.',
    }),
    maxlen: Type.Integer({
      minimum: 0,
      default: 0,
      description: 'mode stream: keep about this many entries (XADD MAXLEN ~, trimmed by whole macro nodes); 0 = unlimited.',
    }),
  },
  { additionalProperties: false },
);

export default defineSink({
  key: 'redis',
  summary: 'Append each record to a Redis list (RPUSH) or stream (XADD), one transaction per batch.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written once Redis answered its transaction (all records or none); a connection lost before the answer retries the whole batch, which may then be there twice.',
  },
  config,
  lint(c) {
    if (c.mode === 'list' && c.maxlen > 0) return [{ path: 'maxlen', message: 'applies to mode stream only' }];
    return [];
  },
  examples: [
    { title: 'A work list for other consumers', yaml: 'type: redis\nhost: redis.internal\npassword: ${REDIS_PASSWORD:-change-me}\nkey: alarms:queue' },
    { title: 'A capped stream of the last ~100,000 events', yaml: 'type: redis\nhost: redis.internal\nkey: pm:events\nmode: stream\nmaxlen: 100000' },
  ],
  test: (c) => checkRedis(c),
  dlqReader: redisDlqReader,
  create(c, ctx) {
    const link = new Connection<Redis>(
      ctx,
      'redis',
      (lost) => connectRedis(c, `svc ${ctx.pipeline} ${ctx.component ?? 'sink'}`, lost, SCRIPTS),
      async (r) => void (await r.quit().catch(() => r.disconnect())),
    );
    return {
      async write(batch) {
        const values = batch.records!.map((r) => ctx.encoder.one(r));
        if (values.length === 0) return;
        await link.use(
          async (r) => {
            const tx = values.length <= ARGS_MAX ? r.pipeline() : r.multi();
            for (let i = 0; i < values.length; i += ARGS_MAX) {
              const part = values.slice(i, i + ARGS_MAX);
              if (c.mode === 'list') tx.rpush(c.key, ...part);
              else (tx as unknown as { svcXadd(key: string, maxlen: number, ...v: Buffer[]): void }).svcXadd(c.key, c.maxlen, ...part);
            }
            const res = (await tx.exec()) ?? [];
            const failed = res.find(([e]) => e)?.[0];
            if (failed) {
              // WRONGTYPE: the key holds something else; no retry will change that.
              if (/WRONGTYPE/.test(failed.message))
                throw new WriteError(`redis: key '${c.key}' is not a ${c.mode}: ${failed.message}`, false, { cause: failed });
              throw failed;
            }
          },
          (e) => !isReplyError(e),
        );
        return { bytes: values.reduce((n, v) => n + v.length, 0) };
      },
      close: () => link.end(),
    };
  },
});
