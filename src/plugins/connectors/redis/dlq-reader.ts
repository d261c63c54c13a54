// Reads back a DLQ written by the `redis` sink without consuming it: a list by LRANGE pages up to
// its length when the read began, a stream by XRANGE pages up to its last entry id then (the
// record is the entry's `data` field). Each element is one envelope as serializer_out wrote it.
import type { Redis } from 'ioredis';
import type { DlqItem, DlqReader, DlqReaderContext } from '../../types.js';
import { checkKeyType, connectRedis, type RedisServer } from './client.js';

const PAGE = 500;

export function redisDlqReader(c: RedisServer & { key: string; mode: 'list' | 'stream' }, ctx: DlqReaderContext): DlqReader {
  let r: Redis | undefined;
  return {
    async *read(): AsyncIterable<DlqItem> {
      r = await connectRedis(c, `svc ${ctx.pipeline} dlq reader`);
      await checkKeyType(r, c.key, c.mode);
      if (c.mode === 'list') {
        const len = await r.llen(c.key);
        for (let i = 0; i < len; i += PAGE) {
          const page = await r.lrangeBuffer(c.key, i, Math.min(i + PAGE, len) - 1);
          for (let k = 0; k < page.length; k++) yield { location: `${c.key}[${i + k}]`, payload: page[k]! };
        }
        return;
      }
      const last = await r.xrevrange(c.key, '+', '-', 'COUNT', 1);
      if (!last.length) return;
      const end = last[0]![0];
      let start = '-';
      for (;;) {
        const page = await r.xrangeBuffer(c.key, start, end, 'COUNT', PAGE);
        for (const [id, fields] of page) {
          const i = fields.findIndex((f, k) => k % 2 === 0 && f.toString() === 'data');
          if (i >= 0) yield { location: `${c.key}@${id.toString()}`, payload: fields[i + 1]! };
        }
        if (page.length < PAGE) return;
        start = `(${page[page.length - 1]![0].toString()}`;
      }
    },
    async close() {
      await r?.quit().catch(() => r?.disconnect());
    },
  };
}
