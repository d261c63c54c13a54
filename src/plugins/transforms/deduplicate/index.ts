import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { NOT_A_TIME, timeParser } from '../../common/time.js';

const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Top-level fields that identify a duplicate (missing counts as null). Empty: the whole record.',
    }),
    window_seconds: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description: 'A record is a duplicate only within this many seconds of the first one with its key; without it, for the whole run.',
      }),
    ),
    time_field: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Event time for the window (epoch s/ms/us/ns or ISO 8601, as timestamp_normalize reads it); default: the time the record is processed.',
      }),
    ),
    max_keys: Type.Integer({ minimum: 1, default: 1000000, description: 'Keys remembered at most; the oldest are forgotten first.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'deduplicate',
  summary: 'Drop records whose key fields were already seen (within a time window, or in the run); the first one wins.',
  config,
  examples: [
    {
      title: 'One trap per alarm id within 5 minutes',
      yaml: 'type: deduplicate\nfields: [alarm_id, agent_address]\nwindow_seconds: 300\ntime_field: event_time',
    },
    { title: 'Exact duplicate records in a run', yaml: 'type: deduplicate' },
  ],
  create(c) {
    const fields = c.fields ?? [];
    const windowMs = c.window_seconds === undefined ? Infinity : c.window_seconds * 1000;
    const max = c.max_keys ?? 1000000;
    const parse = c.time_field ? timeParser({}) : undefined;
    const timeField = c.time_field;
    // Key -> time its window opened. Map order is that order too (renewed keys are re-inserted),
    // so expired keys are always at the front.
    const seen = new Map<string, number>();
    const keyOf = (r: Rec) =>
      fields.length === 0 ? JSON.stringify(r) : fields.length === 1 ? JSON.stringify(r[fields[0]!] ?? null) : JSON.stringify(fields.map((f) => r[f] ?? null));
    let latest = -Infinity;
    return {
      apply(r) {
        let now: number;
        if (parse) {
          now = parse(r[timeField!]);
          if (now === NOT_A_TIME) throw new Error(`time_field '${timeField}' value ${JSON.stringify(r[timeField!] ?? null)} is not a timestamp`);
        } else now = Date.now();
        if (now > latest) latest = now;
        // Forget keys whose window closed (relative to the newest time seen: event time may go back).
        if (windowMs !== Infinity) {
          for (const [k, t] of seen) {
            if (t + windowMs > latest) break;
            seen.delete(k);
          }
        }
        const k = keyOf(r);
        const t = seen.get(k);
        // Event time may run backwards: a duplicate is one within the window on either side.
        if (t !== undefined && Math.abs(now - t) < windowMs) return null;
        if (t !== undefined) seen.delete(k);
        else if (seen.size >= max) seen.delete(seen.keys().next().value!);
        seen.set(k, now);
        return r;
      },
      drain: () => [],
    };
  },
});
