// The runtime's retries honour a peer's own wait (HTTP Retry-After, which the prometheus_rw sink
// reports as WriteError.retryAfterMs or WriteResult.retryAfterMs): never sooner than asked, and the
// sink's backoff still applies when it is the longer one (a hostile value is capped: MAX_RETRY_AFTER_MS).
import { describe, expect, it } from 'vitest';
import { WriteError } from '../../src/core/errors.js';
import { CircuitBreaker, guardedRecordsWrite, guardedWrite } from '../../src/engine/reliability.js';
import { silentLogger } from '../../src/observability/log.js';
import type { SinkBatch } from '../../src/plugins/types.js';

const opts = (retry_delay_seconds: number) => ({
  label: 'sinks[0] (t)',
  policy: { retry_count: 2, retry_delay_seconds },
  breaker: new CircuitBreaker(undefined),
  signal: new AbortController().signal,
  log: silentLogger,
});

describe('Retry-After in the runtime', () => {
  it('waits at least what the peer asked, even with a shorter backoff', async () => {
    const at: number[] = [];
    const r = await guardedWrite(async () => {
      at.push(performance.now());
      if (at.length === 1) throw new WriteError('429 Too Many Requests', true, { retryAfterMs: 400 });
    }, opts(0.01));
    expect(r.ok).toBe(true);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(390);
  });

  it('records refused for now with a Retry-After are written again no sooner', async () => {
    const at: number[] = [];
    const batch = { payload: Buffer.alloc(0), head: '', count: 2, meta: {}, records: [{ a: 1 }, { a: 2 }] } as SinkBatch;
    const out = await guardedRecordsWrite(
      {
        async write(b) {
          at.push(performance.now());
          if (at.length === 1) return { retry: [{ index: 1, reason: '503' }], retryAfterMs: 300 };
          expect(b.records).toEqual([{ a: 2 }]);
        },
      },
      batch,
      opts(0.01),
    );
    expect(out.outcome.ok).toBe(true);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(290);
  });

  it('keeps its own backoff when that is the longer wait', async () => {
    const at: number[] = [];
    const r = await guardedWrite(async () => {
      at.push(performance.now());
      if (at.length === 1) throw new WriteError('503', true, { retryAfterMs: 10 });
    }, opts(0.3));
    expect(r.ok).toBe(true);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(290);
  });
});
