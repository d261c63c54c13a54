import { Type } from '@sinclair/typebox';
import { compile, truthy } from '../../../expr/index.js';
import { defineTransform, type Rec } from '../../types.js';
import { lintExpression } from '../../common/expression.js';

const config = Type.Object(
  {
    expression: Type.String({
      minLength: 1,
      description: 'Keep records for which this expression is true (see docs/expressions.md); others are dropped silently.',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'filter',
  summary: 'Keep only the records that match an expression.',
  config,
  lint: (c) => lintExpression(c.expression, 'expression'),
  examples: [
    { title: 'Interfaces that are up', yaml: 'type: filter\nexpression: ifOperStatus == 1' },
    { title: 'Major alarms from core nodes', yaml: "type: filter\nexpression: \"severity in ['critical', 'major'] and startswith(node, 'core')\"" },
  ],
  create(c) {
    const test = compile(c.expression);
    return { apply: (r: Rec) => (truthy(test(r)) ? r : null) };
  },
});
