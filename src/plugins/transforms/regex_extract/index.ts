import { Type } from '@sinclair/typebox';
import { ConfigError, RecordError } from '../../../core/errors.js';
import { compileRegex, REGEX_LIMITS, type SafeRegex } from '../../../expr/regex.js';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    field: Type.String({ minLength: 1, description: 'Top-level field matched against the pattern; numbers and booleans are matched as text.' }),
    pattern: Type.String({
      minLength: 1,
      description:
        'JavaScript regular expression with named groups ((?<name>...)); each group that took part in the match sets a field of that name. Unanchored unless it starts with ^. ReDoS-safe: at most 512 characters, only the first 64 KiB of a value are examined, and long values run on a linear-time engine when the pattern could backtrack badly.',
    }),
    prefix: Type.String({ default: '', description: 'Prepended to each group name to form the field name (e.g. "log_").' }),
    on_no_match: Type.Union([Type.Literal('keep'), Type.Literal('drop'), Type.Literal('error')], {
      default: 'keep',
      description:
        'When the field is missing, null, an object, or does not match: keep (record unchanged), drop (filter it out) or error (record error, rule 6 and on_error).',
    }),
  },
  { additionalProperties: false },
);

const GROUP = /\(\?<([A-Za-z_$][\w$]*)>/g;

/** Compiles the pattern with the bounded engine; group names in pattern order. */
function build(pattern: string): { re: SafeRegex; names: string[] } {
  let re: SafeRegex;
  try {
    re = compileRegex(pattern, 'regex_extract', { pos: 0, source: pattern });
  } catch (e) {
    // The expression language's "at column 1" suffix means nothing here.
    throw new ConfigError((e as Error).message.replace(/ at column \d+$/, ''));
  }
  const names = [...pattern.matchAll(GROUP)].map((m) => m[1]!);
  if (names.length === 0) throw new ConfigError('pattern has no named group ((?<name>...)): nothing would be extracted');
  return { re, names };
}

function lint(c: { pattern: string }): LintIssue[] {
  try {
    build(c.pattern);
    return [];
  } catch (e) {
    return [{ path: 'pattern', message: (e as Error).message }];
  }
}

export default defineTransform({
  key: 'regex_extract',
  summary: 'Extract fields from a text field with a regular expression with named groups (bounded against ReDoS).',
  config,
  lint,
  examples: [
    {
      title: 'Interface name parts',
      yaml: "type: regex_extract\nfield: ifDescr\npattern: '^(?<if_type>[A-Za-z]+)(?<slot>\\d+)/(?<port>\\d+)$'",
    },
    {
      title: 'Syslog message fields, drop lines that do not match',
      yaml: "type: regex_extract\nfield: message\npattern: '%LINK-3-UPDOWN: Interface (?<ifname>\\S+), changed state to (?<state>up|down)'\nprefix: link_\non_no_match: drop",
    },
  ],
  create(c) {
    const { re, names } = build(c.pattern);
    const field = c.field;
    const keys = names.map((n) => (c.prefix ?? '') + n);
    const onNoMatch = c.on_no_match ?? 'keep';
    const noMatch = (r: Rec, why: string): Rec | null => {
      if (onNoMatch === 'keep') return r;
      if (onNoMatch === 'drop') return null;
      throw new RecordError(`regex_extract: field '${field}' ${why}`);
    };
    return {
      apply(r: Rec) {
        const v = r[field];
        if (v === undefined || v === null || !Object.hasOwn(r, field)) return noMatch(r, 'is missing');
        if (typeof v === 'object') return noMatch(r, 'is not text');
        const s = typeof v === 'string' ? v : String(v);
        const m = re.exec(s);
        if (m === null) {
          const shown = s.length > 80 ? JSON.stringify(s.slice(0, 80)) + '...' : JSON.stringify(s);
          return noMatch(
            r,
            `value ${shown} does not match the pattern${s.length > REGEX_LIMITS.maxInputLength ? ' (only the first 64 KiB are examined)' : ''}`,
          );
        }
        const groups = m.groups!;
        for (let i = 0; i < names.length; i++) {
          const g = groups[names[i]!];
          // A group in an alternative that was not taken sets nothing.
          if (g !== undefined) setField(r, keys[i]!, g);
        }
        return r;
      },
    };
  },
});
