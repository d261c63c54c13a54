import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { asWritten, expansionOf } from '../../src/config/interpolate.js';
import { testRegistry } from '../helpers/plugins.js';

const load = (yaml: string, env: Record<string, string> = {}) => loadPipelineText(yaml, { registry: testRegistry, env, file: 'p.yaml' });
const messages = (yaml: string, env: Record<string, string> = {}) => load(yaml, env).diagnostics.map((d) => formatDiagnostic(d, 'p.yaml'));

const minimal = `version: "1"
pipeline:
  name: snmp-if
  schedule:
    type: interval
    interval_seconds: 60
  source:
    type: local
    path: /data/in
  sinks:
    - type: local
      path: /data/out
`;

describe('pipeline definition', () => {
  it('fills every default of the definition and of the sink common fields', () => {
    const { config, diagnostics } = load(minimal);
    expect(diagnostics).toEqual([]);
    expect(config).toMatchObject({
      name: 'snmp-if',
      enabled: true,
      on_error: 'continue',
      thread_workers: 1,
      skip_processed: false,
      parallel_sinks: false,
      post_batch_cleanup: true,
      transforms: [],
      serializer_in: { type: 'json', indent: null, ensure_ascii: true },
      serializer_out: { type: 'json', indent: null, ensure_ascii: true },
    });
    expect(config!.sinks[0]).toMatchObject({ type: 'local', path: '/data/out', retry_count: 0, retry_delay_seconds: 1, transforms: [] });
    expect(config!.sinks[0]!.circuit_breaker_threshold).toBeUndefined();
    expect(config!.batch_size).toBeUndefined();
    expect(config!.rate_limit_rps).toBeUndefined();
  });

  it('reports a wrong type with YAML path, line and column', () => {
    const yaml = minimal + `    - type: local\n      path: /x\n      retry_count: three\n`;
    expect(messages(yaml)).toEqual([`p.yaml:15:20 pipeline.sinks[1].retry_count: expected integer, got "three" [CFG_TYPE]`]);
  });

  it('reports every error in one pass, in line order', () => {
    const yaml = `version: "1"
pipeline:
  name: "bad name!"
  schedule: { type: hourly }
  thread_workers: 0
  on_eror: abort
  source: { type: locl, path: /x }
  serializer_out: { type: ndjson, strict: maybe }
  transforms:
    - { type: filter, expression: "a ==" }
    - { type: rename, feilds: { a: b } }
  sinks:
    - { type: local, path: /y, retry_count: -1, conditon: "x > 1" }
`;
    expect(messages(yaml)).toEqual([
      `p.yaml:3:9 pipeline.name: expected string to match '^[A-Za-z0-9][A-Za-z0-9_.-]*$', got "bad name!" [CFG_RANGE]`,
      `p.yaml:4:21 pipeline.schedule.type: must be one of 'interval', 'cron', 'manual', 'stream', got "hourly" [CFG_INVALID_OPTION]`,
      `p.yaml:5:19 pipeline.thread_workers: expected integer to be greater or equal to 1, got 0 [CFG_RANGE]`,
      `p.yaml:6:3 pipeline.on_eror: unknown key 'on_eror' (did you mean 'on_error'?) [CFG_UNKNOWN_KEY]`,
      `p.yaml:7:19 pipeline.source.type: unknown source type 'locl' (did you mean 'local'?); registered: ${[...testRegistry.source.keys()].join(', ')} [CFG_UNKNOWN_PLUGIN]`,
      `p.yaml:8:43 pipeline.serializer_out.strict: expected boolean (true or false), got "maybe" [CFG_TYPE]`,
      `p.yaml:10:35 pipeline.transforms[0].expression: invalid expression: unexpected end of expression at column 5 [CFG_EXPRESSION]`,
      `p.yaml:11:23 pipeline.transforms[1].feilds: unknown key 'feilds' (did you mean 'fields'?) [CFG_UNKNOWN_KEY]`,
      `p.yaml:13:45 pipeline.sinks[0].retry_count: expected integer to be greater or equal to 0, got -1 [CFG_RANGE]`,
      `p.yaml:13:49 pipeline.sinks[0].conditon: unknown key 'conditon' (did you mean 'condition'?) [CFG_UNKNOWN_KEY]`,
    ]);
  });

  it('suggests sink common fields for typos in a sink', () => {
    const yaml = minimal + `      retry_cuont: 2\n`;
    expect(messages(yaml)).toEqual([`p.yaml:13:7 pipeline.sinks[0].retry_cuont: unknown key 'retry_cuont' (did you mean 'retry_count'?) [CFG_UNKNOWN_KEY]`]);
  });

  it('reports missing required fields at their parent', () => {
    const got = messages(`version: "1"\npipeline:\n  name: x\n  schedule: { type: manual }\n  source: { type: local }\n  sinks: []\n`);
    expect(got).toEqual(
      expect.arrayContaining([
        'p.yaml:5:11 pipeline.source.path: is required [CFG_REQUIRED]',
        expect.stringMatching(/^p\.yaml:6:10 pipeline\.sinks: .* \[CFG_RANGE\]$/),
      ]),
    );
    expect(got).toHaveLength(2);
  });

  it('requires version "1" and accepts the number 1', () => {
    expect(messages(minimal.replace('version: "1"\n', ''))).toEqual([`p.yaml:1:1 version: is required: add version: "1" at the top [CFG_VERSION]`]);
    expect(messages(minimal.replace('version: "1"', 'version: "2"'))).toEqual([
      `p.yaml:1:10 version: must be '1', got "2"; this release reads version "1" [CFG_VERSION]`,
    ]);
    expect(load(minimal.replace('version: "1"', 'version: 1')).config).toBeDefined();
  });

  it("reports a YAML syntax error at the line to fix, in words, with the parser's message after it", () => {
    expect(messages('version: "1"\npipeline:\n  name: x\n   bad: indent\n')).toEqual([
      'p.yaml:4:4 this line is indented deeper than line 3, whose `name` already has a value: indent it as the keys beside it (column 3) (YAML parser: Nested mappings are not allowed in compact mappings) [CFG_YAML]',
    ]);
  });

  // What a newcomer types wrong, the line the parser notices it on (often another), and the line and words reported.
  it.each([
    [
      'a key without its colon',
      'version: "1"\npipeline:\n  name test\n  source:\n    type: local\n',
      3,
      3,
      '`name test` is not a `key: value` pair: a key needs a colon and a space after it',
    ],
    ['no space after the colon', 'version: "1"\npipeline:\n  name:test\n  source:\n    type: local\n', 3, 3, 'put a space after the colon: `name: test`'],
    [
      'a key indented too deep (noticed on the line above)',
      'version: "1"\npipeline:\n  source:\n    type: local\n      path: /tmp\n',
      5,
      7,
      'this line is indented deeper than line 4, whose `type` already has a value: indent it as the keys beside it (column 5)',
    ],
    [
      'a tab as indentation',
      'version: "1"\npipeline:\n\tname: test\n',
      3,
      1,
      'this line is indented with a tab; YAML indents with spaces only: replace the tab with spaces',
    ],
    [
      'an unclosed quote (noticed at the end of the file)',
      'version: "1"\npipeline:\n  name: "test\n  source:\n    type: local\n',
      3,
      9,
      'the text opened with " is not closed: add the closing "',
    ],
    [
      'an unclosed [ (noticed on the next line)',
      'version: "1"\npipeline:\n  sinks: [a, b\n  source:\n    type: local\n',
      3,
      10,
      'the list opened with [ is not closed: end it with ] (or write it one item a line)',
    ],
    ["a value with ': ' in it", 'version: "1"\npipeline:\n  name: a: b\n', 3, 9, 'the value `a: b` contains \': \': put it in quotes (`name: "a: b"`)'],
    [
      'a key given twice',
      'version: "1"\npipeline:\n  name: a\n  name: b\n',
      4,
      3,
      '`name` is given twice in the same mapping (first on line 3): keep one of them',
    ],
    [
      'list items out of line',
      'version: "1"\npipeline:\n  sinks:\n    - type: local\n     - type: x\n',
      5,
      6,
      'this list item is not in line with the items before it: start every `- ` of one list at the same column',
    ],
  ])('YAML syntax: %s', (_, yaml, line, column, words) => {
    const [d, ...more] = load(yaml).diagnostics;
    expect(more).toEqual([]);
    expect(d).toMatchObject({ code: 'CFG_YAML', line, column });
    expect(d!.message).toMatch(new RegExp(`^${words.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(YAML parser: [^)]+\\)$`));
  });

  it('rejects duplicate keys', () => {
    expect(load(minimal.replace('  name: snmp-if', '  name: a\n  name: b')).diagnostics[0]).toMatchObject({ code: 'CFG_YAML', line: 4 });
  });

  it('rejects a list used as a key with its line, without the yaml library warning on stderr', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      expect(messages(minimal.replace('  name: snmp-if', '  name: snmp-if\n  ? [a, b]\n  : 1'))).toEqual([
        'p.yaml:4:5 a key is a list: keys must be plain names [CFG_YAML]',
      ]);
      await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });
});

describe('${VAR} interpolation', () => {
  const yaml =
    minimal.replace('path: /data/in', 'path: ${IN_DIR}').replace('path: /data/out', 'path: ${OUT_DIR:-/tmp/out}') + '      retry_count: ${RETRIES:-2}\n';

  it('substitutes set variables and defaults, and converts numbers', () => {
    const { config } = load(yaml, { IN_DIR: '/srv/pm' });
    expect(config!.source.path).toBe('/srv/pm');
    expect(config!.sinks[0]).toMatchObject({ path: '/tmp/out', retry_count: 2 });
    expect(load(yaml, { IN_DIR: '/a', OUT_DIR: '/b', RETRIES: '5' }).config!.sinks[0]).toMatchObject({ path: '/b', retry_count: 5 });
  });

  it('is an error when a required variable is unset, naming the variable, path and line', () => {
    expect(messages(yaml)).toEqual([
      `p.yaml:9:11 pipeline.source.path: environment variable IN_DIR is not set (set it, or write \${IN_DIR:-default}) [CFG_ENV_UNSET]`,
    ]);
  });

  it('writes a literal $ for $$', () => {
    // (a replacer function: in a replacement string `$$` would itself mean `$`)
    expect(load(minimal.replace('path: /data/in', () => 'path: /data/$${x}')).config!.source.path).toBe('/data/${x}');
  });

  it("reads only what SVC_CONFIG_ENV_ALLOW allows: by default every variable but svc's own SVC_*", () => {
    const refs = (a: string, b: string) => minimal.replace('path: /data/in', `path: /in/\${${a}}`).replace('path: /data/out', `path: /out/\${${b}}`);
    const env = { SVC_API_KEY: 'k', SVC_NODE_ID: 'n', MY_DIR: 'm', OTHER: 'o' };
    expect(messages(refs('SVC_API_KEY', 'MY_DIR'), env)).toEqual([
      `p.yaml:9:11 pipeline.source.path: environment variable SVC_API_KEY may not be read by a pipeline (SVC_CONFIG_ENV_ALLOW is *: every variable but svc's own SVC_*); use another variable, or have the operator add SVC_API_KEY to SVC_CONFIG_ENV_ALLOW [CFG_ENV_DENIED]`,
    ]);
    // A default does not make a refused variable readable; $$ is text, not a reference.
    expect(load(refs('SVC_API_KEY:-d', 'MY_DIR'), env).diagnostics.map((d) => d.code)).toEqual(['CFG_ENV_DENIED']);
    expect(
      load(
        minimal.replace('path: /data/in', () => 'path: /in/$${SVC_API_KEY}'),
        env,
      ).config!.source.path,
    ).toBe('/in/${SVC_API_KEY}');
    // Names and prefixes; an SVC_ variable only through an entry that starts with SVC_; empty allows none.
    const allowed = (list: string) => (a: string, b: string) =>
      load(refs(a, b), { ...env, SVC_CONFIG_ENV_ALLOW: list })
        .diagnostics.filter((d) => d.code === 'CFG_ENV_DENIED')
        .map((d) => d.path);
    expect(allowed('MY_*')('MY_DIR', 'OTHER')).toEqual(['pipeline.sinks[0].path']);
    expect(allowed('OTHER,SVC_NODE_*')('SVC_NODE_ID', 'OTHER')).toEqual([]);
    expect(allowed('S*,*')('SVC_NODE_ID', 'OTHER')).toEqual(['pipeline.source.path']);
    expect(allowed('')('MY_DIR', 'OTHER')).toEqual(['pipeline.source.path', 'pipeline.sinks[0].path']);
    expect(() => load(minimal, { SVC_CONFIG_ENV_ALLOW: 'MY-VAR' })).toThrow(/SVC_CONFIG_ENV_ALLOW: "MY-VAR" is not a variable name/);
  });

  it('keeps each value as written beside the expanded config: the API shows that, and secret-named values are masked in runs', () => {
    const yaml =
      minimal.replace('path: /data/in', 'path: ${IN_DIR}').replace('path: /data/out', 'path: /out/${DB_PASSWORD}') + '      retry_count: ${RETRIES:-2}\n';
    const { config } = load(yaml, { IN_DIR: '/srv/pm', DB_PASSWORD: 'pw-1234' });
    expect(config!.sinks[0]).toMatchObject({ path: '/out/pw-1234', retry_count: 2 });
    const shown = asWritten(config!);
    expect(shown.source.path).toBe('${IN_DIR}');
    expect(shown.sinks[0]).toMatchObject({ path: '/out/${DB_PASSWORD}', retry_count: '${RETRIES:-2}' });
    expect(JSON.stringify(config)).toContain('pw-1234'); // the config itself is for running
    expect(expansionOf(config!)!.secrets).toEqual(['pw-1234']); // IN_DIR's name says nothing secret
    expect(asWritten(load(minimal).config!)).toEqual(load(minimal).config);
  });
});

describe('cross-field rules', () => {
  it('rule 4: stateful transforms need thread_workers 1 and the global chain', () => {
    const yaml = minimal.replace('  sinks:', '  thread_workers: 2\n  transforms: [{ type: remember }]\n  sinks:') + '      transforms: [{ type: remember }]\n';
    const got = messages(yaml);
    expect(got).toEqual([
      `p.yaml:11:24 pipeline.transforms[0].type: 'remember' keeps state per record identity and needs thread_workers: 1 (got 2) [CFG_STATEFUL]`,
      `p.yaml:15:28 pipeline.sinks[0].transforms[0].type: 'remember' keeps state and cannot be a sink-level transform; move it to the pipeline transforms [CFG_STATEFUL]`,
    ]);
    expect(load(minimal.replace('  sinks:', '  transforms: [{ type: remember }]\n  sinks:')).config).toBeDefined();
  });

  it('schedules: interval needs interval_seconds, cron must parse, batch sources cannot stream', () => {
    expect(messages(minimal.replace('    interval_seconds: 60\n', ''))).toEqual([
      `p.yaml:5:5 pipeline.schedule: schedule type 'interval' needs interval_seconds [CFG_SCHEDULE]`,
    ]);
    expect(messages(minimal.replace('type: interval\n    interval_seconds: 60', "type: cron\n    cron: '61 * * * *'"))[0]).toMatch(
      /^p\.yaml:6:11 pipeline\.schedule\.cron: cron '61 \* \* \* \*' does not parse: .* \[CFG_SCHEDULE\]$/,
    );
    expect(messages(minimal.replace('type: interval\n    interval_seconds: 60', "type: cron\n    cron: '* * *'"))[0]).toContain('cron must have 5 fields');
    expect(load(minimal.replace('type: interval\n    interval_seconds: 60', "type: cron\n    cron: '*/5 * * * *'")).config).toBeDefined();
    expect(messages(minimal.replace('type: interval\n    interval_seconds: 60', 'type: stream'))).toEqual([
      `p.yaml:5:11 pipeline.schedule.type: source 'local' is a batch source; use schedule type interval, cron or manual [CFG_SCHEDULE]`,
    ]);
  });

  it("on_error 'dlq' needs a dlq sink", () => {
    expect(messages(minimal.replace('  sinks:', '  on_error: dlq\n  sinks:'))).toEqual([
      `p.yaml:10:13 pipeline.on_error: on_error 'dlq' needs a dlq sink: add pipeline.dlq (e.g. type: local) [CFG_INVALID]`,
    ]);
  });

  it('sink conditions must compile', () => {
    expect(messages(minimal + '      condition: "x >"\n')[0]).toMatch(
      /^p\.yaml:13:18 pipeline\.sinks\[0\]\.condition: invalid expression: .* \[CFG_EXPRESSION\]$/,
    );
  });

  it('warns that record_chunk_size applies to serial runs only', () => {
    const r = load(minimal.replace('  sinks:', '  thread_workers: 2\n  record_chunk_size: 100\n  sinks:'));
    expect(r.config).toBeDefined();
    expect(r.diagnostics).toMatchObject([{ severity: 'warning', code: 'CFG_INVALID', path: 'pipeline.record_chunk_size' }]);
  });
});
