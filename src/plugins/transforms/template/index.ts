import { Type } from '@sinclair/typebox';
import { ConfigError, RecordError } from '../../../core/errors.js';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    target: Type.String({ minLength: 1, description: 'Top-level field set to the rendered text (overwritten when it exists).' }),
    template: Type.String({
      description:
        'Text with {field} placeholders; {a.b.c} reads nested objects (and list items by index: {hops.0}), a top-level field literally named "a.b" wins. {{ and }} are literal braces. Numbers and booleans are written as text, objects and lists as JSON.',
    }),
    on_missing: Type.Union([Type.Literal('empty'), Type.Literal('error')], {
      default: 'empty',
      description: 'When a placeholder names a missing or null value: empty (render it as an empty string) or error (record error, rule 6 and on_error).',
    }),
  },
  { additionalProperties: false },
);

/** A compiled template: literal text and placeholders alternate, starting and ending with literals. */
interface Compiled {
  literals: string[];
  paths: { name: string; parts: string[] }[];
}

function compileTemplate(t: string): Compiled {
  const literals: string[] = [];
  const paths: Compiled['paths'] = [];
  let lit = '';
  for (let i = 0; i < t.length; i++) {
    const ch = t[i];
    if (ch === '{' && t[i + 1] === '{') {
      lit += '{';
      i++;
    } else if (ch === '}' && t[i + 1] === '}') {
      lit += '}';
      i++;
    } else if (ch === '{') {
      const end = t.indexOf('}', i + 1);
      if (end === -1) throw new ConfigError(`unclosed '{' at position ${i + 1} (write {{ for a literal brace)`);
      const name = t.slice(i + 1, end).trim();
      if (name === '' || name.includes('{')) throw new ConfigError(`empty or invalid placeholder at position ${i + 1}`);
      literals.push(lit);
      lit = '';
      paths.push({ name, parts: name.split('.') });
      i = end;
    } else if (ch === '}') {
      throw new ConfigError(`unmatched '}' at position ${i + 1} (write }} for a literal brace)`);
    } else lit += ch;
  }
  literals.push(lit);
  return { literals, paths };
}

function lint(c: { template: string }): LintIssue[] {
  try {
    compileTemplate(c.template);
    return [];
  } catch (e) {
    return [{ path: 'template', message: (e as Error).message }];
  }
}

/** The value at a placeholder: a literal top-level name first, then the dotted path (own properties only). */
function lookup(r: Rec, p: { name: string; parts: string[] }): unknown {
  if (Object.hasOwn(r, p.name)) return r[p.name];
  if (p.parts.length === 1) return undefined;
  let v: unknown = r;
  for (let i = 0; i < p.parts.length; i++) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, p.parts[i]!)) return undefined;
    v = (v as Rec)[p.parts[i]!];
  }
  return v;
}

export default defineTransform({
  key: 'template',
  summary: 'Set a field from a template with {field} and {nested.path} placeholders.',
  config,
  lint,
  examples: [
    { title: 'Resource name from parts', yaml: "type: template\ntarget: resource\ntemplate: '{site}/{device.name}/if-{ifIndex}'" },
    { title: 'Strict: every part must be there', yaml: "type: template\ntarget: key\ntemplate: '{{{ne}}}:{counter}'\non_missing: error" },
  ],
  create(c) {
    const { literals, paths } = compileTemplate(c.template);
    const target = c.target;
    const strict = c.on_missing === 'error';
    return {
      apply(r: Rec) {
        let out = literals[0]!;
        for (let i = 0; i < paths.length; i++) {
          const v = lookup(r, paths[i]!);
          if (v === undefined || v === null) {
            if (strict) throw new RecordError(`template: '{${paths[i]!.name}}' is missing`);
          } else out += typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
          out += literals[i + 1]!;
        }
        setField(r, target, out);
        return r;
      },
    };
  },
});
