import { join } from 'node:path';

/**
 * The environment of a `svc serve` child on loopback ports whose database and folders are all inside
 * `dir` (tests, benchmarks and the soak: never the machine's /mibs or another run's files). The MIB
 * store has no bundled sources but the product's own.
 */
export function serveEnv(dir: string, ports: { port: number; consolePort: number }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(ports.port),
    SVC_CONSOLE_PORT: String(ports.consolePort),
    SVC_DB_PATH: join(dir, 'svc.db'),
    SVC_STATE_DIR: join(dir, 'state'),
    SVC_PIPELINE_DIR: join(dir, 'pipelines'),
    SVC_MIB_DIR: join(dir, 'mibs'),
    SVC_MIB_SOURCE_DIR: join(dir, 'mib-sources'),
    SVC_MIB_BUNDLED_SOURCE_DIR: '',
    ...extra,
  };
}
