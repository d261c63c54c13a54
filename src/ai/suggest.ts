// The two modes of POST /api/ai/suggest. `generate` asks for pipeline YAML and validates the answer
// as `svc validate` does; an invalid answer goes back to the model once with the diagnostics, and
// a second invalid one is a 422 naming the problems (with the YAML, to fix by hand). `explain`
// asks for prose about a given pipeline.
import { loadPipelineText, type Registry } from '../config/load.js';
import { formatDiagnostic, type Diagnostic } from '../config/diagnostics.js';
import { pluginsUsed, secretMasker } from './mask.js';
import { explainSystemPrompt, explainUserPrompt, generateSystemPrompt, generateUserPrompt, namedIn, pluginCatalogue, repairPrompt } from './prompt.js';
import { httpError } from '../core/http-errors.js';
import type { ChatMessage, Provider } from './provider.js';

export interface SuggestOptions {
  /** SVC_STATEFUL_TRANSFORMS of this daemon, so the YAML is judged as registering it would be. */
  statefulTransforms: boolean;
  /** The daemon's SVC_CONFIG_ENV_ALLOW: a reference it refuses is a problem to repair, as registering would say. */
  envAllow?: readonly string[];
  registry?: Registry;
}

export interface Suggestion {
  result: string;
  /** Model calls made: 1, or 2 after a repair round. */
  calls: number;
}

/** Diagnostics listed in a 422 (the rest are counted). */
const MAX_LISTED = 20;

/**
 * Removes Markdown code fences and any text around the first fenced block: models add them
 * although told not to. Text without fences is returned trimmed.
 */
export function stripFences(text: string): string {
  const m = text.match(/```[^\n`]*\n([\s\S]*?)(?:\n```|$)/);
  return (m ? m[1]! : text).trim() + '\n';
}

/**
 * Errors of `yaml` as registering it would report them, except unset ${VAR} references: the model is
 * told to write secrets as references, and whether they are set here says nothing about the YAML.
 * Checked with an empty environment, so no value of this daemon's environment reaches the model.
 */
export function problemsOf(yaml: string, opts: SuggestOptions): Diagnostic[] {
  const r = loadPipelineText(yaml, {
    env: {},
    statefulTransforms: opts.statefulTransforms,
    envAllow: opts.envAllow,
    ...(opts.registry ? { registry: opts.registry } : {}),
  });
  return r.diagnostics.filter((d) => d.severity === 'error' && d.code !== 'CFG_ENV_UNSET');
}

export async function generate(provider: Provider, prompt: string, yaml: string | undefined, opts: SuggestOptions): Promise<Suggestion> {
  const current = yaml?.trim() ? yaml : undefined;
  const mask = secretMasker(current ?? '', opts.registry);
  const catalogue = pluginCatalogue(opts.registry, { described: namedIn(`${prompt}\n${current ?? ''}`) });
  const system = generateSystemPrompt(catalogue);
  const messages: ChatMessage[] = [{ role: 'user', content: mask(generateUserPrompt(prompt, current)) }];

  const first = await provider.complete({ system, messages });
  let result = stripFences(first);
  let problems = problemsOf(result, opts);
  if (!problems.length) return { result, calls: 1 };

  // One repair round: the model sees its answer and what validation said about it.
  messages.push({ role: 'assistant', content: first }, { role: 'user', content: repairPrompt(problems) });
  result = stripFences(await provider.complete({ system, messages }));
  problems = problemsOf(result, opts);
  if (!problems.length) return { result, calls: 2 };

  const listed = problems.slice(0, MAX_LISTED).map((d) => formatDiagnostic(d));
  const more = problems.length > MAX_LISTED ? `; and ${problems.length - MAX_LISTED} more` : '';
  throw httpError(
    'HTTP_AI_NO_PIPELINE',
    `the model's pipeline is still invalid after one repair round: ${listed.join('; ')}${more}. ` +
      `Rephrase the request (name the source, the formats and the sink), or fix this YAML by hand:\n${result}`,
  );
}

export async function explain(provider: Provider, prompt: string, yaml: string, opts: SuggestOptions): Promise<Suggestion> {
  const catalogue = pluginCatalogue(opts.registry, { only: pluginsUsed(yaml) });
  // The whole message is masked: diagnostics may quote values of the YAML.
  const content = secretMasker(yaml, opts.registry)(explainUserPrompt(prompt, yaml, problemsOf(yaml, opts)));
  const text = await provider.complete({ system: explainSystemPrompt(catalogue), messages: [{ role: 'user', content }] });
  return { result: text.trim(), calls: 1 };
}
