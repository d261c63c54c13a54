import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { NOT_A_TIME, timeParser } from '../../common/time.js';
import { Aggregator, aggregationsField, groupByField, groupKey, groupValues, lintAggregations, type Acc } from '../../common/aggregations.js';

const config = Type.Object(
  {
    time_field: Type.String({ minLength: 1, description: 'Event time of a record (epoch s/ms/us/ns or ISO 8601); a record without one is a recorded error.' }),
    window_seconds: Type.Number({
      exclusiveMinimum: 0,
      description: 'Window length. Windows are aligned to the epoch (a 900 s window starts at :00, :15, :30, :45).',
    }),
    slide_seconds: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description: 'Sliding windows: a new window starts every slide_seconds (at most window_seconds); without it windows tumble.',
      }),
    ),
    group_by: groupByField,
    aggregations: aggregationsField,
    allowed_lateness_seconds: Type.Number({
      minimum: 0,
      default: 0,
      description:
        'A window is emitted once the newest event time seen passes its end by this much; records for windows already emitted are late: dropped, noted and counted (svc_transform_window_late_dropped_total).',
    }),
    window_start_field: Type.String({ minLength: 1, default: 'window_start', description: 'Output field for the window start (UTC ISO 8601).' }),
    window_end_field: Type.String({ minLength: 1, default: 'window_end', description: 'Output field for the window end (exclusive).' }),
    max_open: Type.Integer({
      minimum: 1,
      default: 100000,
      description: 'Open (window, group) pairs held at most; a record that would open one more is a recorded error.',
    }),
  },
  { additionalProperties: false },
);

/** One open window of one group. Plain JSON: it is the durable state. */
interface Open {
  start: number;
  group: unknown[];
  accs: Acc[];
  /** The target of its records (their `_target`), kept in a sharded run (issue 33), where `_target` is one of the group fields. */
  tg?: string;
}

/** The durable state: open windows (with their group key) and the watermark. */
interface Stored {
  newest?: unknown;
  closed_before?: unknown;
  windows?: unknown;
}

const isStored = (b: unknown): b is Stored & { windows: (Open & { key: string })[] } =>
  typeof b === 'object' && b !== null && Array.isArray((b as Stored).windows);
const maxOf = (xs: unknown[]) => xs.reduce<number>((m, x) => (typeof x === 'number' && x > m ? x : m), -Infinity);

export default defineTransform({
  key: 'window_aggregate',
  summary: 'Aggregate records into tumbling or sliding event-time windows per group, with allowed lateness; open windows survive runs as state.',
  stateful: true,
  // Sharded runs (issue 33): windows grouped by `_target` each hold one target's records, so each
  // goes with its target; the watermark of the joined parts is the newest of theirs.
  targetState: {
    refuse: (c) =>
      (c.group_by ?? []).includes('_target')
        ? undefined
        : 'group_by must include _target, so that each window holds the records of one target (a group spread over the workers would be emitted once per worker); add _target to group_by, or remove pipeline.workers',
    split(body) {
      const out = new Map<string, Stored & { windows: unknown[] }>();
      if (!isStored(body)) return out;
      for (const w of body.windows) {
        const target = typeof w?.tg === 'string' ? w.tg : '';
        let part = out.get(target);
        if (!part) out.set(target, (part = { newest: body.newest, closed_before: body.closed_before, windows: [] }));
        part.windows.push(w);
      }
      return out;
    },
    join(parts) {
      const stored = parts.filter(isStored);
      return {
        newest: maxOf(stored.map((p) => p.newest)),
        closed_before: maxOf(stored.map((p) => p.closed_before)),
        windows: stored.flatMap((p) => p.windows),
      };
    },
  },
  config,
  lint: (c) => {
    const issues = lintAggregations(c);
    if (c.slide_seconds !== undefined && c.slide_seconds > c.window_seconds) issues.push({ path: 'slide_seconds', message: 'must not exceed window_seconds' });
    return issues;
  },
  examples: [
    {
      title: '15-minute traffic per interface',
      yaml: 'type: window_aggregate\ntime_field: ts\nwindow_seconds: 900\ngroup_by: [host, ifIndex]\nallowed_lateness_seconds: 120\naggregations:\n  - { function: sum, field: in_octets_delta, as: in_octets }\n  - { function: max, field: in_rate, as: peak_rate }',
    },
    {
      title: 'Alarm counts over the last hour, every 5 minutes',
      yaml: 'type: window_aggregate\ntime_field: event_time\nwindow_seconds: 3600\nslide_seconds: 300\ngroup_by: [severity]\naggregations:\n  - { function: count }',
    },
  ],
  create(c, ctx) {
    const size = c.window_seconds * 1000;
    const slide = (c.slide_seconds ?? c.window_seconds) * 1000;
    const lateness = (c.allowed_lateness_seconds ?? 0) * 1000;
    const groupBy = c.group_by ?? [];
    const agg = new Aggregator(c.aggregations);
    const parse = timeParser({});
    const startField = c.window_start_field ?? 'window_start';
    const endField = c.window_end_field ?? 'window_end';
    const max = c.max_open ?? 100000;
    const count = ctx.count ?? (() => {});
    /** Open windows by start, then by group key. */
    let open = new Map<number, Map<string, Open>>();
    let openCount = 0;
    /** Newest event time seen (the watermark before lateness). */
    let newest = -Infinity;

    const output = (w: Open, complete: boolean): Rec => {
      const r: Rec = {};
      setField(r, startField, new Date(w.start).toISOString());
      setField(r, endField, new Date(w.start + size).toISOString());
      groupBy.forEach((f, i) => setField(r, f, w.group[i]));
      agg.results(w.accs, r);
      r.window_complete = complete;
      return r;
    };

    /** Start of the oldest open window (Infinity when none): nothing is due before it closes. */
    let oldest = Infinity;
    const oldestOpen = () => {
      let m = Infinity;
      for (const s of open.keys()) if (s < m) m = s;
      return m;
    };

    /** Emits (in start order) every window whose end + lateness the newest time has passed. */
    const closeDue = (): Rec[] => {
      // Most records move the newest time without closing anything: no scan, no sort then.
      if (oldest + size + lateness > newest) return [];
      let out: Rec[] | undefined;
      const starts = [...open.keys()].sort((a, b) => a - b);
      for (const s of starts) {
        if (s + size + lateness > newest) break;
        for (const w of open.get(s)!.values()) (out ??= []).push(output(w, true));
        openCount -= open.get(s)!.size;
        open.delete(s);
      }
      oldest = oldestOpen();
      if (out) count('windows_emitted', out.length);
      return out ?? [];
    };

    let closedBefore = -Infinity; // windows ending at or before this were emitted

    return {
      // Records go into their windows (a late one is counted as window_late_dropped, not as filtered).
      holdsRecords: true,
      apply(r, rc) {
        const t = parse(r[c.time_field]);
        if (t === NOT_A_TIME) throw new Error(`time_field '${c.time_field}' value ${JSON.stringify(r[c.time_field] ?? null)} is not a timestamp`);
        // Every window [start, start + size) that holds t, oldest first.
        const last = Math.floor(t / slide) * slide;
        let placed = false;
        const k = groupKey(groupBy, r);
        for (let s = last; s > t - size; s -= slide) {
          if (s + size <= closedBefore) continue;
          let byGroup = open.get(s);
          if (byGroup === undefined) {
            open.set(s, (byGroup = new Map()));
            if (s < oldest) oldest = s;
          }
          let w = byGroup.get(k);
          if (w === undefined) {
            if (openCount >= max) throw new Error(`more than max_open (${max}) open windows; raise max_open or lower the lateness`);
            w = { start: s, group: groupValues(groupBy, r), accs: agg.fresh() };
            if (typeof r._target === 'string') w.tg = r._target;
            agg.add(w.accs, r);
            byGroup.set(k, w);
            openCount++;
          } else agg.add(w.accs, r);
          placed = true;
        }
        if (!placed) {
          count('window_late_dropped');
          rc.note(`window_aggregate: late record dropped (event time ${new Date(t).toISOString()}, its windows were already emitted)`);
          return null;
        }
        if (t <= newest) return null;
        newest = t;
        closedBefore = newest - lateness;
        const due = closeDue();
        return due.length ? due : null;
      },
      drain(at) {
        if (at !== 'flush') return [];
        // A flush run hands on open windows as partials and forgets them.
        const out: Rec[] = [];
        for (const s of [...open.keys()].sort((a, b) => a - b)) for (const w of open.get(s)!.values()) out.push(output(w, false));
        open = new Map();
        openCount = 0;
        oldest = Infinity;
        if (out.length) count('windows_emitted', out.length);
        return out;
      },
      state: {
        save: () => ({ newest, closed_before: closedBefore, windows: [...open.values()].flatMap((m) => [...m.entries()].map(([key, w]) => ({ key, ...w }))) }),
        load(body) {
          const b = body as { newest?: unknown; closed_before?: unknown; windows?: unknown };
          if (typeof b !== 'object' || b === null || !Array.isArray(b.windows)) throw new Error('window_aggregate state must have a windows list');
          const m = new Map<number, Map<string, Open>>();
          let n = 0;
          for (const w of b.windows as (Open & { key: string })[]) {
            if (
              typeof w?.start !== 'number' ||
              typeof w.key !== 'string' ||
              !Array.isArray(w.group) ||
              !Array.isArray(w.accs) ||
              w.accs.length !== c.aggregations.length
            ) {
              throw new Error('window_aggregate state holds a malformed window');
            }
            let g = m.get(w.start);
            if (!g) m.set(w.start, (g = new Map()));
            g.set(
              w.key,
              typeof w.tg === 'string' ? { start: w.start, group: w.group, accs: w.accs, tg: w.tg } : { start: w.start, group: w.group, accs: w.accs },
            );
            n++;
          }
          open = m;
          openCount = n;
          oldest = oldestOpen();
          newest = typeof b.newest === 'number' ? b.newest : -Infinity;
          closedBefore = typeof b.closed_before === 'number' ? b.closed_before : -Infinity;
        },
      },
    };
  },
});
