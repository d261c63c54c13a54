import { Type } from '@sinclair/typebox';
import { compile, isRegistered, TreeInterpreter, type JSONValue } from '@jmespath-community/jmespath';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { ConfigError } from '../../../core/errors.js';

const config = Type.Object(
  {
    expression: Type.String({
      minLength: 1,
      description: 'A JMESPath expression (JMESPath Community edition: let, arithmetic, items, group_by...) evaluated on each record.',
    }),
    target: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Field that receives the result. Without it the result replaces the record: an object is the new record, an array of objects becomes several records, null drops the record, anything else is a record error.',
      }),
    ),
  },
  { additionalProperties: false },
);

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Names of the functions an expression calls (the parser accepts any name; only evaluation knows). */
function functionNames(node: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const n of node) functionNames(n, out);
  else if (typeof node === 'object' && node !== null) {
    const n = node as { type?: unknown; name?: unknown };
    if (n.type === 'Literal') return out; // JSON data, not expression nodes
    if (n.type === 'Function' && typeof n.name === 'string') out.add(n.name);
    for (const v of Object.values(node)) functionNames(v, out);
  }
  return out;
}

function lint(c: { expression: string }): LintIssue[] {
  let ast: unknown;
  try {
    ast = compile(c.expression);
  } catch (e) {
    return [{ path: 'expression', message: `not a JMESPath expression: ${(e as Error).message}` }];
  }
  // Caught here rather than as an error on every record.
  const unknown = [...functionNames(ast, new Set())].filter((f) => !isRegistered(f));
  return unknown.length
    ? [{ path: 'expression', message: `unknown JMESPath function${unknown.length > 1 ? 's' : ''} ${unknown.map((f) => `${f}()`).join(', ')}` }]
    : [];
}

export default defineTransform({
  key: 'jmespath',
  summary: 'Reshape or query each record with a JMESPath expression; the result replaces the record or goes to a field.',
  config,
  lint,
  examples: [
    {
      title: 'Pick and rename fields of a gNMI notification',
      yaml: "type: jmespath\nexpression: '{path: update[0].path, value: update[0].val, ts: timestamp}'",
    },
    {
      title: 'One record per alarm of a VES batch',
      yaml: "type: jmespath\nexpression: 'event.faultFields.alarmAdditionalInformation[*].{name: name, value: value}'",
    },
    { title: 'Keep the original, add the worst severity', yaml: "type: jmespath\nexpression: 'max_by(alarms, &severity).severity'\ntarget: worst_severity" },
  ],
  create(c) {
    const issues = lint(c);
    if (issues.length) throw new ConfigError(`jmespath: ${issues[0]!.message}`);
    const ast = compile(c.expression);
    const target = c.target;
    return {
      apply(r) {
        const v = TreeInterpreter.search(ast, r as JSONValue);
        if (target !== undefined) {
          setField(r, target, v);
          return r;
        }
        if (v === null) return null;
        if (isObject(v)) return v;
        if (Array.isArray(v)) {
          const bad = v.findIndex((x) => !isObject(x));
          if (bad !== -1) throw new Error(`result element ${bad} is ${JSON.stringify(v[bad])}, not an object (set target to keep other results in a field)`);
          return v as Rec[];
        }
        throw new Error(`result ${JSON.stringify(v)} is not an object (set target to keep other results in a field)`);
      },
    };
  },
});
