import { Type } from '@sinclair/typebox';
import { compile } from '../../../expr/index.js';
import { defineTransform, type Rec } from '../../types.js';
import { lintExpression } from '../../common/expression.js';

const config = Type.Object(
  {
    fields: Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]), {
      description:
        'Map of field name to value. A string is an expression (quote text literals: "\'paris\'"); numbers, booleans and null are constants. Fields are set in order, so later ones can use earlier ones.',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'add_field',
  summary: 'Set fields to the value of an expression or a constant.',
  config,
  lint: (c) => Object.entries(c.fields).flatMap(([k, v]) => (typeof v === 'string' ? lintExpression(v, `fields.${k}`) : [])),
  examples: [
    {
      title: 'Derived and constant fields',
      yaml: 'type: add_field\nfields:\n  site: "\'paris-1\'"\n  in_mbps: ifInOctets * 8 / 1000000\n  monitored: true',
    },
  ],
  create(c) {
    const setters = Object.entries(c.fields).map(([name, v]) => {
      const f = typeof v === 'string' ? compile(v) : () => v;
      return [name, f] as const;
    });
    return {
      apply(r: Rec) {
        for (let i = 0; i < setters.length; i++) {
          const [name, f] = setters[i]!;
          r[name] = f(r);
        }
        return r;
      },
    };
  },
});
