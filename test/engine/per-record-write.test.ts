// A records sink whose peer answers per record (SQL chunks, Elasticsearch _bulk, InfluxDB partial
// writes): refused records are dead-lettered with the peer's reason while the rest of the batch lands,
// throttled records are written again alone under the sink's retry policy, and a unit whose records
// did not all land is not finalized.
import { describe, expect, it } from 'vitest';
import { capture } from '../helpers/plugins.js';
import { testRegistry } from '../helpers/plugins.js';
import { runFiles } from '../plugins/transforms/_harness.js';

const landedIds =
  (id: string, cap = capture(id)) =>
  () =>
    cap.batches.flatMap((b) => b.records!.map((r) => r.id));

describe('per-record write results', () => {
  it('refused records go to the DLQ with the peer reason; the rest of the batch lands and the file is finalized', async () => {
    const cap = capture('pr-refuse');
    const landed = landedIds('pr-refuse', cap);
    const { record, dlq, done } = await runFiles(
      { 'a.ndjson': [{ id: 1 }, { id: 2, refuse: 'duplicate key value violates unique constraint "t_pkey"' }, { id: 3 }] },
      '{ type: drop, fields: [unused] }',
      { registry: testRegistry, onError: 'dlq', dlq: true, source: 'move_after_read: __DONE__', sinks: '    - { type: verdict, id: pr-refuse }' },
    );
    expect(landed()).toEqual([1, 3]);
    expect(dlq).toEqual([
      expect.objectContaining({
        _stage: 'sink',
        _error: 'sinks[0] (verdict): duplicate key value violates unique constraint "t_pkey"',
        record: expect.objectContaining({ id: 2 }),
      }),
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
    // A records sink gets no encoded payload (it speaks its own format); bytes_out is what it reported sending.
    expect(cap.batches.map((b) => b.payload.length)).toEqual([0]);
    expect(record.bytes_out).toBe(200);
    expect(record.errors.some((e) => e.includes('unique constraint') && e.includes('1 records'))).toBe(true);
    expect(done()).toEqual(['a.ndjson']);
  });

  it('a dead-letter sink that takes records gets the envelopes as records, no encoded payload', async () => {
    const dlqCap = capture('pr-dlq-records');
    capture('pr-dlq-main');
    const { record } = await runFiles({ 'a.ndjson': [{ id: 1 }, { id: 2, refuse: 'no such column' }] }, '{ type: drop, fields: [unused] }', {
      registry: testRegistry,
      onError: 'dlq',
      sinks: '    - { type: verdict, id: pr-dlq-main }',
      extra: '  dlq: { type: verdict, id: pr-dlq-records }',
    });
    expect(record).toMatchObject({ records_out: 1, dlq_count: 1 });
    expect(dlqCap.batches.map((b) => b.payload.length)).toEqual([0]);
    expect(dlqCap.batches[0]!.records).toEqual([
      expect.objectContaining({ _stage: 'sink', _error: 'sinks[0] (verdict): no such column', record: expect.objectContaining({ id: 2 }) }),
    ]);
  });

  it('throttled records are written again alone until they land, within retry_count', async () => {
    const cap = capture('pr-throttle');
    const landed = landedIds('pr-throttle', cap);
    const { record, dlq } = await runFiles({ 'a.ndjson': [{ id: 1 }, { id: 2, throttle: 2 }, { id: 3 }] }, '{ type: drop, fields: [unused] }', {
      registry: testRegistry,
      onError: 'dlq',
      dlq: true,
      sinks: '    - { type: verdict, id: pr-throttle, retry_count: 3, retry_delay_seconds: 0.01 }',
    });
    expect(cap.batches.map((b) => b.records!.map((r) => r.id))).toEqual([[1, 3], [], [2]]);
    expect(landed().sort()).toEqual([1, 2, 3]);
    expect(dlq).toEqual([]);
    expect(record).toMatchObject({ status: 'success', records_out: 3, records_skipped: 0, dlq_count: 0 });
    // Every attempt's report counts: 2 records, then none, then the third.
    expect(record.bytes_out).toBe(300);
  });

  it('records still throttled when retries run out fail alone; without a DLQ the file stays for the next run', async () => {
    const cap = capture('pr-exhausted');
    const landed = landedIds('pr-exhausted', cap);
    const { record, left, done } = await runFiles({ 'a.ndjson': [{ id: 1 }, { id: 2, throttle: 99 }] }, '{ type: drop, fields: [unused] }', {
      registry: testRegistry,
      source: 'move_after_read: __DONE__',
      sinks: '    - { type: verdict, id: pr-exhausted, retry_count: 1, retry_delay_seconds: 0.01 }',
    });
    expect(landed()).toEqual([1]);
    expect(record).toMatchObject({ records_out: 1, records_skipped: 1 });
    expect(record.errors.some((e) => e.includes('1 of 1 records refused for now: too many requests'))).toBe(true);
    expect(left()).toEqual(['a.ndjson']);
    expect(done()).toEqual([]);
  });

  describe('deferred delivery (write() resolves once the client holds the batch; flush() has the verdicts)', () => {
    it('records refused at flush go to the DLQ with the peer reason; the counts are corrected and the file is finalized', async () => {
      const cap = capture('pr-deferred');
      const landed = landedIds('pr-deferred', cap);
      const { record, dlq, done } = await runFiles(
        { 'a.ndjson': [{ id: 1 }, { id: 2, refuse: 'MSG_SIZE_TOO_LARGE' }, { id: 3 }] },
        '{ type: drop, fields: [unused] }',
        {
          registry: testRegistry,
          onError: 'dlq',
          dlq: true,
          source: 'move_after_read: __DONE__',
          sinks: '    - { type: verdict, id: pr-deferred, deferred: true }',
        },
      );
      expect(landed()).toEqual([1, 3]);
      expect(dlq).toEqual([
        expect.objectContaining({ _stage: 'sink', _error: 'sinks[0] (verdict): MSG_SIZE_TOO_LARGE', record: expect.objectContaining({ id: 2 }) }),
      ]);
      expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
      expect(record.errors.some((e) => e.includes('MSG_SIZE_TOO_LARGE') && e.includes('1 records'))).toBe(true);
      expect(done()).toEqual(['a.ndjson']);
    });

    it('without a DLQ, a file with a record refused at flush stays for the next run', async () => {
      capture('pr-deferred-nodlq');
      const { record, left, done } = await runFiles({ 'a.ndjson': [{ id: 1 }, { id: 2, refuse: 'INVALID_RECORD' }] }, '{ type: drop, fields: [unused] }', {
        registry: testRegistry,
        source: 'move_after_read: __DONE__',
        sinks: '    - { type: verdict, id: pr-deferred-nodlq, deferred: true }',
      });
      expect(record).toMatchObject({ records_out: 1, records_skipped: 1 });
      expect(left()).toEqual(['a.ndjson']);
      expect(done()).toEqual([]);
    });

    it('a flush that fails leaves the file for the next run: nothing is acknowledged before the peer has it', async () => {
      capture('pr-deferred-lost');
      const { record, left, done } = await runFiles({ 'a.ndjson': [{ id: 1 }, { id: 2, undeliverable: true }] }, '{ type: drop, fields: [unused] }', {
        registry: testRegistry,
        onError: 'dlq',
        dlq: true,
        source: 'move_after_read: __DONE__',
        sinks: '    - { type: verdict, id: pr-deferred-lost, deferred: true }',
      });
      expect(record.errors.some((e) => e.includes('flush failed, inputs kept for the next run: the peer went away'))).toBe(true);
      expect(left()).toEqual(['a.ndjson']);
      expect(done()).toEqual([]);
    });
  });
});
