// Which Kafka client runs under the kafka source and sink. librdkafka, through
// @confluentinc/kafka-javascript's native API, is the engine; it is an optionalDependency because
// its install builds native code (the prebuilt binary comes from GitHub), which can fail where only
// npm is reachable. kafkajs (pure JavaScript) is then the fallback, several times slower, and the
// log says so once, with how to get the native one (docs/connectors/kafka.md#engines).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Rdkafka from '@confluentinc/kafka-javascript';
import type { Logger } from '../../../observability/log.js';
import type { PluginEngine } from '../../types.js';
import { once } from '../../connector-runtime/lazy.js';

export type EngineName = 'librdkafka' | 'kafkajs';
export const ENGINES = ['auto', 'librdkafka', 'kafkajs'] as const;
export type EngineChoice = (typeof ENGINES)[number];

export const NATIVE_PACKAGE = '@confluentinc/kafka-javascript';

/** How to get the native engine, in words (the log line and the docs say the same). */
export const HOW_TO_GET_NATIVE =
  'install the build dependencies (Debian: apt-get install libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev) and run `CKJS_LINKING=dynamic npm install` again (docs/connectors/kafka.md#engines)';

const require = createRequire(import.meta.url);

/**
 * Whether the native client is installed with its compiled binding, found without loading it (the
 * registry, `svc plugins` and /api/plugins load no SDK): the package's folder and its .node file.
 */
function nativeInstalled(): { version: string } | { missing: string } {
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${NATIVE_PACKAGE}/package.json`);
  } catch {
    return { missing: `${NATIVE_PACKAGE} is not installed (an optional dependency: its native build did not run or failed)` };
  }
  const binding = join(dirname(pkgJson), 'build', 'Release', 'confluent-kafka-javascript.node');
  if (!existsSync(binding)) return { missing: `${NATIVE_PACKAGE} is installed without its compiled binding (${binding})` };
  return { version: (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version };
}

/** What `svc plugins` and /api/plugins show: the engine `auto` would pick, judged from the files alone. */
export function engineInfo(): PluginEngine {
  const n = nativeInstalled();
  if ('version' in n) return { name: 'librdkafka', native: true, note: `librdkafka through ${NATIVE_PACKAGE} ${n.version} (native)` };
  return {
    name: 'kafkajs',
    native: false,
    note: `kafkajs (pure JavaScript fallback, several times slower): ${n.missing}; to get librdkafka, ${HOW_TO_GET_NATIVE}`,
  };
}

/** The native module, loaded once; rejects when it is absent or its binding cannot load. */
export const rdkafka = once(async (): Promise<typeof Rdkafka> => {
  const m = (await import('@confluentinc/kafka-javascript')) as typeof Rdkafka & { default?: typeof Rdkafka };
  // A CommonJS module: its exports are the default export under ESM.
  return m.default ?? m;
});

let said: EngineName | undefined;

/**
 * The engine for a source or sink: `auto` takes librdkafka when it loads, else kafkajs; an explicit
 * choice that cannot load fails the connection with the reason. The first choice in a process is
 * logged, in words.
 */
export async function chooseEngine(choice: EngineChoice, log: Logger): Promise<EngineName> {
  if (choice === 'kafkajs') return tell('kafkajs', log);
  try {
    const k = await rdkafka();
    if (said !== 'librdkafka')
      log.info(
        { connector: 'kafka', engine: 'librdkafka', librdkafka: k.librdkafkaVersion },
        `kafka: engine librdkafka ${k.librdkafkaVersion} (native, ${NATIVE_PACKAGE})`,
      );
    said = 'librdkafka';
    return 'librdkafka';
  } catch (e) {
    const why = nativeInstalled();
    const reason = 'missing' in why ? why.missing : `${NATIVE_PACKAGE} did not load: ${(e as Error).message}`;
    if (choice === 'librdkafka') throw new Error(`engine librdkafka is not available: ${reason}; ${HOW_TO_GET_NATIVE}`, { cause: e });
    if (said !== 'kafkajs')
      log.warn(
        { connector: 'kafka', engine: 'kafkajs' },
        `kafka: engine kafkajs (pure JavaScript, several times slower than librdkafka): ${reason}. To get the native engine, ${HOW_TO_GET_NATIVE}`,
      );
    said = 'kafkajs';
    return 'kafkajs';
  }
}

function tell(name: EngineName, log: Logger): EngineName {
  if (said !== name) log.info({ connector: 'kafka', engine: name }, `kafka: engine ${name} (chosen by the pipeline's engine field)`);
  said = name;
  return name;
}
