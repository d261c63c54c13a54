// The replay marks (migration 0006, src/store/dlq-replayed.ts) on every engine of the store: a
// mark per pipeline and envelope, replaced by a forced replay's, read back in bulk, cleared with
// its pipeline (and by deleting the pipeline through the manager).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { openStore, type SqlStore } from '../../src/store/index.js';
import { freshDatabase, type Fresh } from '../store/helpers.js';

describe.each(['sqlite', 'postgresql', 'mysql'] as const)('dlq replay marks on %s', (engine) => {
  let fresh: Fresh;
  let store: SqlStore;
  beforeAll(async () => {
    fresh = await freshDatabase(engine);
    store = await openStore({ ...fresh.opts, log: silentLogger });
  });
  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  });

  it('marks, replaces a mark, reads many ids at once and clears one pipeline', async () => {
    const m = store.dlqReplayed;
    expect((await m.marks('p', ['a'])).size).toBe(0);
    await m.mark('p', 'a', 'run-1');
    await m.mark('q', 'a', 'run-9');
    const first = (await m.marks('p', ['a', 'b'])).get('a')!;
    expect(first).toMatchObject({ envelope_id: 'a', run_id: 'run-1' });
    expect(first.replayed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await m.mark('p', 'a', 'run-2'); // a forced replay: the newest run is kept
    expect((await m.marks('p', ['a'])).get('a')).toMatchObject({ run_id: 'run-2' });
    // More ids than one `in (...)` list takes.
    const ids = Array.from({ length: 1200 }, (_, i) => `id-${i}`);
    for (const id of ids.filter((_, i) => i % 100 === 0)) await m.mark('p', id, 'run-3');
    expect([...(await m.marks('p', ids)).keys()].sort()).toEqual(ids.filter((_, i) => i % 100 === 0).sort());
    await m.clear('p');
    expect((await m.marks('p', ['a', ...ids])).size).toBe(0);
    expect((await m.marks('q', ['a'])).size).toBe(1);
    await expect(m.mark('p', 'x'.repeat(65), 'run')).rejects.toThrow(/envelope id is longer than 64/);
  });
});
