// Every SVC_* variable of spec doc 2, typed and validated once at start. A bad value is a one-line
// error naming the variable; variables of later features are accepted and documented already.
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

type Env = Record<string, string | undefined>;

/** The UI that `npm run build` writes into the package (dist/ui beside dist/settings.js and above src/). */
export const BUNDLED_UI_DIR = fileURLToPath(new URL('../dist/ui/', import.meta.url));

export class SettingsError extends Error {
  override name = 'SettingsError';
}

interface Spec<T> {
  default: (env: Env) => T;
  parse: (raw: string, name: string) => T;
  doc: string;
  /** An empty value is a value (it switches the feature off) rather than "use the default". */
  emptyIsValue?: boolean;
}

const str = (def: string | ((env: Env) => string), doc: string): Spec<string> => ({
  default: typeof def === 'function' ? def : () => def,
  parse: (raw) => raw,
  doc,
});

const int = (def: number, doc: string, min = 0, max = Number.MAX_SAFE_INTEGER): Spec<number> => ({
  default: () => def,
  parse: (raw, name) => {
    if (!/^[+-]?\d+$/.test(raw.trim())) throw new SettingsError(`${name}=${JSON.stringify(raw)}: expected an integer`);
    const n = Number(raw);
    if (n < min || n > max) throw new SettingsError(`${name}=${raw}: must be between ${min} and ${max}`);
    return n;
  },
  doc,
});

const bool = (def: boolean, doc: string): Spec<boolean> => ({
  default: () => def,
  parse: (raw, name) => {
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw new SettingsError(`${name}=${JSON.stringify(raw)}: expected true or false`);
  },
  doc,
});

const oneOf = <T extends string>(values: readonly T[], def: T, doc: string, fold = (s: string) => s.toLowerCase()): Spec<T> => ({
  default: () => def,
  parse: (raw, name) => {
    const v = fold(raw.trim()) as T;
    if (!values.includes(v)) throw new SettingsError(`${name}=${JSON.stringify(raw)}: must be one of ${values.join(', ')}`);
    return v;
  },
  doc,
});

/** 0/1 switches where, per spec, unrecognised values count as 1. */
const flag01 = (def: boolean, doc: string): Spec<boolean> => ({ default: () => def, parse: (raw) => raw.trim() !== '0', doc });

const list = (doc: string): Spec<string[]> => ({
  default: () => [],
  parse: (raw) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  doc,
});

/**
 * SVC_CONFIG_ENV_ALLOW: variable names (`FOO`) and prefixes (`FOO_*`) a pipeline's `${VAR}` may read;
 * `*` is every name (svc's own SVC_* only when an entry starting with SVC_ names them: see
 * envAllowed in src/config/interpolate.ts). Empty: no variable.
 */
const envAllow = (doc: string): Spec<string[]> => ({
  default: () => ['*'],
  parse: (raw, name) => {
    const entries = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = entries.find((e) => !/^(\*|[A-Za-z_][A-Za-z0-9_]*\*?)$/.test(e));
    if (bad !== undefined) throw new SettingsError(`${name}: ${JSON.stringify(bad)} is not a variable name (FOO), a prefix (FOO_*) or *`);
    return entries;
  },
  doc,
  emptyIsValue: true,
});

const svcHome = () => join(homedir(), '.svc');

/** The data home, ~/.svc: the embedded database's default folder, and where defaults at the filesystem root fall back to. */
export const dataHome = svcHome;

/** Where the CLI finds the daemon when SVC_API_URL is unset: the address `svc serve` with the same environment listens on. */
function defaultApiUrl(env: Env): string {
  const host = (env.SVC_HOST ?? '').trim();
  // Every interface: localhost, as spec doc 2's default (http://localhost:8765).
  const name = ['', '0.0.0.0', '::', '[::]'].includes(host) ? 'localhost' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${name}:${readSetting('PORT', env)}`;
}

/** The spec's three vendor identifiers (doc 2: "A default, B, C"); the vendor names are accepted too. */
const AI_PROVIDER_LETTERS: Record<string, string> = { a: 'openai', b: 'anthropic', c: 'gemini' };

/** The table: variable name (without SVC_) -> how to read it. README's variable list is generated from it. */
export const SETTINGS = {
  HOST: str('0.0.0.0', 'bind address'),
  PORT: int(8765, 'API port', 0, 65535),
  PIPELINE_DIR: str('./pipelines', 'directory scanned for pipeline YAML at startup'),
  CONFIG_ENV_ALLOW: envAllow(
    "comma-separated environment variables a pipeline's `${VAR}` may read: names (`FOO`) and prefixes (`FOO_*`); `*` is every variable but svc's own `SVC_*`, which only entries starting with `SVC_` allow; empty allows none (docs/configuration.md)",
  ),
  STATE_DIR: str(
    '',
    'runtime state root: webhook spools of the daemon (default: a state folder beside SVC_DB_PATH) and the processed-file memory of `svc run` (default ~/.svc/state)',
  ),
  DB_URL: str('', 'SQL database URL (postgresql://... or mysql://...); empty: the embedded SQLite file SVC_DB_PATH'),
  DB_PATH: str(() => join(svcHome(), 'svc.db'), 'embedded database file'),
  NODE_ID: str(() => hostname(), 'node id stored in each run record'),
  WORKER_ID: str(() => hostname(), 'worker id (worker mode)'),
  POD_NAMESPACE: str('', 'namespace override for per-pipeline service management'),
  SHUTDOWN_TIMEOUT_SECONDS: int(30, 'drain time for in-flight runs before a forced stop', 0, 86400),
  RUN_HISTORY_MAX_AGE_DAYS: int(90, 'run history: runs that finished longer ago than this are purged (docs/storage.md); 0: no age limit', 0, 36500),
  RUN_HISTORY_MAX_RUNS_PER_PIPELINE: int(100000, 'run history: runs kept per pipeline, the newest; older finished ones are purged; 0: no count limit'),
  RUN_HISTORY_PURGE_INTERVAL_SECONDS: int(
    3600,
    'seconds between run-history purges in the background (the first one a minute after start, or one interval when shorter)',
    1,
    604800,
  ),
  API_URL: str(
    (env) => defaultApiUrl(env),
    "daemon URL for the command-line proxy commands; unset: the daemon's own SVC_HOST and SVC_PORT (localhost when SVC_HOST is every interface), so `http://localhost:8765` by default",
  ),
  LOG_LEVEL: oneOf(['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const, 'INFO', 'DEBUG, INFO, WARNING, ERROR', (s) => s.toUpperCase()),
  LOG_FORMAT: oneOf(['json', 'text'] as const, 'json', 'json or text'),
  WORKERS: int(1, 'HTTP server worker count (accepted; one event loop serves the API)', 1, 64),
  RELOAD_ON_START: bool(true, 'load pipelines from SVC_PIPELINE_DIR at startup'),
  SMTP_HOST: str('localhost', 'mail server for email alerts'),
  SMTP_PORT: int(587, 'mail server port', 1, 65535),
  SMTP_USER: str('', 'optional mail user'),
  SMTP_PASS: str('', 'optional mail password'),
  SMTP_TLS: bool(true, 'STARTTLS; false for plain'),
  SMTP_FROM: str(() => `svc@${hostname()}`, 'sender of alert mail'),
  API_KEY: str('', 'enables X-API-Key authentication of /api/* when set'),
  INTERNAL_AUTH_MODE: {
    default: (): 'off' | 'warn' | 'enforce' => 'warn',
    // Spec: an invalid mode is logged at WARNING and treated as warn (see invalidInternalAuthMode).
    parse: (raw: string) => (['off', 'warn', 'enforce'].includes(raw.trim().toLowerCase()) ? (raw.trim().toLowerCase() as 'off' | 'warn' | 'enforce') : 'warn'),
    doc: 'off, warn or enforce: key checks on /api/internal/* (invalid values: warn)',
  } satisfies Spec<'off' | 'warn' | 'enforce'>,
  DECODE_WATCH_MS: int(
    1000,
    'poison inputs: a chunk or message still being processed after this long is noted as a suspect, so that if the process dies on it, the next start dead-letters it instead of processing it again (docs/reliability.md#limits)',
    10,
    3600000,
  ),
  DECODE_TIMEOUT_MS: int(
    60000,
    'poison inputs: a chunk or message still being processed after this long ends the process (its event loop is stuck: no API, no drain); the restart dead-letters it as timed out',
    100,
    86400000,
  ),
  WEBHOOK_MAX_BODY_BYTES: int(10485760, 'largest webhook body accepted (413 above)', 1),
  AUTH_USERS: list('comma-separated user:password pairs for browser login'),
  AUTH_SECRET: str(() => randomBytes(32).toString('hex'), 'HMAC secret for session tokens (random per start when unset)'),
  RATE_LIMIT: int(0, 'max requests per client IP per window on /api/*; 0 disables'),
  RATE_LIMIT_WINDOW: int(60, 'sliding window in seconds', 1, 86400),
  AUTH_LOGIN_MAX_FAILURES: int(
    10,
    'failed logins per client IP per SVC_AUTH_LOGIN_WINDOW_SECONDS (daemon and console login); past it every login of that client is 429, checked before the password',
    1,
    1000000,
  ),
  AUTH_LOGIN_WINDOW_SECONDS: int(60, 'sliding window of SVC_AUTH_LOGIN_MAX_FAILURES, in seconds', 1, 86400),
  TLS_CERTFILE: str('', 'serve HTTPS with this certificate (with SVC_TLS_KEYFILE)'),
  TLS_KEYFILE: str('', 'private key for HTTPS'),
  OTEL_ENDPOINT: str('', 'OTLP gRPC endpoint for traces; empty disables tracing'),
  OTEL_SERVICE: str('svc', 'service name reported to the trace collector'),
  WATCH_PIPELINES: bool(false, 'reload on YAML file changes in SVC_PIPELINE_DIR; deleted files deregister the pipeline'),
  MIB_DIR: str('/mibs', 'compiled MIB modules; unset and /mibs cannot be written (outside the container): ~/.svc/mibs, said in the log'),
  MIB_SOURCE_DIR: str(
    '',
    'persisted raw MIB sources (default: a mib-sources directory beside SVC_MIB_DIR; unset and that cannot be written: ~/.svc/mib-sources, said in the log)',
  ),
  MIB_BUNDLED_SOURCE_DIR: str('/mib-sources', 'read-only bundled MIB sources, several separated by the OS path separator'),
  MIB_REPOSITORY_URL: str(
    '',
    'remote MIB repository for POST /api/mibs/download and fetch-dependencies (`<url>/<MODULE>`, or a URL with @mib@); empty: bundled sources only',
  ),
  MIB_MAX_SOURCE_BYTES: int(
    4194304,
    'largest MIB source file compiled, in bytes (a larger one fails unread; uploads are also capped at 4 MiB per file)',
    1024,
    268435456,
  ),
  MIB_MAX_SYMBOLS: int(20000, 'most definitions in one MIB module (more: the module fails)', 1),
  MIB_MAX_OID_DEPTH: int(128, 'most sub-identifiers in one OID of a MIB module, and most definitions one OID is defined through (SNMP allows 128)', 2, 1024),
  MIB_MAX_COMPILED_BYTES: int(33554432, 'largest compiled MIB module, in characters of its JSON (larger: the module fails)', 65536, 268435456),
  SCHEMA_DIR: str('/schemas', 'serialization schema files'),
  SCHEMA_REGISTRY_URL: str('', 'external schema registry base URL'),
  SCHEMA_REGISTRY_USERNAME: str('', 'schema registry basic-auth user'),
  SCHEMA_REGISTRY_PASSWORD: str('', 'schema registry basic-auth password'),
  UI_DIR: { ...str(() => BUNDLED_UI_DIR, 'the web UI served at /ui (docs/ui.md); empty disables it'), emptyIsValue: true },
  TEMPLATES_DIR: str('', 'directory of pipeline templates served by /api/templates (default: the bundled templates)'),
  AI_PROVIDER: oneOf(
    ['openai', 'anthropic', 'gemini'] as const,
    'openai',
    'AI provider: A or openai (the default), B or anthropic, C or gemini (docs/ai.md)',
    (s) => AI_PROVIDER_LETTERS[s.toLowerCase()] ?? s.toLowerCase(),
  ),
  AI_API_KEY: str('', 'empty disables the AI endpoints'),
  AI_MODEL: str('', 'AI model override'),
  AI_BASE_URL: str('', 'custom AI provider endpoint'),
  AI_TIMEOUT_SECONDS: int(60, 'longest wait for one answer of the AI provider (502 after it)', 1, 600),
  MODE: oneOf(['standalone', 'manager', 'worker'] as const, 'standalone', 'standalone, manager or worker (docs/cluster.md)'),
  WORKER_URLS: list('explicit comma-separated worker agent URLs'),
  WORKER_REPLICAS: int(0, 'worker count for DNS discovery; 0 disables'),
  WORKER_SERVICE: str('svc-worker', 'headless service name of the workers'),
  WORKER_NAMESPACE: str('default', 'namespace of worker pods'),
  WORKER_PORT: int(8766, 'worker agent port', 1, 65535),
  WORKER_INGRESS_PORT: int(8767, 'worker webhook ingress port', 1, 65535),
  MANAGER_URL: str('', 'manager base URL used by workers for callbacks; several, comma-separated, are tried in turn (a standby answers 503)'),
  DATA_DIR: str('/data', 'base for worker-synced schemas and MIBs'),
  STATS_INTERVAL: int(30, 'seconds between worker stats reports', 1),
  LIVE_COUNTERS: flag01(
    true,
    "1: a running run's counters are live in the API, the CLI and the UI (at most 5 s old; a worker reports them every min(SVC_STATS_INTERVAL, 2) s); 0: they show only when the run ends (a benchmark and test switch, not for production)",
  ),
  LEADER_LEASE_SECONDS: int(
    15,
    'manager mode on PostgreSQL: the leader lease, renewed every fifth of it; a leader that cannot renew steps down before it runs out',
    3,
    600,
  ),
  WORKER_HEALTH_INTERVAL: int(10, "seconds between the manager's health polls of each worker (a worker is down after 2 failed polls)", 1, 3600),
  STREAM_SINGLE_PLACEMENT: flag01(true, '1: single-worker streams get a persisted one-slot placement'),
  QUEUE_MANUAL_RUNS: flag01(true, '1: queue manual runs when no healthy worker exists; 0: fail fast'),
  QUEUE_TTL_SECONDS: int(900, 'wait limit of a queued run', 1),
  SHARD_LEASE_SECONDS: int(
    60,
    'a shard of a sharded batch run is lost when its worker sends no progress for this long (the manager gives its targets to other workers or marks them missed); a worker that cannot report for this long stops the shard itself',
    5,
    3600,
  ),
  STATEFUL_TRANSFORMS: flag01(true, '0 disables counter_delta, window_aggregate and the internal state endpoints'),
  STATE_MAX_BYTES: int(20971520, 'largest transform-state body', 1),
  EXPR_MAX_STEPS: int(
    1000000,
    'expression language: work one evaluation may do (one step per element walked, compared or built and per 16 characters of text); over it the record fails with "expression budget exceeded" (docs/expressions.md)',
    1000,
  ),
  EXPR_MAX_LIST_LENGTH: int(100000, 'expression language: elements of a list one evaluation may build, nested lists counted in full', 100),
  EXPR_MAX_STRING_LENGTH: int(1048576, 'expression language: characters of a string one evaluation may build, and of the text a list it builds holds', 1000),
  PROMETHEUS_RW_MAX_OUTPUT_BYTES: int(
    67108864,
    "prometheus_rw: largest estimated JSON of the records of one remote-write request (each sample repeats its series' labels); a larger request is answered 400",
    1,
  ),
  OTLP_MAX_OUTPUT_BYTES: int(
    67108864,
    "otlp: largest estimated size of the records of one OTLP export request (each record repeats its resource's and scope's attributes); a larger request is answered 400 (gRPC INVALID_ARGUMENT)",
    1,
  ),
  CORBA_MAX_MESSAGE_BYTES: int(
    67108864,
    'corba: largest GIOP message taken from a server, fragments of one message counted together; a larger one fails the connection',
    1024,
  ),
  DECODE_MAX_DEPTH: int(
    512,
    'deepest nesting of arrays, maps, objects or elements that the JSON, NDJSON, MessagePack, Avro and XML decoders accept in one record; deeper input is a parse error (later steps walk records recursively)',
    8,
    10000,
  ),
  DECODE_MAX_RECORDS_PER_INPUT: int(
    1000000,
    'most records that one input (a message, a chunk or a split piece) may decode to, or its size in bytes when larger; past it the whole input is a parse error (docs/reliability.md#limits)',
    1,
  ),
  DECODE_MAX_BYTES_PER_INPUT: int(
    1073741824,
    'about the most bytes of records (their JSON size, estimated from a sample) that one input may decode to; past it the whole input is a parse error (docs/reliability.md#limits)',
    1024,
  ),
  CONSOLE_PORT: int(8770, 'operator console port (svc serve and svc console; 0 picks a free port)', 0, 65535),
  SIMULATOR_BULK_MAX_VARBINDS: int(
    100,
    "console simulator and fleet: repeated varbinds in one GETBULK answer (snmpd's maxGetbulkResponses); max-repetitions is cut to this over the repeaters",
    1,
    8125,
  ),
  SIMULATOR_BULK_MAX_AMPLIFICATION: int(
    16,
    'console simulator and fleet: largest GETBULK answer as a multiple of the request size (trailing varbinds dropped; the first always stays)',
    1,
    1000,
  ),
} as const;

type Table = typeof SETTINGS;
export type Settings = { [K in keyof Table]: ReturnType<Table[K]['default']> } & {
  /** The raw SVC_INTERNAL_AUTH_MODE when it was not a valid mode (to be logged at WARNING). */
  invalidInternalAuthMode?: string;
  /** The variables (names without SVC_) left unset, whose value is the default. */
  defaulted?: readonly (keyof Table)[];
};

/** One SVC_* variable, read as loadSettings reads it (for code that is handed no Settings: svc validate, svc test). */
export function readSetting<K extends keyof Table>(key: K, env: Env = process.env): Settings[K] {
  const spec = SETTINGS[key] as Spec<Settings[K]>;
  const name = `SVC_${key}`;
  const raw = env[name];
  return raw === undefined || (raw === '' && !spec.emptyIsValue) ? spec.default(env) : spec.parse(raw, name);
}

/** Reads every SVC_* variable once; throws SettingsError naming the first bad one. */
export function loadSettings(env: Env = process.env): Settings {
  const out: Record<string, unknown> = {};
  const defaulted: (keyof Table)[] = [];
  for (const key of Object.keys(SETTINGS) as (keyof Table)[]) {
    out[key] = readSetting(key, env);
    const raw = env[`SVC_${key}`];
    if (raw === undefined || (raw === '' && !(SETTINGS[key] as Spec<unknown>).emptyIsValue)) defaulted.push(key);
  }
  out.defaulted = defaulted;
  const mode = env.SVC_INTERNAL_AUTH_MODE?.trim().toLowerCase();
  if (mode && !['off', 'warn', 'enforce'].includes(mode)) out.invalidInternalAuthMode = env.SVC_INTERNAL_AUTH_MODE;
  return out as Settings;
}
