// The connector reachability checks of `POST /api/connectors/test` and `/test-pipeline`: each
// source or sink's own test() (connect, authenticate, one cheap operation), bounded in time, timed,
// and with every secret of its config removed from the error.
import { Value } from '@sinclair/typebox/value';
import type { Registry } from '../config/load.js';
import { expansionOf } from '../config/interpolate.js';
import type { ComponentConfig, PipelineConfig } from '../config/pipeline-schema.js';
import { errorMessage } from '../core/errors.js';
import { silentLogger, type Logger } from '../observability/log.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { redactor, secretsOf } from '../core/secrets.js';
import type { SinkPlugin, SourcePlugin } from '../plugins/types.js';

export interface ConnectorTestResult {
  ok: boolean;
  latency_ms: number | null;
  error: string | null;
}

export interface ConnectorTestOptions {
  registry?: Registry;
  log?: Logger;
  /** The whole check, connect included (default 10 s). */
  timeoutMs?: number;
  /** Values to mask besides the config's own secrets (a pipeline's secret-named `${VAR}`s). */
  secrets?: readonly string[];
}

export const DEFAULT_TEST_TIMEOUT_MS = 10_000;

/** Checks one validated source or sink config; never throws. */
export async function testConnector(kind: 'source' | 'sink', config: ComponentConfig, opts: ConnectorTestOptions = {}): Promise<ConnectorTestResult> {
  const plugin = (opts.registry ?? defaultRegistry)[kind].get(config.type) as SourcePlugin | SinkPlugin | undefined;
  if (!plugin) return { ok: false, latency_ms: null, error: `unknown ${kind} type '${config.type}'` };
  const expanded = opts.secrets ?? expansionOf(config)?.secrets ?? [];
  // Defaults filled in here too, for callers that did not validate through loadComponent.
  config = Value.Default(plugin.config, Value.Clone(config)) as ComponentConfig;
  const redact = redactor([...secretsOf(plugin.config, config), ...expanded]);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS;
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  try {
    await Promise.race([
      plugin.test(config as never, { log: opts.log ?? silentLogger, signal: ac.signal }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]);
    return { ok: true, latency_ms: Math.round(performance.now() - started), error: null };
  } catch (e) {
    return { ok: false, latency_ms: null, error: redact(`${config.type}: ${errorMessage(e).replace(new RegExp(`^${config.type}: `), '')}`) };
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
}

/** Checks a pipeline's source and every sink, concurrently. */
export async function testPipelineConnectors(config: PipelineConfig, opts: ConnectorTestOptions = {}) {
  opts = { ...opts, secrets: expansionOf(config)?.secrets };
  const [source, ...sinks] = await Promise.all([
    testConnector('source', config.source, opts).then((r) => ({ type: config.source.type, ...r })),
    ...config.sinks.map((s) => testConnector('sink', s, opts).then((r) => ({ type: s.type, ...r }))),
  ]);
  return { source: source!, sinks };
}
