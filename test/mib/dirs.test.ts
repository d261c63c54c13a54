// The MIB store's folders when SVC_MIB_DIR / SVC_MIB_SOURCE_DIR are unset: doc 2's /mibs and
// /mib-sources where they can be written (the container), else folders under the data home (~/.svc)
// with a log line, never folders made at the filesystem root.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mibDirs, writableDir } from '../../src/mib/dirs.js';
import { loadSettings } from '../../src/settings.js';
import { tempDir } from '../helpers/fs.js';

describe('MIB folders: the defaults and their fallback under the data home', () => {
  it('unset and not writable: folders of the same name under the data home, each fallback said in words', () => {
    const dir = tempDir('svc-mib-dirs-');
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const home = join(dir, 'home', '.svc');
    // A folder under a plain file can be neither written nor made, whoever runs the test (root too).
    const r = mibDirs({ MIB_DIR: join(file, 'mibs'), MIB_SOURCE_DIR: '', defaulted: ['MIB_DIR', 'MIB_SOURCE_DIR'] }, home);
    expect(r.compiledDir).toBe(join(home, 'mibs'));
    expect(r.sourceDir).toBe(join(home, 'mib-sources'));
    expect(r.fallbacks.map((f) => f.message)).toEqual([
      `SVC_MIB_DIR is unset and ${join(file, 'mibs')} cannot be written: compiled MIB modules are kept in ${join(home, 'mibs')} (set SVC_MIB_DIR to choose the folder)`,
      `SVC_MIB_SOURCE_DIR is unset and ${join(file, 'mib-sources')} cannot be written: uploaded MIB sources are kept in ${join(home, 'mib-sources')} (set SVC_MIB_SOURCE_DIR to choose the folder)`,
    ]);
  });

  it('set explicitly: kept as given, even when it cannot be written (the store then says what fails)', () => {
    const dir = tempDir('svc-mib-dirs-');
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const s = loadSettings({ SVC_MIB_DIR: join(file, 'mibs'), SVC_MIB_SOURCE_DIR: join(file, 'src') });
    expect(mibDirs(s, join(dir, 'home'))).toEqual({ compiledDir: join(file, 'mibs'), sourceDir: join(file, 'src'), fallbacks: [] });
  });

  it('unset and writable (the container, or a folder that can be made): the defaults stay', () => {
    const dir = tempDir('svc-mib-dirs-');
    expect(writableDir(join(dir, 'not', 'yet', 'made'))).toBe(true);
    const r = mibDirs({ MIB_DIR: join(dir, 'mibs'), MIB_SOURCE_DIR: '', defaulted: ['MIB_DIR', 'MIB_SOURCE_DIR'] }, join(dir, 'home'));
    expect(r).toEqual({ compiledDir: join(dir, 'mibs'), sourceDir: join(dir, 'mib-sources'), fallbacks: [] });
  });

  it('a user who cannot write the filesystem root: the store opens under ~/.svc with a log line, and makes nothing at the root', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-mib-home-'));
    chmodSync(home, 0o777);
    const rootHad = { mibs: existsSync('/mibs'), sources: existsSync('/mib-sources') };
    const script = join(home, 'open.mts');
    writeFileSync(
      script,
      [
        `import { MibStore } from ${JSON.stringify(join(process.cwd(), 'src/mib/store.ts'))};`,
        `import { loadSettings } from ${JSON.stringify(join(process.cwd(), 'src/settings.ts'))};`,
        'const lines = [];',
        'const log = { info: (o, m) => lines.push({ ...o, msg: m }), warn: (o, m) => lines.push({ ...o, msg: m }) };',
        'const store = await MibStore.fromSettings(loadSettings(), log);',
        'console.log(JSON.stringify({ status: store.status(), lines }));',
      ].join('\n'),
    );
    chmodSync(script, 0o644);
    const tsx = join(process.cwd(), 'node_modules/.bin/tsx');
    // Everything but the MIB variables of this process; as root the script runs as nobody, who cannot write /.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_MIB_')));
    Object.assign(env, { HOME: home, SVC_MIB_BUNDLED_SOURCE_DIR: '' });
    // runuser sets HOME to nobody's own unless told otherwise: `env HOME=` after it.
    const [cmd, args] = process.getuid?.() === 0 ? ['runuser', ['-u', 'nobody', '--', 'env', `HOME=${home}`, tsx, script]] : [tsx, [script]];
    const out = await new Promise<string>((resolve, reject) =>
      execFile(cmd, args, { env, timeout: 60_000 }, (e, stdout, stderr) => (e ? reject(new Error(stderr || e.message)) : resolve(stdout))),
    );
    const r = JSON.parse(out.trim().split('\n').pop()!) as { status: { mib_dir: string; source_dir: string }; lines: { msg: string }[] };
    const svcHome = join(home, '.svc');
    expect(r.status).toMatchObject({ mib_dir: join(svcHome, 'mibs'), source_dir: join(svcHome, 'mib-sources') });
    expect(r.lines.map((l) => l.msg)).toContain(
      `SVC_MIB_DIR is unset and /mibs cannot be written: compiled MIB modules are kept in ${join(svcHome, 'mibs')} (set SVC_MIB_DIR to choose the folder)`,
    );
    expect(existsSync(join(svcHome, 'mibs'))).toBe(true);
    if (!rootHad.mibs) expect(existsSync('/mibs')).toBe(false);
    if (!rootHad.sources) expect(existsSync('/mib-sources')).toBe(false);
    rmSync(home, { recursive: true, force: true });
  }, 90_000);
});
