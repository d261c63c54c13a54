import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import plugin, { compileSchema } from '../../../src/plugins/transforms/validate/index.js';
import { ConfigError, RecordError } from '../../../src/core/errors.js';
import type { Rec } from '../../../src/plugins/types.js';
import { tempDir } from '../../helpers/fs.js';
import { runTransform, transformOf, type RunOptions } from './_harness.js';

const fixture = join(import.meta.dirname, 'fixtures', 'cdr.schema.json');
const { cfg, make, run } = transformOf(plugin);
/** Problems the schema finds in `v` (annotate mode), or [] when valid. */
function problems(schema: object, v: unknown, max = 10): string[] {
  const out = make({ schema: { type: 'object', properties: { v: schema } }, mode: 'annotate', max_errors: max }).apply(
    { v },
    { meta: {}, note: () => {} },
  ) as Rec;
  return (out._validation_errors as string[] | undefined) ?? [];
}
const cdr = {
  type: 'object',
  required: ['imsi', 'duration'],
  properties: { imsi: { type: 'string', pattern: '^[0-9]{14,15}$' }, duration: { type: 'integer', minimum: 0 } },
};

describe('transform validate: modes', () => {
  it('valid records pass unchanged in every mode', () => {
    for (const mode of ['dlq', 'drop', 'annotate']) {
      const r = { imsi: '208011234567890', duration: 5 };
      expect(run({ schema: cdr, mode }, r)).toEqual({ out: { imsi: '208011234567890', duration: 5 }, notes: [] });
    }
  });

  it('dlq (default): throws a RecordError listing the problems', () => {
    const t = make({ schema: cdr });
    expect(() => t.apply({ imsi: 'x', duration: -1 }, { meta: {}, note: () => {} })).toThrow(RecordError);
    expect(() => t.apply({ imsi: 'x', duration: -1 }, { meta: {}, note: () => {} })).toThrow(
      'validate: record does not match the schema: /imsi: must match pattern ^[0-9]{14,15}$; /duration: must be >= 0',
    );
    expect(() => t.apply({}, { meta: {}, note: () => {} })).toThrow("/: missing required field 'imsi'; /: missing required field 'duration'");
  });

  it('drop: the record is dropped with a note (no error)', () => {
    expect(run({ schema: cdr, mode: 'drop' }, { imsi: '208011234567890', duration: 'long' })).toEqual({
      out: null,
      notes: ['validate: record does not match the schema: /duration: must be integer (got string)'],
    });
  });

  it('annotate: keeps the record and adds annotate_field with the list of problems', () => {
    expect(run({ schema: cdr, mode: 'annotate' }, { imsi: 1, duration: 2.5 }).out).toEqual({
      imsi: 1,
      duration: 2.5,
      _validation_errors: ['/imsi: must be string (got integer)', '/duration: must be integer (got number)'],
    });
    expect(run({ schema: cdr, mode: 'annotate', annotate_field: 'problems' }, { duration: 1 }).out).toEqual({
      duration: 1,
      problems: ["/: missing required field 'imsi'"],
    });
  });

  it('max_errors caps the problems reported per record', () => {
    const s = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } } };
    expect(run({ schema: s, mode: 'annotate', max_errors: 2 }, { a: 1, b: 2, c: 3 }).out).toEqual({
      a: 1,
      b: 2,
      c: 3,
      _validation_errors: ['/a: must be string (got integer)', '/b: must be string (got integer)'],
    });
  });

  it('the collector is reused without leaking problems between records', () => {
    const t = make({ schema: cdr, mode: 'annotate' });
    const ctx = { meta: {}, note: () => {} };
    const a = t.apply({ imsi: 1, duration: 1 }, ctx) as Rec;
    const b = t.apply({ imsi: '208011234567890', duration: -2 }, ctx) as Rec;
    expect(a._validation_errors).toEqual(['/imsi: must be string (got integer)']);
    expect(b._validation_errors).toEqual(['/duration: must be >= 0']);
  });
});

describe('transform validate: schema and schema_file', () => {
  it('schema_file is read once at create', () => {
    const t = make({ schema_file: fixture, mode: 'drop' });
    expect(t.apply({ imsi: '208011234567890', duration: 1 }, { meta: {}, note: () => {} })).toEqual({ imsi: '208011234567890', duration: 1 });
    expect(t.apply({ imsi: '20801', duration: 1 }, { meta: {}, note: () => {} })).toBeNull();
  });

  it('a missing or invalid schema_file, or neither/both, is a clear ConfigError at create', () => {
    expect(() => make({ schema_file: '/nonexistent/s.json' })).toThrow(ConfigError);
    expect(() => make({ schema_file: '/nonexistent/s.json' })).toThrow(/cannot read schema_file \/nonexistent\/s\.json: ENOENT/);
    const bad = join(tempDir(), 'bad.json');
    writeFileSync(bad, '{ not json');
    expect(() => make({ schema_file: bad })).toThrow(/schema_file .*bad\.json is not valid JSON/);
    writeFileSync(bad, '{"type": "object", "if": {}}');
    expect(() => make({ schema_file: bad })).toThrow(/#\/if: keyword not supported/);
    expect(() => make({})).toThrow('validate: give exactly one of schema or schema_file');
    expect(() => make({ schema: cdr, schema_file: fixture })).toThrow('validate: give exactly one of schema or schema_file');
  });

  it('lint: exactly one of schema/schema_file, unsupported keywords, annotate_field outside annotate', () => {
    expect(plugin.lint!(cfg({}))).toEqual([{ path: 'schema', message: 'give schema or schema_file' }]);
    expect(plugin.lint!(cfg({ schema: cdr, schema_file: 'x' }))).toEqual([{ path: 'schema_file', message: 'give schema or schema_file, not both' }]);
    expect(plugin.lint!(cfg({ schema: { properties: { a: { $ref: '#/$defs/x' } } } }))).toEqual([
      { path: 'schema', message: expect.stringMatching(/^#\/properties\/a\/\$ref: \$ref is not supported/) },
    ]);
    expect(plugin.lint!(cfg({ schema: { type: 'int' } }))).toEqual([{ path: 'schema', message: '#/type: unknown type "int"' }]);
    expect(plugin.lint!(cfg({ schema: cdr, annotate_field: 'p' }))).toEqual([
      { path: 'annotate_field', message: 'applies to mode annotate only (mode is dlq)' },
    ]);
  });

  it('refuses what it cannot honour: $ref, tuple items, draft-04 exclusive bounds, unknown formats, bad patterns', () => {
    expect(() => compileSchema({ $ref: '#/x' })).toThrow(/\$ref is not supported/);
    expect(() => compileSchema({ items: [{ type: 'string' }] })).toThrow(/#\/items: the array \(tuple\) form is not supported/);
    expect(() => compileSchema({ exclusiveMinimum: true, minimum: 0 })).toThrow(/draft-04 boolean form/);
    expect(() => compileSchema({ format: 'color' })).toThrow(/unknown format "color"/);
    expect(() => compileSchema({ pattern: '(' })).toThrow(/#\/pattern: invalid regular expression/);
    expect(() => compileSchema({ minimum: '3' })).toThrow('#/minimum: must be a number');
    expect(() => compileSchema({ multipleOf: 0 })).toThrow('#/multipleOf: must be greater than 0');
    expect(() => compileSchema({ anyOf: [] })).toThrow('#/anyOf: must be a non-empty array of schemas');
    expect(() => compileSchema(3)).toThrow('#: a schema must be an object or a boolean');
    // Annotations and $defs are accepted and ignored.
    expect(() => compileSchema({ $schema: 'x', $id: 'y', title: 't', description: 'd', default: 1, examples: [], $comment: 'c', $defs: {} })).not.toThrow();
  });
});

describe('transform validate: keywords', () => {
  it('type (single, list, integer vs number, null, array, object)', () => {
    expect(problems({ type: 'integer' }, 1)).toEqual([]);
    expect(problems({ type: 'integer' }, 1.5)).toEqual(['/v: must be integer (got number)']);
    expect(problems({ type: 'number' }, 1)).toEqual([]);
    expect(problems({ type: ['string', 'null'] }, null)).toEqual([]);
    expect(problems({ type: ['string', 'null'] }, [])).toEqual(['/v: must be string or null (got array)']);
    expect(problems({ type: 'object' }, [])).toEqual(['/v: must be object (got array)']);
    expect(problems({ type: 'boolean' }, 'true')).toEqual(['/v: must be boolean (got string)']);
  });

  it('enum and const compare JSON values', () => {
    expect(problems({ enum: ['up', 'down', 1] }, 'up')).toEqual([]);
    expect(problems({ enum: ['up', 'down'] }, 'UP')).toEqual(['/v: must be one of ["up","down"]']);
    expect(problems({ const: { a: 1, b: 2 } }, { b: 2, a: 1 })).toEqual([]);
    expect(problems({ const: 1 }, '1')).toEqual(['/v: must be 1']);
  });

  it('numbers: minimum, maximum, exclusive bounds, multipleOf (non-numbers ignored)', () => {
    const s = { minimum: 0, maximum: 10, exclusiveMinimum: -1, exclusiveMaximum: 10, multipleOf: 0.5 };
    expect(problems(s, 2.5)).toEqual([]);
    expect(problems(s, 10)).toEqual(['/v: must be < 10']);
    expect(problems({ exclusiveMinimum: 0 }, 0)).toEqual(['/v: must be > 0']);
    expect(problems({ minimum: 0 }, -1)).toEqual(['/v: must be >= 0']);
    expect(problems({ maximum: 0 }, 1)).toEqual(['/v: must be <= 0']);
    expect(problems({ multipleOf: 0.1 }, 0.3)).toEqual([]);
    expect(problems({ multipleOf: 2 }, 3)).toEqual(['/v: must be a multiple of 2']);
    expect(problems({ minimum: 5 }, 'abc')).toEqual([]);
  });

  it('strings: minLength/maxLength in code points, pattern, format', () => {
    expect(problems({ minLength: 2, maxLength: 2 }, '😀😀')).toEqual([]);
    expect(problems({ minLength: 3 }, 'ab')).toEqual(['/v: must have at least 3 characters']);
    expect(problems({ maxLength: 1 }, 'ab')).toEqual(['/v: must have at most 1 characters']);
    expect(problems({ pattern: '^\\d+$' }, '12a')).toEqual(['/v: must match pattern ^\\d+$']);
    const ok: [string, string][] = [
      ['date-time', '2024-05-01T10:00:00Z'],
      ['date', '2024-05-01'],
      ['time', '10:00:00'],
      ['email', 'a@b.fr'],
      ['ipv4', '10.0.0.1'],
      ['ipv6', '2001:db8::1'],
      ['uuid', '123e4567-e89b-12d3-a456-426614174000'],
      ['hostname', 'mme1.epc.example'],
    ];
    for (const [format, v] of ok) expect(problems({ format }, v), format).toEqual([]);
    for (const [format] of ok) expect(problems({ format }, 'not valid!'), format).toEqual([`/v: must be a valid ${format}`]);
  });

  it('arrays: items with index paths, minItems, maxItems, uniqueItems', () => {
    expect(problems({ items: { type: 'integer' } }, [1, 'a', 3, 'b'])).toEqual(['/v/1: must be integer (got string)', '/v/3: must be integer (got string)']);
    expect(problems({ minItems: 2 }, [1])).toEqual(['/v: must have at least 2 items']);
    expect(problems({ maxItems: 1 }, [1, 2])).toEqual(['/v: must have at most 1 items']);
    expect(problems({ uniqueItems: true }, [{ a: 1 }, { a: 1 }])).toEqual(['/v: items must be unique (item 1 repeats an earlier one)']);
    expect(problems({ uniqueItems: true }, [1, '1'])).toEqual([]);
  });

  it('objects: nested paths, required, additionalProperties (false and schema), patternProperties, min/maxProperties', () => {
    expect(problems({ properties: { cell: { properties: { 'a/b': { type: 'string' } } } } }, { cell: { 'a/b': 1 } })).toEqual([
      '/v/cell/a~1b: must be string (got integer)',
    ]);
    expect(problems({ properties: { a: {} }, additionalProperties: false }, { a: 1, b: 2 })).toEqual(["/v: field 'b' is not allowed"]);
    expect(problems({ properties: { a: {} }, additionalProperties: { type: 'number' } }, { a: 'x', b: 'y' })).toEqual(['/v/b: must be number (got string)']);
    expect(problems({ patternProperties: { '^if': { type: 'integer' } }, additionalProperties: false }, { ifIndex: 1, ifX: 'a', z: 1 })).toEqual([
      '/v/ifX: must be integer (got string)',
      "/v: field 'z' is not allowed",
    ]);
    expect(problems({ minProperties: 2 }, { a: 1 })).toEqual(['/v: must have at least 2 fields']);
    expect(problems({ maxProperties: 1 }, { a: 1, b: 2 })).toEqual(['/v: must have at most 1 fields']);
    // Inherited members are not fields.
    expect(problems({ required: ['constructor'] }, {})).toEqual(["/v: missing required field 'constructor'"]);
  });

  it('combinators: allOf, anyOf, oneOf, not; boolean schemas', () => {
    expect(problems({ allOf: [{ type: 'integer' }, { minimum: 5 }] }, 3)).toEqual(['/v: must be >= 5']);
    expect(problems({ anyOf: [{ type: 'string' }, { type: 'integer' }] }, 1)).toEqual([]);
    expect(problems({ anyOf: [{ type: 'string' }, { type: 'integer' }] }, true)).toEqual(['/v: must match at least one schema of anyOf']);
    expect(problems({ oneOf: [{ type: 'integer' }, { type: 'number' }] }, 1)).toEqual(['/v: must match exactly one schema of oneOf (matches 2)']);
    expect(problems({ oneOf: [{ type: 'integer' }, { type: 'string' }] }, 1)).toEqual([]);
    expect(problems({ not: { type: 'null' } }, null)).toEqual(['/v: must not match the schema of not']);
    expect(problems(true as never, 1)).toEqual([]);
    expect(problems(false as never, 1)).toEqual(['/v: no value is allowed here']);
  });
});

describe('transform validate: end to end', () => {
  const rows = [
    { imsi: '208011234567890', duration: 1 },
    { imsi: 'bad', duration: 2 },
    { imsi: '208011234567891', duration: 3 },
  ];
  const e2e = (mode: string, opts: RunOptions = {}) => runTransform(rows, `{ type: validate, schema_file: ${JSON.stringify(fixture)}, mode: ${mode} }`, opts);
  const msg = 'validate: record does not match the schema: /imsi: must match pattern ^[0-9]{14,15}$';

  it('dlq under on_error dlq: the invalid record is dead-lettered with _stage transform', async () => {
    const { record, out, dlq } = await e2e('dlq', { onError: 'dlq', dlq: true });
    expect(out.map((r) => r.duration)).toEqual([1, 3]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(record.errors).toEqual([`transform error in in.ndjson: transforms[0] (validate): ${msg}`]);
    expect(dlq).toEqual([
      expect.objectContaining({
        _stage: 'transform',
        _pipeline: 'e2e',
        _run_id: record.run_id,
        _error: `transforms[0] (validate): ${msg}`,
        record: { imsi: 'bad', duration: 2 },
        raw: null,
      }),
    ]);
  });

  it('drop: a noted skip, not counted as skipped', async () => {
    const { record, out, dlq } = await e2e('drop');
    expect(out.map((r) => r.duration)).toEqual([1, 3]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 0, dlq_count: 0 });
    expect(record.errors).toEqual([msg]);
    expect(dlq).toEqual([]);
  });

  it('annotate: every record is written, the invalid one with _validation_errors', async () => {
    const { record, out } = await e2e('annotate');
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 3, records_skipped: 0, errors: [] });
    expect(out[1]).toEqual({ imsi: 'bad', duration: 2, _validation_errors: ['/imsi: must match pattern ^[0-9]{14,15}$'] });
    expect(out[0]).toEqual({ imsi: '208011234567890', duration: 1 });
  });
});
