// GET /api/ai/status and POST /api/ai/suggest on a real daemon, against a local test server per
// vendor that speaks that vendor's API and checks what it checks (test/ai/peers/).
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { expectError } from '../api/_helpers.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { EXAMPLE_PIPELINE } from '../../src/ai/prompt.js';
import { startAnthropicPeer } from './peers/anthropic.js';
import { startGeminiPeer } from './peers/gemini.js';
import { startOpenAiPeer } from './peers/openai.js';
import type { AiPeer, AiRequest } from './peers/vendor.js';

const KEY = 'sk-test-9f8e7d6c5b4a39281706';

const peers: AiPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

type Vendor = 'openai' | 'anthropic' | 'gemini';
const START: Record<Vendor, (key: string) => Promise<AiPeer>> = { openai: startOpenAiPeer, anthropic: startAnthropicPeer, gemini: startGeminiPeer };
/** SVC_AI_PROVIDER as the spec names them: A, B, C. */
const LETTER: Record<Vendor, string> = { openai: 'A', anthropic: 'B', gemini: 'C' };
const DEFAULT_MODEL: Record<Vendor, string> = { openai: 'gpt-4.1-mini', anthropic: 'claude-sonnet-4-5', gemini: 'gemini-2.5-flash' };

async function peer(vendor: Vendor, key = KEY): Promise<AiPeer> {
  const p = await START[vendor](key);
  peers.push(p);
  return p;
}

function captureLog() {
  const lines: string[] = [];
  return { log: pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) }), lines };
}

async function daemonFor(vendor: Vendor, p: AiPeer, env: Record<string, string> = {}, log = captureLog()): Promise<TestDaemon> {
  return testDaemon({ SVC_AI_PROVIDER: LETTER[vendor], SVC_AI_API_KEY: KEY, SVC_AI_BASE_URL: p.baseUrl, ...env }, { log: log.log });
}

/** The system prompt and the turns of a logged request, whatever the vendor's shape. */
function conversation(vendor: Vendor, r: AiRequest): { system: string; turns: { role: string; text: string }[]; model: string } {
  const b = r.body;
  if (vendor === 'openai') {
    const [sys, ...rest] = b.messages as { role: string; content: string }[];
    expect(sys!.role).toBe('system');
    return { system: sys!.content, turns: rest.map((m) => ({ role: m.role, text: m.content })), model: b.model };
  }
  if (vendor === 'anthropic') return { system: b.system, turns: b.messages.map((m: any) => ({ role: m.role, text: m.content })), model: b.model };
  return {
    system: b.systemInstruction.parts.map((p: any) => p.text).join(''),
    turns: b.contents.map((c: any) => ({ role: c.role === 'model' ? 'assistant' : c.role, text: c.parts.map((p: any) => p.text).join('') })),
    model: decodeURIComponent(/models\/([^/:]+):/.exec(r.path)![1]!),
  };
}

const VALID = EXAMPLE_PIPELINE.replace('kpi-csv-to-ndjson', 'from-the-model');
const INVALID = VALID.replace('file_pattern:', 'file_patern:');
const suggest = (d: TestDaemon, body: unknown) => d.call('POST', '/api/ai/suggest', { body });

describe('AI assist off (no SVC_AI_API_KEY)', () => {
  it('status says unavailable and suggest answers 503 with a detail', async () => {
    const d = await testDaemon();
    const s = await d.call('GET', '/api/ai/status');
    expect(s.status).toBe(200);
    expect(s.body).toEqual({ available: false });
    expect(expectError(await suggest(d, { mode: 'generate', prompt: 'csv to ndjson' }), 503)).toMatch(/SVC_AI_API_KEY/);
  });

  it('validates the body before anything else: 422 like the other routes', async () => {
    const d = await testDaemon();
    expect(expectError(await suggest(d, { mode: 'poem', prompt: 'x' }), 422)).toMatch(/mode/);
    expectError(await suggest(d, { prompt: 'x' }), 422);
    expectError(await suggest(d, { mode: 'generate', prompt: 'x', temperature: 2 }), 422);
    expectError(await suggest(d, { mode: 'generate', prompt: 'x'.repeat(20_001) }), 422);
    expectError(await d.call('POST', '/api/ai/suggest', { yaml: 'mode: generate' }), 422);
    expect(expectError(await suggest(d, { mode: 'explain', prompt: 'what does it do?' }), 422)).toMatch(/yaml is required for mode explain/);
    expect(expectError(await suggest(d, { mode: 'explain', yaml: '  ' }), 422)).toMatch(/yaml is required/);
    expect(expectError(await suggest(d, { mode: 'generate', prompt: ' ' }), 422)).toMatch(/prompt is required for mode generate/);
  });

  it('is behind SVC_API_KEY like the rest of /api', async () => {
    const d = await testDaemon({ SVC_API_KEY: 'api-k3y' });
    expectError(await d.call('GET', '/api/ai/status'), 401);
    expectError(await suggest(d, { mode: 'generate', prompt: 'x' }), 401);
    expect((await d.call('GET', '/api/ai/status', { headers: { 'x-api-key': 'api-k3y' } })).body).toEqual({ available: false });
  });

  it('both routes are in the OpenAPI document', async () => {
    const d = await testDaemon();
    const paths = (await d.call('GET', '/openapi.json')).body.paths;
    expect(paths['/api/ai/status'].get.summary).toMatch(/AI assist/);
    expect(Object.keys(paths['/api/ai/suggest'].post.requestBody.content['application/json'].schema.properties).sort()).toEqual(['mode', 'prompt', 'yaml']);
  });
});

describe.each(['openai', 'anthropic', 'gemini'] as const)('AI assist with %s', (vendor) => {
  it('status names the provider and its default model', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p);
    expect((await d.call('GET', '/api/ai/status')).body).toEqual({ available: true, provider: vendor, model: DEFAULT_MODEL[vendor] });
  });

  it("generate returns the model's YAML, without fences, once it validates; the request carries the plugin catalogue", async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p);
    p.answer('Here is the pipeline:\n\n```yaml\n' + VALID + '```\n');
    const r = await suggest(d, { mode: 'generate', prompt: 'CSV KPI files to NDJSON every five minutes' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ result: VALID });
    expect((await d.call('POST', '/api/pipelines/dry-run', { yaml: r.body.result })).body).toEqual({ valid: true, issues: [] });

    expect(p.requests).toHaveLength(1);
    const c = conversation(vendor, p.requests[0]!);
    expect(c.model).toBe(DEFAULT_MODEL[vendor]);
    expect(c.turns).toEqual([{ role: 'user', text: 'CSV KPI files to NDJSON every five minutes' }]);
    expect(c.system).toMatch(/^source local \(batch/m);
    expect(c.system).toMatch(/^sink kafka: /m);
    expect(c.system).toMatch(/^serializer csv \(/m);
    expect(c.system).toContain('Answer with the complete pipeline YAML only');
  });

  it('an invalid answer goes back once with the diagnostics; the second, valid one is returned', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p);
    p.answer(INVALID, '```yaml\n' + VALID + '```');
    const r = await suggest(d, { mode: 'generate', prompt: 'CSV KPI files to NDJSON' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toBe(VALID);
    expect(p.requests).toHaveLength(2);
    const second = conversation(vendor, p.requests[1]!);
    expect(second.turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(second.turns[1]!.text).toBe(INVALID);
    expect(second.turns[2]!.text).toMatch(/pipeline\.source\.file_patern: .*\(line 6\) \[CFG_UNKNOWN_KEY\]/);
  });

  it('a pipeline still invalid after the repair round is a 422 with the diagnostics and the YAML', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p);
    p.answer(INVALID, INVALID.replace('type: filter', 'type: filtre'));
    const detail = expectError(await suggest(d, { mode: 'generate', prompt: 'CSV KPI files to NDJSON' }), 422);
    expect(detail).toMatch(/still invalid after one repair round: .*CFG_UNKNOWN_PLUGIN/);
    expect(detail).toContain('type: filtre');
    expect(p.requests).toHaveLength(2);
  });

  it('explain returns prose; the YAML is sent with its secrets masked and only its plugins described', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p);
    const yaml = VALID.replace(
      'serializer_out: { type: ndjson }',
      'serializer_out: { type: ndjson }\n  dlq: { type: rest, url: "https://ops:dlq-pa55word@dlq.example/in", token: "tok-abcdef" }',
    );
    p.answer('  This pipeline reads CSV files every five minutes and writes NDJSON.\n');
    const r = await suggest(d, { mode: 'explain', prompt: '', yaml });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ result: 'This pipeline reads CSV files every five minutes and writes NDJSON.' });
    const c = conversation(vendor, p.requests[0]!);
    expect(c.turns).toHaveLength(1);
    expect(c.turns[0]!.text).toContain('Explain what this pipeline does.');
    expect(c.turns[0]!.text).toContain('https://ops:***@dlq.example/in');
    expect(c.turns[0]!.text).toContain('token: "***"');
    expect(JSON.stringify(p.requests[0]!.body)).not.toMatch(/dlq-pa55word|tok-abcdef/);
    expect(c.system).toMatch(/^source local /m);
    expect(c.system).toMatch(/^sink rest: /m);
    expect(c.system).not.toMatch(/^sink kafka: /m);
  });

  it("a wrong key is a 502 with the vendor's message; the key is in no answer and no log line", async () => {
    const p =
      vendor === 'openai'
        ? await startOpenAiPeer('sk-the-right-one-000', { echoKey: true }).then((x) => (peers.push(x), x))
        : await peer(vendor, 'the-right-one-000');
    const log = captureLog();
    const d = await daemonFor(vendor, p, {}, log);
    const detail = expectError(await suggest(d, { mode: 'generate', prompt: 'anything' }), 502);
    const expected = {
      openai: /^openai answered 401: invalid_api_key: Incorrect API key provided: \*\*\*\./,
      anthropic: /^anthropic answered 401: authentication_error: invalid x-api-key$/,
      gemini: /^gemini answered 400: INVALID_ARGUMENT: API key not valid/,
    };
    expect(detail).toMatch(expected[vendor]);
    expect(p.requests).toHaveLength(1);
    // The server saw the key (it was sent the vendor's way)...
    const sent =
      vendor === 'openai'
        ? p.requests[0]!.headers.authorization
        : vendor === 'anthropic'
          ? p.requests[0]!.headers['x-api-key']
          : p.requests[0]!.headers['x-goog-api-key'];
    expect(sent).toBe(vendor === 'openai' ? `Bearer ${KEY}` : KEY);
    // ...and nothing of ours repeats it.
    expect(detail).not.toContain(KEY);
    const failed = log.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'AI suggestion failed');
    expect(failed).toMatchObject({ level: 40, status: 502, provider: vendor, mode: 'generate' });
    expect(log.lines.join('\n')).not.toContain(KEY);
  });

  it('a provider that does not answer within SVC_AI_TIMEOUT_SECONDS is a 502', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p, { SVC_AI_TIMEOUT_SECONDS: '1' });
    p.script({ hang: true });
    const started = Date.now();
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toBe(`${vendor} did not answer within 1 s (SVC_AI_TIMEOUT_SECONDS)`);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('SVC_AI_MODEL replaces the default model', async () => {
    const p = await peer(vendor);
    const d = await daemonFor(vendor, p, { SVC_AI_MODEL: 'my-local-model' });
    expect((await d.call('GET', '/api/ai/status')).body).toEqual({ available: true, provider: vendor, model: 'my-local-model' });
    p.answer('Fine.');
    expect((await suggest(d, { mode: 'explain', yaml: VALID })).body).toEqual({ result: 'Fine.' });
    expect(conversation(vendor, p.requests[0]!).model).toBe('my-local-model');
  });
});

describe('generate with a pipeline to change', () => {
  it('sends the current pipeline with its secrets masked, and describes the plugins it uses', async () => {
    const p = await peer('openai');
    const d = await daemonFor('openai', p);
    const current = VALID.replace(
      '  serializer_out: { type: ndjson }',
      '  serializer_out: { type: ndjson }\n  dlq: { type: rest, url: "https://x.example/dlq", token: "tok-0987654" }',
    );
    p.answer(VALID);
    const r = await suggest(d, { mode: 'generate', prompt: 'drop the dead-letter sink', yaml: current });
    expect(r.body).toEqual({ result: VALID });
    const c = conversation('openai', p.requests[0]!);
    expect(c.turns[0]!.text).toMatch(/^Change this pipeline as asked\.\n\nRequest: drop the dead-letter sink\n\nCurrent pipeline:\nversion: "1"/);
    expect(c.turns[0]!.text).toContain('token: "***"');
    expect(JSON.stringify(p.requests[0]!.body)).not.toContain('tok-0987654');
    expect(c.system).toMatch(/^ {2}url\*: string — /m); // rest is used: described
  });
});

describe('provider failures', () => {
  it('a server error of the provider is a 502 carrying its message', async () => {
    const p = await peer('anthropic');
    const d = await daemonFor('anthropic', p);
    p.script({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toBe('anthropic answered 529: overloaded_error: Overloaded');
  });

  it('an error body of Ollama\'s older shape ({error: "text"}) is a 502 carrying that text', async () => {
    const p = await peer('openai');
    const d = await daemonFor('openai', p);
    p.script({ status: 404, body: { error: 'model "llama9" not found, try pulling it first' } });
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toBe('openai answered 404: model "llama9" not found, try pulling it first');
  });

  it("an unknown model is a 502 with the vendor's message", async () => {
    const p = await startOpenAiPeer(KEY, { models: ['llama3.1'] });
    peers.push(p);
    const d = await daemonFor('openai', p, { SVC_AI_MODEL: 'gpt-nope' });
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toMatch(
      /^openai answered 404: model_not_found: The model `gpt-nope` does not exist/,
    );
  });

  it('an unreachable SVC_AI_BASE_URL is a 502 naming it', async () => {
    const p = await peer('openai');
    const url = new URL(p.baseUrl);
    await p.close();
    const d = await testDaemon({ SVC_AI_API_KEY: KEY, SVC_AI_BASE_URL: `http://127.0.0.1:${url.port}/v1` });
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toBe(`openai is unreachable at http://127.0.0.1:${url.port}: ECONNREFUSED`);
  });

  it('credentials in SVC_AI_BASE_URL (which fetch refuses) are masked in the 502', async () => {
    const p = await peer('openai');
    const d = await testDaemon({ SVC_AI_API_KEY: KEY, SVC_AI_BASE_URL: p.baseUrl.replace('http://', 'http://user:url-secret@') });
    const detail = expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502);
    expect(detail).toMatch(/^openai is unreachable at .*http:\/\/user:\*\*\*@127\.0\.0\.1/);
    expect(detail).not.toContain('url-secret');
    expect(p.requests).toHaveLength(0);
  });

  it('an answer without text is a 502', async () => {
    const p = await peer('gemini');
    const d = await daemonFor('gemini', p);
    p.script({ status: 200, body: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 10, totalTokenCount: 10 } } });
    expect(expectError(await suggest(d, { mode: 'explain', yaml: VALID }), 502)).toBe('gemini answered without text (blocked: SAFETY)');
  });
});
