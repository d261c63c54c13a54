import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../../core/errors.js';
import { defineTransform, type LintIssue } from '../../types.js';
import { FAIL, fieldConverter, lintTarget, quoteValue } from '../../common/convert-fields.js';
import { compileFormat, MAX_DATE_MS, NOT_A_TIME, timeParser } from '../../common/time.js';

const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Top-level fields holding timestamps; each is normalized in place. Missing and null fields are left alone.',
    }),
    target: Type.Optional(Type.String({ minLength: 1, description: 'Write the result here instead of replacing the field (only with exactly one field).' })),
    unit: Type.Union([Type.Literal('auto'), Type.Literal('s'), Type.Literal('ms'), Type.Literal('us'), Type.Literal('ns')], {
      default: 'auto',
      description:
        'Unit of epoch numbers (and of strings of digits): s, ms, us, ns, or auto: below 1e11 seconds, below 1e14 milliseconds, below 1e17 microseconds, else nanoseconds.',
    }),
    formats: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description:
        'Custom formats tried in order before the built-in ones: %Y year (4 digits), %m month (01-12), %b month name (Jan, case-insensitive), %d day, %H hour, %M minute, %S second, %f fraction (1-9 digits), %z offset (Z, +hh:mm, +hhmm), %% a percent sign; anything else is literal. %Y, %m or %b, and %d are required.',
    }),
    default_offset: Type.String({
      default: 'Z',
      pattern: '^(Z|[+-]\\d{2}:?\\d{2})$',
      description: 'Offset assumed for date-times without one (Z or a fixed +hh:mm; time zone names are not supported).',
    }),
    output: Type.Union([Type.Literal('iso'), Type.Literal('epoch_ms'), Type.Literal('epoch_s')], {
      default: 'iso',
      description: 'iso: UTC text with milliseconds (2026-01-01T11:00:00.000Z); epoch_ms: integer milliseconds; epoch_s: integer seconds (rounded down).',
    }),
    on_failure: Type.Union([Type.Literal('error'), Type.Literal('null'), Type.Literal('keep')], {
      default: 'error',
      description:
        'When a value is not a timestamp: error (record error, rule 6 and on_error), null (set the result to null) or keep (leave the value; with target, target is not written).',
    }),
  },
  { additionalProperties: false },
);

function lint(c: { fields: string[]; target?: string; formats?: string[] }): LintIssue[] {
  const issues: LintIssue[] = lintTarget(c);
  (c.formats ?? []).forEach((f, i) => {
    try {
      compileFormat(f);
    } catch (e) {
      issues.push({ path: `formats.${i}`, message: (e as Error).message });
    }
  });
  return issues;
}

export default defineTransform({
  key: 'timestamp_normalize',
  summary: 'Normalize timestamps (epoch s/ms/us/ns, ISO 8601, 3GPP 20260101120000+0100, custom formats) to UTC ISO 8601 or epoch.',
  config,
  lint,
  examples: [
    { title: '3GPP file times and epoch counters to ISO UTC', yaml: 'type: timestamp_normalize\nfields: [beginTime, collected_at]' },
    {
      title: 'Syslog-style text into epoch milliseconds',
      yaml: "type: timestamp_normalize\nfields: [ts]\ntarget: ts_ms\nformats: ['%d/%b/%Y:%H:%M:%S %z']\noutput: epoch_ms\non_failure: 'null'",
    },
    { title: 'Local times of a +01:00 site, epoch in microseconds', yaml: "type: timestamp_normalize\nfields: [t]\nunit: us\ndefault_offset: '+01:00'" },
  ],
  create(c) {
    const issues = lint(c);
    if (issues.length) throw new ConfigError(`timestamp_normalize: ${issues[0]!.path}: ${issues[0]!.message}`);
    const parse = timeParser({ unit: c.unit, formats: c.formats, default_offset: c.default_offset });
    const output = c.output ?? 'iso';

    // Records of one file or poll mostly share their timestamps: the last conversion is reused.
    let lastIn: unknown;
    let lastOut: unknown;
    return {
      apply: fieldConverter({
        fields: c.fields,
        target: c.target,
        onFailure: c.on_failure ?? 'error',
        skipNull: true,
        convert(v) {
          if (v === lastIn) return lastOut;
          const t = parse(v);
          if (t === NOT_A_TIME || Math.abs(t) > MAX_DATE_MS) return FAIL;
          lastIn = v;
          return (lastOut = output === 'iso' ? new Date(t).toISOString() : output === 'epoch_ms' ? t : Math.floor(t / 1000));
        },
        failure: (field, v) => `timestamp_normalize: field '${field}' value ${quoteValue(v)} is not a recognized timestamp`,
      }),
    };
  },
});
