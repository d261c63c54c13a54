// Which modules a command loads (issue 18): --version and --help load main.ts and version.ts alone,
// `validate` the config checker and the plugins its file names, never the daemon. Recorded by a
// loader hook in the real process (module-recorder.mjs); what is asserted is the module list.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `svc ...args` from the sources; returns its exit code, stdout and the src/ and node_modules modules it resolved. */
function svcModules(args: string[]): Promise<{ code: number | null; stdout: string; src: string[]; packages: string[] }> {
  const log = join(tempDir('svc-modules-'), 'modules.log');
  writeFileSync(log, '');
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/cli/module-recorder.mjs', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, SVC_TEST_MODULE_LOG: log },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const urls = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
      const src = urls.filter((u) => u.startsWith('file:') && !u.includes('/node_modules/')).map((u) => fileURLToPath(u).slice(ROOT.length));
      const packages = urls.filter((u) => u.includes('/node_modules/'));
      resolve({ code, stdout, src, packages });
    });
  });
}

describe('svc loads what a command needs', () => {
  it.each(['--version', '--help', '-h', 'help', ''])("svc '%s': main.ts, version.ts and usage.ts, no package", async (arg) => {
    const args = arg ? [arg] : [];
    const r = await svcModules(args);
    expect(r.code).toBe(args.length ? 0 : 64);
    expect(r.stdout).not.toBe('');
    expect(r.src.sort()).toEqual(['src/cli/main.ts', 'src/cli/usage.ts', 'src/version.ts']);
    expect(r.packages).toEqual([]);
  });

  it('svc validate: the plugins the file names, no registry, engine, daemon or API', async () => {
    const dir = tempDir('svc-modules-');
    const file = join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: "1"
pipeline:
  name: lazy
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dir)}, file_pattern: "*.csv" }
  serializer_in: { type: csv }
  serializer_out: { type: ndjson }
  transforms:
    - { type: rename, fields: { a: b } }
  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))} }
`,
    );
    const r = await svcModules(['validate', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${file}: valid (pipeline 'lazy')\n`);
    expect(r.src).toEqual(
      expect.arrayContaining([
        'src/plugins/connectors/local/source.ts',
        'src/plugins/serializers/csv/index.ts',
        'src/plugins/transforms/rename/index.ts',
        'src/plugins/connectors/local/sink.ts',
      ]),
    );
    const plugins = r.src.filter((f) => /^src\/plugins\/(serializers|transforms|connectors)\//.test(f));
    expect(plugins.sort()).toEqual([
      'src/plugins/connectors/local/dlq-reader.ts',
      'src/plugins/connectors/local/sink.ts',
      'src/plugins/connectors/local/source.ts',
      'src/plugins/serializers/csv/index.ts',
      'src/plugins/serializers/ndjson/index.ts',
      'src/plugins/transforms/rename/index.ts',
    ]);
    expect(r.src.filter((f) => /^src\/(plugins\/registry|engine\/|daemon\/|api\/|console\/|cluster\/|store\/)/.test(f))).toEqual([]);
  });

  it('svc validate of an unknown type loads the whole registry, to name every type', async () => {
    const dir = tempDir('svc-modules-');
    const file = join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: "1"\npipeline:\n  name: x\n  source: { type: locall, path: /tmp }\n  serializer_in: { type: ndjson }\n  sinks: [{ type: local, path: /tmp }]\n`,
    );
    const r = await svcModules(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.src).toContain('src/plugins/registry.ts');
  });
});
