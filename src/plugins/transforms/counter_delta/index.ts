import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { NOT_A_TIME, timeParser } from '../../common/time.js';

const config = Type.Object(
  {
    key_fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Fields that identify one series (e.g. host and ifIndex); a record without one of them is a recorded error.',
    }),
    counters: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Counter fields (numbers, or strings of digits for Counter64).' }),
    time_field: Type.Optional(
      Type.String({ minLength: 1, description: 'Sample time (epoch s/ms/us/ns or ISO 8601); default: the time the record is processed. Used for rates.' }),
    ),
    rate: Type.Boolean({
      default: false,
      description: 'Also write the rate per second (delta / seconds since the previous sample) as `<counter><rate_suffix>`.',
    }),
    delta_suffix: Type.String({ default: '_delta', description: 'Delta field name: `<counter><delta_suffix>`; empty replaces the counter with its delta.' }),
    rate_suffix: Type.String({ minLength: 1, default: '_rate', description: 'Rate field name suffix.' }),
    width: Type.Union([Type.Literal('auto'), Type.Literal(32), Type.Literal(64)], {
      default: 'auto',
      description:
        "Counter width for wrap detection. auto: the record's `_snmp_widths` (from snmp_poll) when it names the counter, else 64 once a value has exceeded 2^32-1, else 32.",
    }),
    max_wrap_fraction: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      default: 0.5,
      description: 'A drop is taken for a wrap only when the wrapped delta is below this fraction of the counter range; a larger one is a reset (no delta).',
    }),
    uptime_field: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Field with the agent uptime (sysUpTime); when it goes back, the device rebooted: every counter of the series resets.',
      }),
    ),
    emit_first: Type.Boolean({ default: false, description: 'Pass the first sample of a series on without deltas (default: drop it, it has none).' }),
    max_series: Type.Integer({ minimum: 1, default: 1000000, description: 'Series remembered at most; the oldest are forgotten first.' }),
  },
  { additionalProperties: false },
);

/** The last sample of one series: time (ms), counter values, uptime. Plain JSON for the state store. */
interface Sample {
  t: number;
  /** Last value per counter (by position in `counters`); undefined until first seen. */
  v: (number | bigint | undefined)[];
  up?: number;
  /** The target the series is polled from (the record's `_target`): a sharded run keeps state by it. */
  tg?: string;
}

/** A series as stored: plain JSON, counters by name. */
interface StoredSample {
  t: number;
  v: Record<string, number | string>;
  up?: number;
  tg?: string;
}

const isSeriesMap = (body: unknown): body is Record<string, StoredSample> => typeof body === 'object' && body !== null && !Array.isArray(body);

const TWO32 = 4294967296;
const MAX32 = TWO32 - 1;
const TWO64 = 1n << 64n;

/** A counter value: a number when exact, else a bigint (Counter64 beyond 2^53); null when not a counter. */
function counterValue(v: unknown): number | bigint | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : null;
  if (typeof v === 'bigint') return v >= 0n ? v : null;
  if (typeof v === 'string' && /^\d{1,20}$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : BigInt(v);
  }
  return null;
}

function widthOf(r: Rec, field: string): number | undefined {
  const w = (r._snmp_widths as Record<string, unknown> | undefined)?.[field];
  return w === 32 || w === 64 ? w : undefined;
}

export default defineTransform({
  key: 'counter_delta',
  summary: 'Turn monotonic counters (SNMP ifInOctets...) into deltas and rates per series, with 32/64-bit wrap and reset detection; state survives runs.',
  stateful: true,
  // Sharded runs (issue 33): each series goes with the target its first sample came from.
  targetState: {
    split(body) {
      const out = new Map<string, Record<string, StoredSample>>();
      if (!isSeriesMap(body)) return out;
      for (const [k, s] of Object.entries(body)) {
        const target = typeof s?.tg === 'string' ? s.tg : '';
        let part = out.get(target);
        if (!part) out.set(target, (part = {}));
        part[k] = s;
      }
      return out;
    },
    join(parts) {
      const out: Record<string, StoredSample> = {};
      for (const p of parts) if (isSeriesMap(p)) Object.assign(out, p);
      return out;
    },
  },
  config,
  examples: [
    {
      title: 'Interface octet deltas and rates from snmp_poll',
      yaml: 'type: counter_delta\nkey_fields: [agent_address, ifIndex]\ncounters: [ifHCInOctets, ifHCOutOctets]\ntime_field: poll_time\nrate: true\nuptime_field: sysUpTime',
    },
    {
      title: '32-bit counters, replaced by their deltas',
      yaml: "type: counter_delta\nkey_fields: [host, port]\ncounters: [rx_packets]\nwidth: 32\ndelta_suffix: ''",
    },
  ],
  create(c, ctx) {
    const keys = c.key_fields;
    const counters = c.counters;
    const parse = c.time_field ? timeParser({}) : undefined;
    const suffix = c.delta_suffix ?? '_delta';
    const rateSuffix = c.rate_suffix ?? '_rate';
    const wantRate = c.rate ?? false;
    const fixedWidth = c.width === 32 || c.width === 64 ? c.width : undefined;
    const fraction = c.max_wrap_fraction ?? 0.5;
    const emitFirst = c.emit_first ?? false;
    const max = c.max_series ?? 1000000;
    const count = ctx.count ?? (() => {});
    let series = new Map<string, Sample>();
    const n = counters.length;
    const deltaNames = counters.map((f) => (suffix === '' ? f : f + suffix));
    const rateNames = counters.map((f) => f + rateSuffix);
    // Plain assignment unless an output name is `__proto__` (then the safe setter).
    const safe = ![...deltaNames, ...rateNames].includes('__proto__');
    /** This sample's counter values; one array for every record (apply copies what it keeps). */
    const now: (number | bigint | null)[] = new Array(n);

    const keyOf = (r: Rec): string => {
      let k = '';
      for (let i = 0; i < keys.length; i++) {
        const v = r[keys[i]!];
        if (v === undefined || v === null) throw new Error(`key field '${keys[i]}' is missing`);
        k += i === 0 ? String(v) : '\u0000' + String(v);
      }
      return k;
    };

    /** The delta from prev to cur, or null for a reset. */
    const delta = (prev: number | bigint, cur: number | bigint, width: number): number | null => {
      if (typeof prev === 'number' && typeof cur === 'number') {
        if (cur >= prev) return cur - prev;
        if (width === 32) {
          const d = MAX32 - prev + cur + 1;
          if (prev <= MAX32 && d < fraction * TWO32) {
            count('counter_wraps');
            return d;
          }
          return null;
        }
      }
      const p = BigInt(prev);
      const q = BigInt(cur);
      if (q >= p) return Number(q - p);
      const range = width === 32 ? BigInt(TWO32) : TWO64;
      const d = range - p + q;
      if (p < range && Number(d) < fraction * Number(range)) {
        count('counter_wraps');
        return Number(d);
      }
      return null;
    };

    return {
      apply(r, rc) {
        const k = keyOf(r);
        let t: number;
        if (parse) {
          t = parse(r[c.time_field!]);
          if (t === NOT_A_TIME) throw new Error(`time_field '${c.time_field}' value ${JSON.stringify(r[c.time_field!] ?? null)} is not a timestamp`);
        } else t = Date.now();
        // Read and check every counter before anything changes (a bad one is a record error).
        for (let i = 0; i < n; i++) {
          const raw = r[counters[i]!];
          if (raw === undefined || raw === null) {
            now[i] = null;
            continue;
          }
          const v = counterValue(raw);
          if (v === null) throw new Error(`counter '${counters[i]}' value ${JSON.stringify(raw)} is not a non-negative integer`);
          now[i] = v;
        }
        let up: number | undefined;
        if (c.uptime_field) {
          const u = Number(r[c.uptime_field]);
          if (Number.isFinite(u)) up = u;
        }
        const prev = series.get(k);
        if (prev === undefined || (up !== undefined && prev.up !== undefined && up < prev.up)) {
          // First sample, or the device rebooted: this sample is the new baseline.
          if (prev !== undefined) {
            count('counter_resets', n);
            prev.t = t;
            prev.v = now.map((v) => v ?? undefined);
            prev.up = up;
            return null;
          }
          if (series.size >= max) series.delete(series.keys().next().value!);
          const tg = r._target;
          series.set(k, { t, v: now.map((v) => v ?? undefined), up, tg: typeof tg === 'string' ? tg : undefined });
          return emitFirst ? r : null;
        }
        const seconds = (t - prev.t) / 1000;
        let any = false;
        for (let i = 0; i < n; i++) {
          const cur = now[i];
          const before = prev.v[i];
          if (cur === null || cur === undefined) {
            rc.note(`counter_delta: counter '${counters[i]}' missing in series ${k.replaceAll('\u0000', '/')}`);
            continue; // it keeps its last value for the next sample
          }
          prev.v[i] = cur;
          if (before === undefined) continue; // first sample of this counter
          const width = fixedWidth ?? widthOf(r, counters[i]!) ?? (before > MAX32 || cur > MAX32 ? 64 : 32);
          const d = delta(before, cur, width);
          if (d === null) {
            count('counter_resets');
            continue;
          }
          any = true;
          if (safe) {
            r[deltaNames[i]!] = d;
            if (wantRate) r[rateNames[i]!] = seconds > 0 ? d / seconds : null;
          } else {
            setField(r, deltaNames[i]!, d);
            if (wantRate) setField(r, rateNames[i]!, seconds > 0 ? d / seconds : null);
          }
        }
        prev.t = t;
        prev.up = up;
        return any ? r : null;
      },
      state: {
        // Stored readable: {series: {t, v: {counter: value}, up}}; Counter64 beyond 2^53 as text.
        save: () => {
          const out: Record<string, StoredSample> = {};
          for (const [k, s] of series) {
            const v: Record<string, number | string> = {};
            s.v.forEach((x, i) => {
              if (x !== undefined) v[counters[i]!] = typeof x === 'bigint' ? x.toString() : x;
            });
            const stored: StoredSample = s.up === undefined ? { t: s.t, v } : { t: s.t, v, up: s.up };
            if (s.tg !== undefined) stored.tg = s.tg;
            out[k] = stored;
          }
          return out;
        },
        load(body) {
          if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('counter_delta state must be an object of series');
          const m = new Map<string, Sample>();
          for (const [k, s] of Object.entries(body as Record<string, StoredSample>)) {
            if (typeof s !== 'object' || s === null || typeof s.t !== 'number' || typeof s.v !== 'object' || s.v === null)
              throw new Error(`counter_delta state of series '${k}' is malformed`);
            m.set(k, {
              t: s.t,
              up: typeof s.up === 'number' ? s.up : undefined,
              tg: typeof s.tg === 'string' ? s.tg : undefined,
              v: counters.map((f) => (s.v[f] === undefined ? undefined : (counterValue(s.v[f]) ?? undefined))),
            });
          }
          series = m;
        },
      },
    };
  },
});
