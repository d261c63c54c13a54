#!/usr/bin/env node
// The `svc` command. Each subcommand is a small function in a module of its own, imported when the
// command runs: --version and --help load this file and version.ts alone, `validate` no daemon
// (test/cli/lazy-commands.test.ts). Output meant for programs goes to stdout (JSON), everything
// meant for people (progress, diagnostics) to stderr.
import { parseArgs } from 'node:util';
import { version } from '../version.js';
import { usage } from './usage.js';

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
  svc top              every pipeline of a running daemon with its rates, errors and stages, refreshed
                       each second; --json, --once, --interval S (svc top --help)
  svc tap NAME         the live records at a stage of a pipeline of a running daemon: --stage S,
                       --limit N, --rate R, --filter EXPR, --json (svc tap --help)
  svc --help           this text
  svc --version        the version

Exit codes: 0 success; 1 invalid config or failed run; 2 aborted run (on_error: abort); 64 usage error.
Environment: SVC_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR), SVC_STATE_DIR (processed-file memory, transform state).
Docs: docs/ in the package (configuration.md, plugins/, expressions.md, errors.md).`;

export async function main(argv: string[]): Promise<number> {
  // Commands with options of their own, parsed in their modules.
  if (argv[0] === 'dlq') return (await import('./proxy-commands.js')).cmdDlq(argv.slice(1));
  if (argv[0] === 'top') return (await import('./proxy-commands.js')).cmdTop(argv.slice(1));
  if (argv[0] === 'tap') return (await import('./proxy-commands.js')).cmdTap(argv.slice(1));
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
    process.stdout.write((await import('./proxy.js')).PROXY_HELP + '\n');
    return 0;
  }
  if (values.help || !cmd) {
    process.stdout.write(HELP + '\n');
    return values.help ? 0 : 64;
  }
  switch (cmd) {
    case 'serve':
      return (await import('./serve.js')).cmdServe();
    case 'console':
      return (await import('./console.js')).cmdConsole();
    case 'run':
      return (await import('./run.js')).cmdRun(rest[0]);
    case 'validate':
      return (await import('./validate.js')).cmdValidate(rest[0]);
    case 'test':
      return (await import('./test-command.js')).cmdTest(rest, !!values.json);
    case 'plugins':
      return (await import('./plugins.js')).cmdPlugins(!!values.json);
    case 'pipelines':
    case 'runs':
      return (await import('./proxy-commands.js')).cmdProxy(cmd, rest, values);
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
    // A bad SVC_* value (svc validate reads SVC_CONFIG_ENV_ALLOW) is the user's to fix: its one line, no stack.
    process.stderr.write(`svc: ${(e as Error)?.name === 'SettingsError' ? (e as Error).message : ((e as Error).stack ?? e)}\n`);
    process.exitCode = 1;
  },
);
