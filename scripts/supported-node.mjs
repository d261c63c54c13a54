#!/usr/bin/env node
// Runs a command on a Node.js that svc supports (package.json's engines: ^22.19 || ^24 || >=26).
//
//   node scripts/supported-node.mjs [--node VERSION] [--addons] COMMAND [ARGS...]
//
// On a supported Node, COMMAND runs as it is. On an older one (this machine's Node 20, say), Node
// FALLBACK_VERSION is fetched once from the npm registry's `node-<platform>-<arch>` package (the
// binary and its headers, as `npm pack` fetches any package, so the npm configuration's registry,
// proxy and certificates apply) into ~/.cache/svc/node/<version>/, and COMMAND runs with that Node
// first on PATH: `node`, `npm` and `npx` inside it all run on it. Where that fetch is impossible,
// one line says what to install, and the exit status is 1. `--node VERSION` runs COMMAND on that
// exact Node (fetched the same way when the running one is another), as scripts/test-on-node.sh does.
//
// `--addons`: before COMMAND, every native addon under node_modules/ (a build/Release/*.node) is
// loaded by the Node that will run COMMAND, and each package whose addon does not load is rebuilt
// (`npm rebuild NAME`, run by that Node) against that Node's own headers: the machine's npm
// configuration may point node-gyp at other headers (here `nodedir=/usr`, Node 20's), and no
// prebuilt binary can be downloaded. better-sqlite3 is the one that matters (ssh2's and
// cpu-features' optional speed-ups are the others; @confluentinc/kafka-javascript, the kafka
// connector's optional native client, a NAN addon built for one Node ABI, is rebuilt from source
// with CKJS_LINKING=dynamic: about 3 minutes per Node). A rebuilt addon no longer loads on the old Node,
// which is why every package.json script that loads one goes through this script.
// SVC_ADDONS_SKIP (package names, comma-separated) leaves those optional addons as they are, unbuilt
// for this Node: .ci/run's Node 24 steps skip the kafka client's 3-minute rebuild that way (the
// kafka connector then runs on its kafkajs fallback there). better-sqlite3 cannot be skipped.
//
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to COMMAND's process group
// (COMMAND runs in a group of its own), and this script exits as COMMAND did: with its code, or by
// the same signal. The daemon's SIGTERM drain (`npm start`) works through it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';

const FALLBACK_VERSION = '26.10.0';
const SUPPORTED = 'Node.js 22.19 or later 22, 24 or 26';
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];

const say = (line) => process.stderr.write(`supported-node: ${line}\n`);

function supported(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return (major === 22 && minor >= 19) || major === 24 || major >= 26;
}

function cacheRoot() {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'svc', 'node');
}

/** The npm CLI that came with the running Node: run by another Node, it is that Node's npm. */
function npmCli() {
  const candidates = [
    process.env.npm_execpath,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    join(dirname(process.execPath), 'node_modules', 'npm', 'bin', 'npm-cli.js'),
  ];
  const cli = candidates.find((c) => c && /npm-cli\.js$/.test(c) && existsSync(c));
  if (!cli) throw new Error('npm was not found beside this Node');
  return cli;
}

/** The folder holding bin/node and include/node of Node `version`, fetched once. */
function fetchNode(version, why) {
  const dir = join(cacheRoot(), version);
  if (existsSync(join(dir, 'bin', 'node')) && existsSync(join(dir, 'include', 'node', 'node_version.h'))) return dir;
  const pkg = `node-${process.platform}-${process.arch}@${version}`;
  mkdirSync(cacheRoot(), { recursive: true });
  const tmp = mkdtempSync(join(cacheRoot(), `.fetch-${version}-`));
  const started = Date.now();
  say(
    `${why ?? `Node ${process.version} is not one svc supports (${SUPPORTED})`}: fetching Node ${version} (${pkg} from the npm registry, about 60 MB) into ${dir}, once...`,
  );
  try {
    const pack = spawnSync(process.execPath, [npmCli(), 'pack', pkg, '--loglevel=error', '--pack-destination', tmp], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_loglevel: 'error' },
    });
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (pack.status !== 0 || !tgz)
      throw new Error(
        (pack.stderr || pack.error?.message || 'npm pack failed')
          .trim()
          .split('\n')
          .find((l) => !/A complete log|^npm error $/.test(l)) ?? 'npm pack failed',
      );
    const untar = spawnSync('tar', ['xzf', tgz, 'package/bin/node', 'package/include'], { cwd: tmp, encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`tar: ${(untar.stderr || '').trim()}`);
    const check = spawnSync(join(tmp, 'package', 'bin', 'node'), ['--version'], { encoding: 'utf8' });
    if (check.stdout?.trim() !== `v${version}`) throw new Error(`the fetched Node does not run here (${(check.stderr || check.error?.message || '').trim()})`);
    try {
      renameSync(join(tmp, 'package'), dir);
    } catch (err) {
      if (!existsSync(join(dir, 'bin', 'node'))) throw err; // another run fetched it meanwhile
    }
    say(`Node ${version} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return dir;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The node-gyp `nodedir` (a folder with include/node) of the Node at `nodeBin`, fetched if need be. */
function headersFor(nodeBin, version) {
  const prefix = resolve(dirname(nodeBin), '..');
  const header = join(prefix, 'include', 'node', 'node_version.h');
  if (existsSync(header)) {
    const text = readFileSync(header, 'utf8');
    const part = (name) => text.match(new RegExp(`#define ${name} (\\d+)`))?.[1];
    if (`${part('NODE_MAJOR_VERSION')}.${part('NODE_MINOR_VERSION')}.${part('NODE_PATCH_VERSION')}` === version) return prefix;
  }
  return fetchNode(version, `node-gyp needs the headers of Node ${version}`);
}

/** Package folders under node_modules holding a built native addon: [{ name, dir, files }]. */
function addonPackages(root) {
  const found = new Map();
  const walk = (dir, depth) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name === '.bin' || e.name === '.cache') continue;
      if (e.name.startsWith('@')) {
        walk(join(dir, e.name), depth);
        continue;
      }
      const pkgDir = join(dir, e.name);
      const name = dir.endsWith('node_modules') ? e.name : `${dir.split(/[\\/]/).pop()}/${e.name}`;
      const files = [];
      const scan = (d, level) => {
        for (const f of readdirSync(d, { withFileTypes: true })) {
          if (f.name === 'node_modules' || level > 5) continue;
          const p = join(d, f.name);
          if (f.isDirectory()) scan(p, level + 1);
          else if (f.name.endsWith('.node') && d.endsWith(join('build', 'Release'))) files.push(p);
        }
      };
      try {
        if (statSync(pkgDir).isDirectory()) scan(pkgDir, 0);
      } catch {
        // a dangling link: no addon there
      }
      if (files.length > 0) found.set(pkgDir, { name, dir: pkgDir, files });
      if (depth < 4) walk(join(pkgDir, 'node_modules'), depth + 1);
    }
  };
  walk(join(root, 'node_modules'), 0);
  return [...found.values()];
}

/** The addon files that `nodeBin` cannot load (a build for another Node), by package. */
function brokenAddons(nodeBin, packages) {
  const files = packages.flatMap((p) => p.files);
  if (files.length === 0) return [];
  // An addon that loads is an addon; "did not self-register" is a shared library that is not one
  // (better-sqlite3's SQLite test extension), which no Node loads.
  const probe = `
    const bad = [];
    for (const f of JSON.parse(process.argv[1])) {
      try { process.dlopen({ exports: {} }, f); }
      catch (e) { if (!/did not self-register/.test(e.message)) bad.push(f); }
    }
    process.stdout.write(JSON.stringify(bad));`;
  const run = spawnSync(nodeBin, ['-e', probe, JSON.stringify(files)], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`probing the native addons failed: ${run.stderr}`);
  const bad = new Set(JSON.parse(run.stdout));
  return packages.filter((p) => p.files.some((f) => bad.has(f)));
}

function ensureAddons(nodeBin, version, root) {
  const marker = `${version}:${root}`;
  if (process.env.SVC_ADDONS_CHECKED === marker) return;
  const skipped = new Set(
    (process.env.SVC_ADDONS_SKIP ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n && n !== 'better-sqlite3'),
  );
  const broken = brokenAddons(
    nodeBin,
    addonPackages(root).filter((p) => !skipped.has(p.name)),
  );
  if (broken.length > 0) {
    const nodedir = headersFor(nodeBin, version);
    const names = [...new Set(broken.map((p) => p.name))];
    const started = Date.now();
    say(`rebuilding ${names.join(', ')} for Node ${version} (against ${join(nodedir, 'include', 'node')})...`);
    // Offline, from source: node-pre-gyp (the kafka connector's @confluentinc/kafka-javascript) and
    // prebuild-install (better-sqlite3) skip their download from GitHub, which is unreachable here;
    // the kafka client builds librdkafka against the Debian libraries (CKJS_LINKING=dynamic, as
    // docs/connectors/kafka.md installs it) unless the environment says otherwise.
    const env = {
      ...process.env,
      npm_config_nodedir: nodedir,
      npm_config_build_from_source: 'true',
      CKJS_LINKING: process.env.CKJS_LINKING || 'dynamic',
      PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH ?? ''}`,
    };
    for (const key of Object.keys(env)) if (/^npm_config_(target|runtime|disturl|dist_url)$/i.test(key)) delete env[key];
    const rebuild = spawnSync(nodeBin, [npmCli(), 'rebuild', ...names, `--nodedir=${nodedir}`, '--foreground-scripts=false', '--loglevel=error'], {
      cwd: root,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const still = brokenAddons(nodeBin, addonPackages(root));
    if (rebuild.status !== 0 || still.some((p) => p.name === 'better-sqlite3')) {
      process.stderr.write(rebuild.stdout + rebuild.stderr);
      throw new Error(`rebuilding ${names.join(', ')} for Node ${version} failed (a C++ compiler, make and python3 are needed)`);
    }
    if (still.length > 0)
      say(`optional addons left unbuilt for Node ${version}: ${still.map((p) => p.name).join(', ')} (their packages fall back to JavaScript)`);
    say(`rebuilt in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  process.env.SVC_ADDONS_CHECKED = marker;
}

function projectRoot() {
  let dir = process.cwd();
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

function main(argv) {
  let addons = false;
  let wanted;
  while (argv[0]?.startsWith('--')) {
    const flag = argv.shift();
    if (flag === '--addons') addons = true;
    else if (flag === '--node') wanted = argv.shift()?.replace(/^v/, '');
    else if (flag === '--') break;
    else throw new Error(`unknown option ${flag}`);
  }
  if (argv.length === 0) throw new Error('usage: node scripts/supported-node.mjs [--node VERSION] [--addons] COMMAND [ARGS...]');

  let nodeBin = process.execPath;
  let version = process.versions.node;
  const target = wanted ?? (supported(version) ? undefined : FALLBACK_VERSION);
  if (target && target !== version) {
    try {
      nodeBin = join(fetchNode(target, wanted ? `Node ${target} asked for (--node)` : undefined), 'bin', 'node');
      version = target;
    } catch (err) {
      process.stderr.write(
        `svc needs ${SUPPORTED}, and this is Node ${process.version}; fetching Node ${target} from the npm registry failed (${err.message}): install Node 24 or 26 (https://nodejs.org/) and run the command again.\n`,
      );
      process.exit(1);
    }
  }
  if (addons) ensureAddons(nodeBin, version, projectRoot());

  const env = { ...process.env };
  if (nodeBin !== process.execPath) {
    env.PATH = `${dirname(nodeBin)}${delimiter}${env.PATH ?? ''}`;
    // npm's scripts call `$npm_node_execpath`/`$NODE` in places: the Node chosen here.
    env.NODE = nodeBin;
    env.npm_node_execpath = nodeBin;
    delete env.npm_execpath;
  }
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', env, detached: true });
  const forward = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group has exited already
    }
  };
  for (const signal of FORWARDED) process.on(signal, forward);
  child.on('error', (err) => {
    process.stderr.write(`supported-node: ${argv[0]}: ${err.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    for (const s of FORWARDED) process.off(s, forward);
    if (signal) {
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

try {
  main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`supported-node: ${err.message}\n`);
  process.exit(1);
}
