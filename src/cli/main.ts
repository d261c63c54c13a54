#!/usr/bin/env node
// The `svc` command. Each subcommand is a small function; output meant for programs goes to stdout
// (JSON), everything meant for people (progress, diagnostics) to stderr.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadPipelineText } from '../config/load.js';
import { formatDiagnostic } from '../config/diagnostics.js';
import { runPipeline } from '../engine/runner.js';
import { FileProcessedFiles, processedFilesPath } from '../engine/processed-files.js';
import { startConsole } from '../console/server.js';
import { fileStateIO, stateConfigHash, stateFilePath, statefulTransforms } from '../engine/transform-state.js';
import { createLogger } from '../observability/log.js';
import { pluginKeys, registry } from '../plugins/registry.js';
import { progressReporter } from './progress.js';
import { version } from '../version.js';
import { loadSettings, type Settings } from '../settings.js';
import { startDaemon } from '../daemon/daemon.js';
import { startWorker } from '../cluster/worker.js';
import { pipelinesCommand, PROXY_HELP, ProxyError, runsCommand } from './proxy.js';
import { dlqCommand } from './dlq.js';
import { findTestFiles, runTestFile, summarize, type FileResult } from '../testing/run.js';
import { formatFile, formatSummary, jsonReport } from '../testing/report.js';

const HELP = `svc: telecom data pipelines

Usage:
  svc serve            start the daemon (REST API on SVC_HOST:SVC_PORT, scheduler, embedded database)
                       and the operator console (SVC_CONSOLE_PORT, default 8770)
  svc console          start the operator console alone (SNMP simulator, walker, traps, MIB catalog)
  svc run FILE         run a pipeline once (one batch run) and print its run record as JSON
  svc validate FILE    check a pipeline file; lists every problem with its YAML path and line
  svc test PATH...     run pipeline unit tests: FILE.test.yaml, the one beside FILE.yaml, or every
                       *.test.yaml under a folder; --json for programs; exit 1 when a case fails
  svc plugins [--json] list the registered sources, sinks, serializers and transforms
  svc pipelines ...    manage pipelines of a running daemon (svc pipelines --help)
  svc runs ...         run history of a running daemon
  svc dlq list|replay PIPELINE   dead letters of a pipeline of a running daemon (svc dlq --help)
  svc --help           this text
  svc --version        the version

Exit codes: 0 success; 1 invalid config or failed run; 2 aborted run (on_error: abort); 64 usage error.
Environment: SVC_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR), SVC_STATE_DIR (processed-file memory, transform state).
Docs: docs/ in the package (configuration.md, plugins/, expressions.md, errors.md).`;


function usage(message: string): never {
  process.stderr.write(`svc: ${message}\nRun 'svc --help' for usage.\n`);
  process.exit(64);
}

function readConfig(file: string | undefined) {
  if (!file) usage('missing pipeline FILE');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    process.stderr.write(`svc: cannot read ${file}: ${(e as Error).message}\n`);
    process.exit(1);
  }
  const r = loadPipelineText(text, { file });
  for (const d of r.diagnostics) process.stderr.write(formatDiagnostic(d, file) + '\n');
  return r;
}

async function cmdValidate(file: string | undefined) {
  const r = readConfig(file);
  if (!r.config) {
    const n = r.diagnostics.filter((d) => d.severity === 'error').length;
    process.stderr.write(`${file}: ${n} error${n === 1 ? '' : 's'}\n`);
    return 1;
  }
  process.stdout.write(`${file}: valid (pipeline '${r.config.name}')\n`);
  return 0;
}

async function cmdRun(file: string | undefined) {
  const r = readConfig(file);
  if (!r.config) return 1;
  const config = r.config;
  const ac = new AbortController();
  // First Ctrl-C stops gracefully (what is in flight is delivered); a second one exits at once.
  process.once('SIGINT', () => {
    process.stderr.write('\nsvc: stopping (Ctrl-C again to quit now)\n');
    ac.abort();
    process.once('SIGINT', () => process.exit(130));
  });
  const progress = progressReporter(process.stderr);
  const log = createLogger();
  const record = await runPipeline(config, {
    log,
    signal: ac.signal,
    processed: new FileProcessedFiles(processedFilesPath(config.name)),
    state: statefulTransforms(config).length ? fileStateIO(stateFilePath(config.name), stateConfigHash(config), log) : undefined,
    onProgress: progress.update,
  });
  progress.done();
  process.stdout.write(JSON.stringify(record, null, 2) + '\n');
  return record.status === 'success' ? 0 : record.status === 'aborted' ? 2 : 1;
}

/** `svc test`: every case of every test file; 0 when all pass, 1 when one fails or a file is invalid. */
async function cmdTest(paths: string[], json: boolean) {
  if (!paths.length) usage('missing test FILE or DIR');
  const results: FileResult[] = [];
  for (const p of paths) {
    const found = findTestFiles(p);
    const runs: FileResult[] = 'error' in found ? [{ file: p, invalid: [found.error], warnings: [], cases: [] }] : [];
    for (const f of 'files' in found ? found.files : []) runs.push(await runTestFile(f));
    for (const r of runs) if (!json) process.stderr.write(formatFile(r));
    results.push(...runs);
  }
  if (json) process.stdout.write(jsonReport(results));
  else process.stderr.write(formatSummary(results));
  return summarize(results).ok ? 0 : 1;
}

/** The settings, or undefined after printing what is wrong with them. */
function settingsOrReport(): Settings | undefined {
  try {
    return loadSettings();
  } catch (e) {
    process.stderr.write(`svc: ${(e as Error).message}\n`);
    return undefined;
  }
}

async function cmdServe(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  if (settings.MODE === 'worker') return serveWorker(settings);
  let daemon;
  let consoleServer;
  try {
    daemon = await startDaemon({ settings });
    // Standalone mode serves the operator console beside the API (SVC_CONSOLE_PORT).
    consoleServer = await startConsole(settings, daemon.log, { mibs: daemon.mibs }).catch(async (e: unknown) => {
      await daemon!.stop();
      throw new Error(`operator console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}`);
    });
  } catch (e) {
    // Start-up problems (port in use, unreadable certificate, database unreachable) in one line.
    process.stderr.write(`svc: cannot start: ${(e as Error).message}\n`);
    return 1;
  }
  // SIGTERM / SIGINT drain like POST /api/daemon/stop; a second signal exits at once.
  const onSignal = (sig: string) => {
    daemon.log.info({ signal: sig }, 'signal received');
    void daemon.stop();
    process.once(sig, () => process.exit(130));
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await daemon.stopped;
  await consoleServer.stop();
  return 0;
}

/** `svc serve` with SVC_MODE=worker: the agent and the ingress; either dying ends the process. */
async function serveWorker(settings: Settings): Promise<number> {
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let worker;
  try {
    worker = await startWorker({
      settings,
      log,
      onFatal: (why) => {
        // The orchestrator restarts the process; what was not sent waits in the outbox on the volume.
        log.error({ err: why }, 'worker part died; exiting so that the process is restarted');
        process.exit(1);
      },
    });
  } catch (e) {
    process.stderr.write(`svc: cannot start the worker: ${(e as Error).message}\n`);
    return 1;
  }
  const onSignal = (sig: string) => {
    log.info({ signal: sig }, 'signal received');
    void worker.stop();
    process.once(sig, () => process.exit(130));
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await worker.stopped;
  return 0;
}

/** `svc console`: the operator console alone (no pipelines). */
async function cmdConsole(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let con;
  try {
    con = await startConsole(settings, log);
  } catch (e) {
    process.stderr.write(`svc: cannot start the console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}\n`);
    return 1;
  }
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
  });
  await con.stop();
  return 0;
}

async function cmdProxy(cmd: 'pipelines' | 'runs', args: string[], values: { json?: boolean; pipeline?: string; status?: string; limit?: string }) {
  const ctx = {
    url: process.env.SVC_API_URL || 'http://localhost:8765',
    apiKey: process.env.SVC_API_KEY || undefined,
    json: !!values.json,
    out: (s: string) => void process.stdout.write(s),
  };
  try {
    if (cmd === 'pipelines') await pipelinesCommand(args, ctx);
    else await runsCommand(args, values, ctx);
    return 0;
  } catch (e) {
    if (!(e instanceof ProxyError)) throw e;
    process.stderr.write(`svc: ${e.message}\n`);
    return 1;
  }
}

async function cmdDlq(args: string[]) {
  const ctx = { url: process.env.SVC_API_URL || 'http://localhost:8765', apiKey: process.env.SVC_API_KEY || undefined, out: (s: string) => void process.stdout.write(s) };
  return dlqCommand(args, ctx).catch((e: unknown) => {
    if (!(e instanceof ProxyError)) throw e;
    process.stderr.write(`svc: ${e.message}\n`);
    return 1;
  });
}

function cmdPlugins(json: boolean) {
  if (json) {
    process.stdout.write(JSON.stringify(pluginKeys(), null, 2) + '\n');
    return 0;
  }
  for (const [kind, plugins] of Object.entries(registry)) {
    process.stdout.write(`${kind}s:\n`);
    for (const p of plugins.values()) process.stdout.write(`  ${p.key.padEnd(16)} ${p.summary}\n`);
  }
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'dlq') return cmdDlq(argv.slice(1)); // options of its own (src/cli/dlq.ts)
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        json: { type: 'boolean' },
        pipeline: { type: 'string' },
        status: { type: 'string' },
        limit: { type: 'string' },
      },
    });
  } catch (e) {
    usage((e as Error).message);
  }
  const { values, positionals } = parsed;
  const [cmd, ...rest] = positionals;
  if (values.version) {
    process.stdout.write(version + '\n');
    return 0;
  }
  if (values.help && (cmd === 'pipelines' || cmd === 'runs')) {
    process.stdout.write(PROXY_HELP + '\n');
    return 0;
  }
  if (values.help || !cmd) {
    process.stdout.write(HELP + '\n');
    return values.help ? 0 : 64;
  }
  switch (cmd) {
    case 'serve':
      return cmdServe();
    case 'console':
      return cmdConsole();
    case 'run':
      return cmdRun(rest[0]);
    case 'validate':
      return cmdValidate(rest[0]);
    case 'test':
      return cmdTest(rest, !!values.json);
    case 'plugins':
      return cmdPlugins(!!values.json);
    case 'pipelines':
    case 'runs':
      return cmdProxy(cmd, rest, values);
    case 'help':
      process.stdout.write(HELP + '\n');
      return 0;
    default:
      usage(`unknown command '${cmd}'`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`svc: ${(e as Error).stack ?? e}\n`);
    process.exitCode = 1;
  },
);
