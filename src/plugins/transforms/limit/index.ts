import { Type } from '@sinclair/typebox';
import { defineTransform } from '../../types.js';

const config = Type.Object(
  {
    count: Type.Integer({ minimum: 0, description: 'Records let through; the rest are dropped (on purpose: not counted as skipped).' }),
    offset: Type.Integer({ minimum: 0, default: 0, description: 'Records dropped before counting starts.' }),
    scope: Type.Union([Type.Literal('unit'), Type.Literal('run')], {
      default: 'run',
      description: 'run: the first records of the whole run; unit: the first records of each input file (or message batch).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'limit',
  summary: 'Let through at most N records (after skipping an offset), per run or per input file, in input order.',
  config,
  examples: [
    { title: 'A sample of 100 records per run', yaml: 'type: limit\ncount: 100' },
    { title: 'Records 11-20 of each file', yaml: 'type: limit\ncount: 10\noffset: 10\nscope: unit' },
  ],
  create(c) {
    const offset = c.offset ?? 0;
    const end = offset + c.count;
    const perUnit = (c.scope ?? 'run') === 'unit';
    let seen = 0;
    return {
      // Counting needs every record in input order, on one thread: the engine runs it on the main one.
      apply: (r) => (seen++ >= offset && seen <= end ? r : null),
      drain(at) {
        if (perUnit && at === 'unit') seen = 0;
        return [];
      },
    };
  },
});
