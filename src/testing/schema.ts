// The `svc test` file (docs/testing-pipelines.md): cases that feed a pipeline records or raw input
// and state what its sinks and its DLQ receive. TypeBox schemas, checked with the pipeline loader's
// diagnostics (YAML path and line).
import { Type, type Static } from '@sinclair/typebox';

const Rec = Type.Record(Type.String(), Type.Unknown());

/** Text matched as a substring, or as a regular expression when written `/.../flags`. */
const Match = Type.String({ minLength: 1, description: 'A substring, or /regex/flags.' });

export const SinkExpect = Type.Object(
  {
    sink: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 })], {
      description: "Index in pipeline.sinks, the sink's label (`sinks[0] (local)`) or its type when only one sink has it.",
    }),
    records: Type.Optional(Type.Array(Rec, { description: 'The exact records written, in order.' })),
    contains: Type.Optional(Type.Array(Rec, { description: 'Each listed record matches (its fields are a subset of) a distinct written record.' })),
    count: Type.Optional(Type.Integer({ minimum: 0, description: 'How many records were written.' })),
    expr: Type.Optional(Type.String({ minLength: 1, description: 'An expression (docs/expressions.md) true for every written record.' })),
    bytes: Type.Optional(Type.String({ description: 'The serialized output as a file sink writes it (head, batches, tail), as UTF-8 text.' })),
    bytes_base64: Type.Optional(Type.String({ description: 'The same, base64 (binary serializers).' })),
  },
  { additionalProperties: false },
);

export const DlqExpect = Type.Object(
  {
    stage: Type.Optional(Type.Union([Type.Literal('parse'), Type.Literal('transform'), Type.Literal('sink')])),
    error: Type.Optional(Match),
    record: Type.Optional(Rec),
    raw: Type.Optional(Type.String({ description: 'The raw input of a parse error, as UTF-8 text.' })),
  },
  { additionalProperties: false },
);

export const Expect = Type.Object(
  {
    sinks: Type.Optional(Type.Array(SinkExpect)),
    dlq: Type.Optional(Type.Array(DlqExpect, { description: 'The dead letters, in order; [] for none.' })),
    errors: Type.Optional(Type.Array(Match, { description: "Messages of the run record's errors (recorded errors and noted skips); [] for none." })),
    status: Type.Optional(Type.Union([Type.Literal('success'), Type.Literal('aborted'), Type.Literal('failed')])),
  },
  { additionalProperties: false },
);

const inputFields = {
  records: Type.Optional(Type.Array(Rec, { description: 'Records handed to the transforms (serializer_in skipped).' })),
  raw: Type.Optional(Type.String({ description: 'Input text, decoded by serializer_in.' })),
  raw_base64: Type.Optional(Type.String({ description: 'Input bytes, base64.' })),
  raw_file: Type.Optional(Type.String({ minLength: 1, description: 'A file, relative to the test file.' })),
  messages: Type.Optional(Type.Array(Type.String(), { description: 'Separate messages (a queue, a webhook), each decoded on its own.' })),
  meta: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Source metadata of the unit (source_filename...).' })),
};

/** What `input:` and each of `polls:` hold: exactly one of records, raw, raw_base64, raw_file, messages. */
export const INPUT_KINDS = ['records', 'raw', 'raw_base64', 'raw_file', 'messages'] as const;

export const Input = Type.Object(inputFields, { additionalProperties: false });
export const Poll = Type.Object({ ...inputFields, expect: Type.Optional(Expect) }, { additionalProperties: false });

export const Case = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    state: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Initial state of stateful transforms, by state key (`transforms[0].counter_delta`).' }),
    ),
    input: Type.Optional(Input),
    polls: Type.Optional(Type.Array(Poll, { minItems: 1 })),
    expect: Type.Optional(Expect),
  },
  { additionalProperties: false },
);

export const TestFile = Type.Object(
  {
    pipeline: Type.Optional(Type.String({ minLength: 1, description: 'The pipeline file, relative to the test file.' })),
    env: Type.Optional(Type.Record(Type.String(), Type.String(), { description: '${VAR} values for the pipeline (the process environment is not used).' })),
    cases: Type.Array(Case, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type SinkExpectation = Static<typeof SinkExpect>;
export type DlqExpectation = Static<typeof DlqExpect>;
export type Expectation = Static<typeof Expect>;
export type InputSpec = Static<typeof Poll>;
