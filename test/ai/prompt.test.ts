// The parts of AI assist that need no provider: the catalogue the model gets, fence stripping,
// the validation that decides on a repair round, secret masking, and the provider setting.
import { describe, expect, it } from 'vitest';
import { EXAMPLE_PIPELINE, generateSystemPrompt, namedIn, pluginCatalogue, typeExpr } from '../../src/ai/prompt.js';
import { pluginsUsed, secretMasker } from '../../src/ai/mask.js';
import { problemsOf, stripFences } from '../../src/ai/suggest.js';
import { registry } from '../../src/plugins/registry.js';
import { loadSettings, SettingsError } from '../../src/settings.js';

const opts = { statefulTransforms: true };

describe('plugin catalogue', () => {
  it('lists every registered plugin with its fields, marking required ones and defaults', () => {
    const c = pluginCatalogue();
    for (const [kind, plugins] of Object.entries(registry)) {
      for (const key of plugins.keys()) expect(c, `${kind} ${key}`).toMatch(new RegExp(`^${kind} ${key}[ :(]`, 'm'));
    }
    expect(c).toMatch(/^ {2}path\*: string — Directory to read, or a single file$/m); // local source: required, no default
    expect(c).toMatch(/^ {2}file_pattern: string = "\*" — Glob matched against the file name only, e\.g\. \*\.csv/m);
    expect(c).toMatch(/^ {2}security_protocol: "PLAINTEXT"\|"SASL_PLAINTEXT"\|"SASL_SSL"\|"SSL" = "PLAINTEXT"/m);
    expect(c).toMatch(/^ {2}sasl_password: string \(secret: write \$\{ENV_VAR\}\)/m);
  });

  it('describes only the plugins a request names, and stays compact', () => {
    const c = pluginCatalogue(undefined, { described: namedIn('read PM XML files over SFTP and publish them to Kafka') });
    expect(c).toMatch(/^ {2}topic\*: string — Topic to publish to$/m); // kafka sink: described
    expect(c).toMatch(/^ {2}host\*: string$/m); // e.g. the mqtt sink: fields only
    expect(namedIn('pm xml')(registry.serializer.get('pm_xml')!)).toBe(true);
    expect(namedIn('use snmp-poll')(registry.source.get('snmp_poll')!)).toBe(true);
    expect(namedIn('localhost')(registry.source.get('local')!)).toBe(false);
    // Bare fields for all: well under the ~15k tokens of the described catalogue.
    expect(generateSystemPrompt(c).length).toBeLessThan(45_000);
  });

  it('renders schemas as short type expressions', () => {
    expect(typeExpr({ type: 'array', items: { anyOf: [{ const: 'a' }, { const: 'b' }] } } as never)).toBe('("a"|"b")[]');
    expect(typeExpr({ type: 'object', required: ['k'], properties: { k: { type: 'integer' }, v: { type: 'string', default: 'x' } } } as never)).toBe(
      '{k*: int, v: string}',
    );
    expect(typeExpr({ type: 'object', additionalProperties: { type: 'string' } } as never)).toBe('map');
  });

  it('the example pipeline of the system prompt is valid', () => {
    expect(problemsOf(EXAMPLE_PIPELINE, opts)).toEqual([]);
  });
});

describe('stripFences', () => {
  it.each([
    ['```yaml\nversion: "1"\n```', 'version: "1"\n'],
    ['Here it is:\n\n```yml\nversion: "1"\npipeline: {}\n```\nEnjoy.', 'version: "1"\npipeline: {}\n'],
    ['```\nversion: "1"\n', 'version: "1"\n'],
    ['  version: "1"\n\n', 'version: "1"\n'],
  ])('%j', (input, out) => expect(stripFences(input)).toBe(out));
});

describe('problemsOf', () => {
  it('reports errors as registering would, but not unset ${VAR} references, and reads no environment', () => {
    const yaml = EXAMPLE_PIPELINE.replace('path: /data/kpi/out', 'path: ${OUT_DIR}');
    expect(problemsOf(yaml, opts)).toEqual([]);
    const typo = EXAMPLE_PIPELINE.replace('file_pattern:', 'file_patern:');
    expect(problemsOf(typo, opts).map((d) => d.code)).toEqual(['CFG_UNKNOWN_KEY']);
    process.env.SVC_AI_TEST_DIR = '/set/in/env';
    try {
      const withDefault = EXAMPLE_PIPELINE.replace('path: /data/kpi/out', 'path: ${SVC_AI_TEST_DIR}\n      nope: 1');
      expect(
        problemsOf(withDefault, opts)
          .map((d) => d.message)
          .join(' '),
      ).not.toContain('/set/in/env');
    } finally {
      delete process.env.SVC_AI_TEST_DIR;
    }
  });
});

describe('secret masking of YAML sent to a provider', () => {
  const yaml = [
    'version: "1"',
    'pipeline:',
    '  name: k',
    '  schedule: { type: stream }',
    '  source: { type: mqtt, host: broker, topic: "a/#", username: ops, password: "mqtt-s3cret" }',
    '  serializer_in: { type: json }',
    '  serializer_out: { type: json }',
    '  sinks:',
    '    - { type: kafka, brokers: ["k:9092"], topic: t, security_protocol: SASL_SSL, sasl_mechanism: PLAIN, sasl_username: u, sasl_password: "${KAFKA_PASS}" }',
    '    - { type: rest, url: "https://bob:url-pa55@api.example/x", token: tok-123456 }',
    '',
  ].join('\n');

  it('masks writeOnly fields, secret-named fields and URL credentials, keeps ${VAR} references', () => {
    const masked = secretMasker(yaml)(yaml);
    for (const s of ['mqtt-s3cret', 'url-pa55', 'tok-123456']) expect(masked).not.toContain(s);
    expect(masked).toContain('${KAFKA_PASS}');
    expect(masked).toContain('password: "***"');
    expect(masked).toContain('https://bob:***@api.example/x');
  });

  it('knows which plugins a pipeline uses', () => {
    const used = pluginsUsed(yaml);
    expect([...used.source]).toEqual(['mqtt']);
    expect([...used.sink].sort()).toEqual(['kafka', 'rest']);
    expect([...used.serializer]).toEqual(['json']);
    expect(pluginsUsed('not: [yaml').source.size).toBe(0);
  });
});

describe('SVC_AI_PROVIDER', () => {
  it.each([
    [undefined, 'openai'],
    ['A', 'openai'],
    ['b', 'anthropic'],
    ['C', 'gemini'],
    ['OpenAI', 'openai'],
    [' Anthropic ', 'anthropic'],
    ['GEMINI', 'gemini'],
  ])('%j is %s', (raw, provider) => {
    expect(loadSettings(raw === undefined ? {} : { SVC_AI_PROVIDER: raw }).AI_PROVIDER).toBe(provider);
  });

  it('an unknown provider stops the start with a one-line error', () => {
    expect(() => loadSettings({ SVC_AI_PROVIDER: 'D' })).toThrow(SettingsError);
    expect(() => loadSettings({ SVC_AI_PROVIDER: 'mistral' })).toThrow('SVC_AI_PROVIDER="mistral": must be one of openai, anthropic, gemini');
  });

  it('SVC_AI_TIMEOUT_SECONDS defaults to 60 and is bounded', () => {
    expect(loadSettings({}).AI_TIMEOUT_SECONDS).toBe(60);
    expect(() => loadSettings({ SVC_AI_TIMEOUT_SECONDS: '0' })).toThrow('SVC_AI_TIMEOUT_SECONDS=0: must be between 1 and 600');
  });
});
