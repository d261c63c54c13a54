// `svc test` in-process: test files written to a temp dir and run through runTestFile, which runs the
// real engine with the source replaced by the case's input and the sinks captured in memory.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelineBeside } from '../../src/testing/load.js';
import { findTestFiles, runTestFile, type FileResult } from '../../src/testing/run.js';
import { tempDir } from '../helpers/fs.js';

/** Writes `p.yaml` and `p.test.yaml` (and `files`) into a fresh dir; returns the test file's path. */
function suite(pipeline: string, tests: string, files: Record<string, string> = {}): string {
  const dir = tempDir('svc-testing-');
  writeFileSync(join(dir, 'p.yaml'), pipeline);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  const file = join(dir, 'p.test.yaml');
  writeFileSync(file, tests);
  return file;
}

const failuresOf = (r: FileResult, name: string) => r.cases.find((c) => c.name === name)!.failures;

/** Every case passed (shown in full when not, so a broken test says why). */
function expectAllPass(r: FileResult) {
  expect(r.invalid).toBeUndefined();
  expect(r.cases.filter((c) => !c.ok)).toEqual([]);
}

// Peers that do not exist: a test must never reach them (kafka has no broker at x:9092).
const COUNTERS = `version: "1"
pipeline:
  name: counters
  schedule: { type: interval, interval_seconds: 300 }
  source: { type: local, path: /nonexistent/in }
  serializer_in: { type: ndjson }
  transforms:
    - type: counter_delta
      key_fields: [host, ifIndex]
      counters: [ifInOctets]
      time_field: t
      rate: true
      width: 32
  serializer_out: { type: ndjson }
  on_error: dlq
  sinks:
    - type: kafka
      brokers: ["\${KAFKA_BROKERS}"]
      topic: rates
    - type: local
      path: /nonexistent/out
      condition: ifInOctets_delta > 100
      transforms:
        - { type: project, fields: [host, ifInOctets_delta] }
  dlq: { type: local, path: /nonexistent/dlq }
`;

describe('svc test: polls, state and sinks', () => {
  it('runs a counter_delta wrap across two polls, with expectations per poll and for the case', async () => {
    const file = suite(
      COUNTERS,
      `env: { KAFKA_BROKERS: "x:9092" }
cases:
  - name: 32-bit wrap
    polls:
      - records: [{host: r1, ifIndex: 1, ifInOctets: 4294967200, t: 1000}]
        expect: { sinks: [{sink: 0, count: 0}], dlq: [] }
      - records: [{host: r1, ifIndex: 1, ifInOctets: 100, t: 1010}]
        expect:
          sinks:
            - sink: 0
              records: [{host: r1, ifIndex: 1, ifInOctets: 100, t: 1010, ifInOctets_delta: 196, ifInOctets_rate: 19.6}]
            - sink: "sinks[1] (local)"
              records: [{host: r1, ifInOctets_delta: 196}]
      - records: [{host: r1, ifIndex: 1, ifInOctets: 150, t: 1020}]
    expect:
      sinks:
        - { sink: kafka, count: 2, expr: "ifInOctets_delta > 0" }
        - { sink: local, contains: [{ifInOctets_delta: 196}], count: 1 }
`,
    );
    const r = await runTestFile(file);
    expectAllPass(r);
    expect(r.cases).toHaveLength(1);
  });

  it('starts stateful transforms from the state a case gives, keyed like the engine stores it', async () => {
    const file = suite(
      COUNTERS,
      `env: { KAFKA_BROKERS: "x:9092" }
cases:
  - name: from stored state
    state:
      transforms[0].counter_delta: {"r1\\01": {t: 0, v: {ifInOctets: 10}}}
    input:
      records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10}]
    expect:
      sinks: [{sink: 0, records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10, ifInOctets_delta: 40, ifInOctets_rate: 4}]}]
  - name: without state the first sample is only a baseline
    input:
      records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10}]
    expect:
      sinks: [{sink: 0, count: 0}]
`,
    );
    expectAllPass(await runTestFile(file));
  });

  it('handles Counter64 values beyond 2^53 (written as digits) in records and in state, and a 64-bit wrap', async () => {
    const file = suite(
      COUNTERS.replace('width: 32', 'width: 64'),
      `env: { KAFKA_BROKERS: "x:9092" }
cases:
  - name: HC counter wraps past 2^64
    state:
      transforms[0].counter_delta: {"r1\\01": {t: 1000000, v: {ifInOctets: "18446744073709551000"}}}
    polls:
      - records: [{host: r1, ifIndex: 1, ifInOctets: "384", t: 1100}]
        expect:
          sinks: [{sink: 0, records: [{host: r1, ifIndex: 1, ifInOctets: "384", t: 1100, ifInOctets_delta: 1000, ifInOctets_rate: 10}]}]
      - records: [{host: r1, ifIndex: 1, ifInOctets: "9007199254741384", t: 1200}]
        expect:
          sinks: [{sink: 0, contains: [{ifInOctets_delta: 9007199254741000}]}]
`,
    );
    expectAllPass(await runTestFile(file));
  });

  it('reports failing cases with a diff by sink, record index and field', async () => {
    const file = suite(
      COUNTERS,
      `env: { KAFKA_BROKERS: "x:9092" }
cases:
  - name: wrong delta
    state:
      transforms[0].counter_delta: {"r1\\01": {t: 0, v: {ifInOctets: 10}}}
    input:
      records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10}, {host: r1, ifIndex: 1, ifInOctets: 60, t: 20}]
    expect:
      sinks:
        - sink: 0
          records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10, ifInOctets_delta: 41}]
        - sink: 1
          contains: [{host: r9}]
          expr: ifInOctets_delta > 1000
  - name: right count
    input: { records: [{host: r1, ifIndex: 1, ifInOctets: 50, t: 10}] }
    expect: { sinks: [{sink: 0, count: 0}] }
`,
    );
    const r = await runTestFile(file);
    expect(r.cases.map((c) => c.ok)).toEqual([false, true]);
    const f = failuresOf(r, 'wrong delta');
    expect(f.map((x) => [x.where, x.message])).toEqual([
      ['sinks[0] (kafka)', 'records differ (expected 1, got 2)'],
      ['sinks[1] (local)', 'contains[0]: no written record has {"host":"r9"}'],
      ['sinks[1] (local)', 'expr: no record was written, so nothing satisfies ifInOctets_delta > 1000 (add count: 0 if that is expected)'],
    ]);
    expect(f[0]!.diff).toEqual([
      '  [0]',
      '  - ifInOctets_delta: 41',
      '  + ifInOctets_delta: 40',
      '  + ifInOctets_rate: 4 (not expected)',
      '+ [1] unexpected: {"host":"r1","ifIndex":1,"ifInOctets":60,"t":20,"ifInOctets_delta":10,"ifInOctets_rate":1}',
    ]);
    expect(f[1]!.diff).toEqual(['  (no record was written)']);
  });
});

const CSV = `version: "1"
pipeline:
  name: kpi
  schedule: { type: manual }
  source: { type: local, path: /nonexistent/in }
  serializer_in: { type: csv, delimiter: ";" }
  transforms:
    - type: cast
      fields: { value: float }
  serializer_out: { type: csv }
  on_error: dlq
  sinks:
    - { type: local, path: /nonexistent/out }
  dlq: { type: local, path: /nonexistent/dlq }
`;

describe('svc test: raw input through real serializers', () => {
  it('decodes raw text, raw_base64 and raw_file with serializer_in and compares the bytes serializer_out writes', async () => {
    const file = suite(
      CSV,
      `cases:
  - name: two rows
    input:
      raw: |
        cell;value
        A;1.5
        B;2
    expect:
      sinks:
        - sink: 0
          records: [{cell: A, value: 1.5}, {cell: B, value: 2}]
          bytes: |
            cell,value
            A,1.5
            B,2
  - name: base64
    input: { raw_base64: ${Buffer.from('cell;value\nC;3\n').toString('base64')} }
    expect: { sinks: [{sink: 0, records: [{cell: C, value: 3}]}] }
  - name: from a file, with source metadata
    input: { raw_file: data/kpi.csv, meta: {source_filename: kpi.csv} }
    expect: { sinks: [{sink: 0, count: 3, expr: "value >= 1"}] }
`,
      // raw_file is relative to the test file.
      { 'data/kpi.csv': 'cell;value\nA;1\nB;2\nC;3\n' },
    );
    expectAllPass(await runTestFile(file));
  });

  it('parses a 3GPP PM XML file (raw_file, named like a file source names its unit) with the real pm_xml serializer', async () => {
    // The example of 3GPP TS 32.435 (measCollecFile, two measValues of one measInfo).
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<measCollecFile xmlns="http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec">
  <fileHeader fileFormatVersion="32.435 V10.0" vendorName="Company NN">
    <fileSender localDn="DC=a1.companyNN.com,SubNetwork=1,IRPAgent=1"/>
    <measCollec beginTime="2000-03-01T14:00:00+02:00"/>
  </fileHeader>
  <measData>
    <managedElement localDn="ManagedElement=1" userLabel="RNC Telecomville"/>
    <measInfo measInfoId="UtranCell">
      <job jobId="1231"/>
      <granPeriod duration="PT900S" endTime="2000-03-01T14:14:30+02:00"/>
      <measType p="1">attTCHSeizures</measType>
      <measType p="2">succTCHSeizures</measType>
      <measValue measObjLdn="RncFunction=RF-1,UtranCell=Gbg-997"><r p="1">234</r><r p="2">NIL</r></measValue>
      <measValue measObjLdn="RncFunction=RF-1,UtranCell=Gbg-998"><r p="1">890</r><r p="2">901</r></measValue>
    </measInfo>
  </measData>
  <fileFooter><measCollec endTime="2000-03-01T14:15:00+02:00"/></fileFooter>
</measCollecFile>
`;
    const file = suite(
      `version: "1"
pipeline:
  name: pm
  schedule: { type: interval, interval_seconds: 900 }
  source: { type: sftp, host: pm.example.net, username: pm, password: "\${SFTP_PASSWORD}", remote_path: /pm }
  serializer_in: { type: pm_xml }
  transforms:
    - { type: filter, expression: "succTCHSeizures != None" }
    - { type: inject_meta, fields: { file: source_filename } }
    - { type: project, fields: [file, meas_obj_ldn, attTCHSeizures, succTCHSeizures, gran_end_time] }
  serializer_out: { type: ndjson }
  sinks:
    - { type: clickhouse, host: clickhouse.example.net, table: pm_counters }
`,
      `env: { SFTP_PASSWORD: not-used }
cases:
  - name: one complete measValue
    input: { raw_file: testdata/A20000301.1400+0200-1415+0200_RNC.xml }
    expect:
      sinks:
        - sink: clickhouse
          records: [{file: A20000301.1400+0200-1415+0200_RNC.xml, meas_obj_ldn: "RncFunction=RF-1,UtranCell=Gbg-998", attTCHSeizures: 890, succTCHSeizures: 901, gran_end_time: "2000-03-01T14:14:30+02:00"}]
  - name: meta given by the case wins
    input: { raw_file: testdata/A20000301.1400+0200-1415+0200_RNC.xml, meta: { source_filename: renamed.xml } }
    expect: { sinks: [{ sink: 0, contains: [{ file: renamed.xml }], count: 1 }] }
`,
      { 'testdata/A20000301.1400+0200-1415+0200_RNC.xml': xml },
    );
    expectAllPass(await runTestFile(file));
  });

  it('shows a line diff when the bytes differ', async () => {
    const file = suite(
      CSV,
      `cases:
  - name: wrong bytes
    input: { raw: "cell;value\\nA;1.5\\nB;2\\n" }
    expect:
      sinks:
        - sink: 0
          bytes: "cell,value\\nA,1.5\\nB,3\\n"
`,
    );
    const [f] = failuresOf(await runTestFile(file), 'wrong bytes');
    expect(f!.message).toBe('bytes differ (expected 21, got 21)');
    expect(f!.diff).toEqual(['  cell,value', '  A,1.5', '- B,3', '+ B,2', '  ']);
  });

  it('shows a records sink (kafka) its records as serializer_out writes them in bytes, as a file sink would', async () => {
    const file = suite(
      CSV.replace('serializer_out: { type: csv }', 'serializer_out: { type: ndjson }').replace(
        '{ type: local, path: /nonexistent/out }',
        '{ type: kafka, brokers: ["127.0.0.1:9"], topic: kpi }',
      ),
      `cases:
  - name: to kafka
    input: { raw: "cell;value\\nA;1.5\\n" }
    expect:
      sinks:
        - sink: kafka
          bytes: "{\\"cell\\":\\"A\\",\\"value\\":1.5}\\n"
`,
    );
    expectAllPass(await runTestFile(file));
  });

  it('decodes each message on its own (queue and webhook sources)', async () => {
    const file = suite(
      CSV.replace('{ type: csv, delimiter: ";" }', '{ type: json }').replace('serializer_out: { type: csv }', 'serializer_out: { type: ndjson }'),
      `cases:
  - name: messages
    input: { messages: ['{"cell": "A", "value": "1"}', '[{"cell": "B", "value": "2"}, {"cell": "C", "value": "x"}]'] }
    expect:
      sinks:
        - sink: 0
          records: [{cell: A, value: 1}, {cell: B, value: 2}]
          bytes: "{\\"cell\\":\\"A\\",\\"value\\":1}\\n{\\"cell\\":\\"B\\",\\"value\\":2}\\n"
      dlq:
        - stage: transform
          error: /cast.*value/
          record: {cell: C, value: x}
`,
    );
    expectAllPass(await runTestFile(file));
  });
});

describe('svc test: dead letters, errors and run status', () => {
  it('checks DLQ envelopes: stage, error (substring or regex), record and raw input', async () => {
    const file = suite(
      CSV.replace('{ type: csv, delimiter: ";" }', '{ type: ndjson, strict: true }'),
      `cases:
  - name: one of each
    input:
      raw: |
        {"cell": "A", "value": "1"}
        [1]
        {"cell": "B", "value": "n/a"}
    expect:
      sinks: [{sink: 0, count: 1}]
      dlq:
        - { stage: parse, error: expected a JSON object, raw: "[1]" }
        - { stage: transform, error: "/^transforms\\\\[0\\\\] \\\\(cast\\\\)/", record: {cell: B, value: n/a} }
  - name: wrong expectations
    input:
      raw: |
        [1]
    expect:
      dlq:
        - { stage: transform, error: nope }
        - { stage: parse }
`,
    );
    const r = await runTestFile(file);
    expect(r.cases.map((c) => c.ok)).toEqual([true, false]);
    const [f] = failuresOf(r, 'wrong expectations');
    expect(f!.where).toBe('dlq');
    expect(f!.message).toBe('expected 2 dead letters, got 1');
    expect(f!.diff).toEqual(['- [0] transform: nope', '- [1] parse: *', '+ [0] parse: expected a JSON object, got array (strict: true) raw="[1]"']);
  });

  it('checks the run record errors without a DLQ, and a run aborted by on_error: abort', async () => {
    const pipeline = CSV.replace('  on_error: dlq\n', '  on_error: continue\n').replace('  dlq: { type: local, path: /nonexistent/dlq }\n', '');
    const file = suite(
      pipeline,
      `cases:
  - name: bad value skipped
    input: { raw: "cell;value\\nA;x\\nB;2\\n" }
    expect:
      sinks: [{sink: 0, records: [{cell: B, value: 2}]}]
      errors: ['/transform error in input: .*cast/']
  - name: clean input has no errors
    input: { raw: "cell;value\\nB;2\\n" }
    expect: { errors: [] }
  - name: errors are required to match
    input: { raw: "cell;value\\nA;x\\n" }
    expect: { errors: [] }
`,
    );
    const r = await runTestFile(file);
    expect(r.cases.map((c) => c.ok)).toEqual([true, true, false]);
    expect(failuresOf(r, 'errors are required to match')[0]!.message).toBe('expected no errors, got 2');

    const abort = suite(
      pipeline.replace('on_error: continue', 'on_error: abort'),
      `cases:
  - name: aborted as expected
    input: { raw: "cell;value\\nA;x\\n" }
    expect: { status: aborted }
  - name: an aborted run fails a case that does not expect it
    input: { raw: "cell;value\\nA;x\\n" }
    expect: { sinks: [{sink: 0, count: 0}] }
`,
    );
    const a = await runTestFile(abort);
    expect(a.cases.map((c) => c.ok)).toEqual([true, false]);
    const [f] = failuresOf(a, 'an aborted run fails a case that does not expect it');
    expect(f!.where).toBe('status');
    expect(f!.message).toMatch(/^expected the run to end 'success', it ended 'aborted': transform error in input: transforms\[0\] \(cast\)/);
  });
});

// Cases that pass the schema but break every cross-field rule (line numbers below count from this text).
const CROSS_FIELD_PROBLEMS = `env: { KAFKA_BROKERS: "x:9092" }
cases:
  - name: a
    input: { records: [], raw: "x" }
    expect:
      sinks:
        - { sink: 5, count: 1 }
        - { sink: local, expr: "a ==" }
        - { sink: 0 }
      dlq: [{ error: "/(/" }]
  - name: a
    state: { "transforms[1].counter_delta": {} , "transforms[0].counter_delta": [1] }
    polls: [{ records: [] }]
`;

describe('svc test: invalid test files', () => {
  it('names the YAML path and line of every problem in the test file', async () => {
    const file = suite(
      COUNTERS,
      `${CROSS_FIELD_PROBLEMS}  - name: c
    input: { records: [], colour: red }
    expect: { sinks: [{ sink: 0, count: 0 }] }
`,
    );
    const r = await runTestFile(file);
    expect(r.cases).toEqual([]);
    const lines = r.invalid!.map((l) => l.replace(file, 'T'));
    expect(lines).toEqual(["T:15:27 cases[2].input.colour: unknown key 'colour' [CFG_UNKNOWN_KEY]"]);
  });

  it('lists every cross-field problem once the schema is satisfied', async () => {
    const file = suite(COUNTERS, CROSS_FIELD_PROBLEMS);
    const lines = (await runTestFile(file)).invalid!.map((l) => l.replace(file, 'T'));
    expect(lines).toEqual([
      'T:4:5 cases[0].input: give exactly one of records, raw, raw_base64, raw_file, messages (got records, raw) [CFG_INVALID]',
      'T:7:13 cases[0].expect.sinks[0].sink: there is no sinks[5]; the pipeline has 2 sinks [CFG_INVALID]',
      'T:8:26 cases[0].expect.sinks[1].expr: invalid expression: unexpected end of expression at column 5 [CFG_EXPRESSION]',
      'T:9:11 cases[0].expect.sinks[2]: give at least one of records, contains, count, expr, bytes, bytes_base64 [CFG_REQUIRED]',
      'T:10:15 cases[0].expect.dlq[0].error: Invalid regular expression: /(/: Unterminated group [CFG_RANGE]',
      "T:11:5 cases[1].name: case name 'a' is used twice [CFG_INVALID]",
      'T:11:5 cases[1]: a case needs expect (for the whole case, or on a poll) [CFG_REQUIRED]',
      `T:12:14 cases[1].state["transforms[1].counter_delta"]: no stateful transform 'transforms[1].counter_delta'; state keys of this pipeline: transforms[0].counter_delta [CFG_UNKNOWN_KEY]`,
      'T:12:50 cases[1].state["transforms[0].counter_delta"]: counter_delta state must be an object of series [CFG_INVALID]',
    ]);
  });

  it("reports the pipeline's own diagnostics with the pipeline file, and a missing pipeline", async () => {
    const file = suite(COUNTERS, 'cases:\n  - name: a\n    input: { records: [] }\n    expect: { errors: [] }\n');
    // The process environment is not used: the test file's env is the only source of ${VAR}s.
    process.env.KAFKA_BROKERS = 'from-the-environment:9092';
    const r = await runTestFile(file).finally(() => delete process.env.KAFKA_BROKERS);
    expect(r.invalid![0]).toBe(
      `${join(file, '..', 'p.yaml')}:18:17 pipeline.sinks[0].brokers[0]: environment variable KAFKA_BROKERS is not set (set it, or write \${KAFKA_BROKERS:-default}) [CFG_ENV_UNSET]`,
    );

    const other = suite(COUNTERS, 'pipeline: nothere.yaml\ncases:\n  - name: a\n    input: { records: [] }\n    expect: { errors: [] }\n');
    expect((await runTestFile(other)).invalid).toEqual([
      expect.stringMatching(/^.*p\.test\.yaml:1:1 pipeline: cannot read the pipeline .*nothere\.yaml: ENOENT.* \[CFG_INVALID\]$/),
    ]);
  });

  it('refuses dead-letter expectations for a pipeline that dead-letters nothing', async () => {
    const file = suite(
      CSV.replace('  on_error: dlq\n', '').replace('  dlq: { type: local, path: /nonexistent/dlq }\n', ''),
      'cases:\n  - name: a\n    input: { records: [] }\n    expect: { dlq: [{ stage: parse }] }\n',
    );
    expect((await runTestFile(file)).invalid).toEqual([
      expect.stringContaining(
        'cases[0].expect.dlq: the pipeline dead-letters nothing (on_error: continue, no dlq sink); check its errors with expect.errors [CFG_INVALID]',
      ),
    ]);
  });
});

describe('svc test: finding test files', () => {
  it('takes *.test.yaml and *.test.yml in any case under a folder, the files the template listing leaves out', () => {
    const dir = tempDir('svc-testing-');
    for (const f of ['a.yaml', 'a.test.yaml', 'b.TEST.yml', 'c.test.json', '.hidden/d.test.yaml']) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), 'cases: []\n');
    }
    expect(findTestFiles(dir)).toEqual({ files: [join(dir, 'a.test.yaml'), join(dir, 'b.TEST.yml')] });
    expect(findTestFiles(join(dir, 'a.yaml'))).toEqual({ files: [join(dir, 'a.test.yaml')] });
    expect(pipelineBeside(join(dir, 'b.TEST.yml'))).toBe(join(dir, 'b.yml'));
  });
});
