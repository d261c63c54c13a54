// A worker's copy of the manager's schema files and compiled MIB modules, synced at run start
// (spec doc 2 section 4: GET /api/schemas, GET /api/mibs/{name}). A sync that finds a change builds
// a complete new version and switches one symlink to it, so a run sees the old copy or the new
// one, never a half-written file or a mix of both:
//
//   <dataDir>/schemas -> sync/current/schemas     fixed links: SVC_SCHEMA_DIR, SVC_MIB_DIR
//   <dataDir>/mibs    -> sync/current/mibs
//   <dataDir>/sync/current -> <n>                 replaced by rename: the switch
//   <dataDir>/sync/<n>/  schemas/<path>, mibs/<MODULE>.json, manifest.json (size, sha256 of each)
//
// Unchanged files are hard links into the previous version. The previous version is kept (a run
// that started on it may still open files there); older ones and unfinished ones are removed.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { compiledFromJson } from '../mib/index.js';
import { MibIndex } from '../mib/mib-index.js';
import type { MibResolver } from '../mib/resolver.js';
import type { CompiledModule } from '../mib/types.js';
import type { Logger } from '../observability/log.js';
import { RESERVED_TOP_DIR, relativeSegments } from '../schemas/store.js';
import { readJsonFile, syncDir } from '../util/durable.js';

export interface SyncOptions {
  /** SVC_MANAGER_URL. */
  managerUrl: string;
  /** SVC_DATA_DIR. */
  dataDir: string;
  /** Sent as X-API-Key (SVC_API_KEY): /api/schemas and /api/mibs are protected /api/* paths. */
  apiKey?: string;
  log: Logger;
  /** Per request (default 10 s). */
  timeoutMs?: number;
}

export interface SyncResult {
  /** `<dataDir>/schemas`: the worker's SVC_SCHEMA_DIR. */
  schemaDir: string;
  /** `<dataDir>/mibs`: the synced `<MODULE>.json` files. */
  mibDir: string;
  /** Files added, replaced or removed by this sync (0 when the copy was current). */
  changed: number;
  /** True when the manager could not be reached and the previous complete copy is used. */
  fromCache: boolean;
}

interface Entry {
  size: number;
  sha256: string;
  /** Schemas: the manager's modification time, which tells a changed file without fetching it. */
  modified?: string;
}

interface Manifest {
  format: 1;
  manager: string;
  synced_at: string;
  schemas: Record<string, Entry>;
  mibs: Record<string, Entry>;
}

/** The manager did not answer (network, timeout, 5xx): a complete earlier copy may stand in. */
class ManagerUnavailable extends Error {}

const SYNC = 'sync';
const CURRENT = 'current';
const MANIFEST = 'manifest.json';
const MODULE_NAME = /^[A-Za-z][A-Za-z0-9-]*$/;
/** Parallel downloads: enough to hide latency, few enough not to load the manager. */
const PARALLEL = 4;

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Syncs of one data directory run one after the other (runs starting together each call this). */
const queues = new Map<string, Promise<unknown>>();

export function syncFromManager(o: SyncOptions): Promise<SyncResult> {
  const key = resolve(o.dataDir);
  const next = (queues.get(key) ?? Promise.resolve()).then(
    () => syncOnce(o),
    () => syncOnce(o),
  );
  queues.set(key, next);
  const forget = () => void (queues.get(key) === next && queues.delete(key));
  next.then(forget, forget);
  return next;
}

async function syncOnce(o: SyncOptions): Promise<SyncResult> {
  const dataDir = resolve(o.dataDir);
  const root = join(dataDir, SYNC);
  const result = (changed: number, fromCache: boolean): SyncResult => ({
    schemaDir: join(dataDir, 'schemas'),
    mibDir: join(dataDir, 'mibs'),
    changed,
    fromCache,
  });
  await linkDirs(dataDir, false); // a folder in the way fails now, before anything is fetched
  let cache = await currentVersion(root);
  if (cache && !(await complete(join(root, String(cache.n)), cache.manifest))) {
    o.log.warn({ dir: join(root, String(cache.n)) }, 'the synced copy lacks files (removed by hand?): it is not used, everything is fetched again');
    cache = undefined;
  }
  const http = client(o);

  let listed: { schemas: SchemaListing[]; mibs: MibListing[] };
  try {
    if (!o.managerUrl) throw new ManagerUnavailable('SVC_MANAGER_URL is empty');
    listed = { schemas: await http.listSchemas(), mibs: await http.listMibs() };
  } catch (e) {
    return fallBack(e);
  }

  // The listings say nothing changed (every schema's size and time, every module's hash): no new version to build.
  if (cache && unchanged(listed, cache.manifest)) {
    await linkDirs(dataDir);
    o.log.debug({ version: cache.n }, 'schemas and MIBs are current (by the listings)');
    return result(0, false);
  }
  await fs.mkdir(root, { recursive: true });
  const n = (await versionNumbers(root)).reduce((a, b) => Math.max(a, b), 0) + 1;
  const dir = join(root, String(n));
  await fs.mkdir(dir);
  let built: { manifest: Manifest; changed: number; same: boolean };
  try {
    built = await buildVersion(dir, listed, cache, http, o);
  } catch (e) {
    await fs.rm(dir, { recursive: true, force: true });
    return fallBack(e);
  }
  if (built.same) {
    // Nothing to switch to: the new directory holds only links to the current one.
    await fs.rm(dir, { recursive: true, force: true });
    await linkDirs(dataDir);
    o.log.debug({ version: cache!.n }, 'schemas and MIBs are current');
    return result(0, false);
  }
  await switchTo(root, n);
  await linkDirs(dataDir);
  await prune(root, [n, cache?.n]);
  o.log.info(
    { version: n, changed: built.changed, schemas: Object.keys(built.manifest.schemas).length, mibs: Object.keys(built.manifest.mibs).length },
    'schemas and MIBs synced from the manager',
  );
  return result(built.changed, false);

  async function fallBack(e: unknown): Promise<SyncResult> {
    if (!(e instanceof ManagerUnavailable)) throw e;
    if (!cache) {
      throw new Error(
        `cannot reach the manager at ${o.managerUrl || '(SVC_MANAGER_URL is empty)'} to sync schemas and MIBs, and no complete earlier copy exists in ${root}: check SVC_MANAGER_URL (${e.message})`,
      );
    }
    await linkDirs(dataDir);
    o.log.warn(
      { manager: o.managerUrl, err: e.message, synced_at: cache.manifest.synced_at },
      'manager unreachable: this run uses the schemas and MIBs synced earlier',
    );
    return result(0, true);
  }
}

/**
 * The new version: a schema whose size and modification time are those of the current copy is
 * linked without a download, and so is a MIB module whose listed SHA-256 is that of the copy (a
 * manager of an earlier release lists no hash: then every module is fetched and its hash decides).
 * A sync with nothing changed is two listings, no download (issue 33: a sharded run's dispatch).
 */
async function buildVersion(
  dir: string,
  listed: { schemas: SchemaListing[]; mibs: MibListing[] },
  cache: { n: number; manifest: Manifest } | undefined,
  http: ReturnType<typeof client>,
  o: SyncOptions,
): Promise<{ manifest: Manifest; changed: number; same: boolean }> {
  const old = cache?.manifest;
  const oldDir = cache && join(dirname(dir), String(cache.n));
  const manifest: Manifest = { format: 1, manager: o.managerUrl, synced_at: new Date().toISOString(), schemas: {}, mibs: {} };
  const dirs = new Set<string>([dir]);
  let changed = 0;
  let metadataMoved = false; // same bytes, new modification time: worth a version so the next sync skips the download

  const keep = async (kind: 'schemas' | 'mibs', rel: string, data: Buffer | undefined, known: Entry | undefined, modified?: string) => {
    const target = join(dir, kind, rel);
    dirs.add(dirname(target));
    await fs.mkdir(dirname(target), { recursive: true });
    const entry: Entry = data ? { size: data.length, sha256: sha256(data), ...(modified ? { modified } : {}) } : known!;
    if (known && oldDir && known.sha256 === entry.sha256) {
      await fs.link(join(oldDir, kind, rel), target).catch(() => fs.copyFile(join(oldDir, kind, rel), target));
      if (modified !== undefined && known.modified !== modified) metadataMoved = true;
    } else {
      await writeSynced(target, data!);
      changed++;
    }
    manifest[kind][rel] = entry;
  };

  const schemas = listed.schemas.filter((s) => {
    if (s.path.split('/')[0] !== RESERVED_TOP_DIR) return true;
    o.log.warn(
      { path: s.path },
      `schema file not synced: /api/schemas/${RESERVED_TOP_DIR}/... is the registry proxy, so the manager cannot serve it; rename its folder`,
    );
    return false;
  });
  await eachLimited(schemas, async (s) => {
    const known = old?.schemas[s.path];
    if (known && known.size === s.size_bytes && known.modified === s.modified) return keep('schemas', s.path, undefined, known);
    const data = await http.get(`/api/schemas/${s.path.split('/').map(encodeURIComponent).join('/')}`);
    if (data) await keep('schemas', s.path, data, known, s.modified);
  });
  await eachLimited(listed.mibs, async (m) => {
    // The listing names each module's hash (a manager of an earlier release does not): an unchanged module is not fetched.
    const known = old?.mibs[`${m.name}.json`];
    if (known && m.sha256 && known.sha256 === m.sha256 && known.size === m.size_bytes) return keep('mibs', `${m.name}.json`, undefined, known);
    const data = await http.get(`/api/mibs/${m.name}`);
    if (data) await keep('mibs', `${m.name}.json`, data, old?.mibs[`${m.name}.json`]);
  });
  await fs.mkdir(join(dir, 'schemas'), { recursive: true });
  await fs.mkdir(join(dir, 'mibs'), { recursive: true });

  for (const kind of ['schemas', 'mibs'] as const) for (const rel of Object.keys(old?.[kind] ?? {})) if (!(rel in manifest[kind])) changed++;
  const same = !!old && changed === 0 && !metadataMoved;
  if (!same) {
    await writeSynced(join(dir, MANIFEST), Buffer.from(JSON.stringify(manifest)));
    // Every name in the version reaches the disk before the switch makes it visible.
    for (const d of [...dirs, join(dir, 'schemas'), join(dir, 'mibs')].sort((a, b) => b.length - a.length)) await syncDir(d);
  }
  return { manifest, changed, same };
}

/** Whether the listings match the current copy exactly (a manager that lists no module hash never does). */
function unchanged(listed: { schemas: SchemaListing[]; mibs: MibListing[] }, m: Manifest): boolean {
  const schemas = listed.schemas.filter((s) => s.path.split('/')[0] !== RESERVED_TOP_DIR);
  if (schemas.length !== Object.keys(m.schemas).length || listed.mibs.length !== Object.keys(m.mibs).length) return false;
  for (const s of schemas) {
    const known = m.schemas[s.path];
    if (!known || known.size !== s.size_bytes || known.modified !== s.modified) return false;
  }
  for (const x of listed.mibs) {
    const known = m.mibs[`${x.name}.json`];
    if (!known || !x.sha256 || known.sha256 !== x.sha256 || known.size !== x.size_bytes) return false;
  }
  return true;
}

interface SchemaListing {
  path: string;
  size_bytes: number;
  modified: string;
}

interface MibListing {
  name: string;
  size_bytes: number;
  sha256?: string;
}

/** GETs against the manager; what the manager refuses (401, 404 on a list...) is an Error that says why. */
function client(o: SyncOptions) {
  const timeoutMs = o.timeoutMs ?? 10_000;
  const headers: Record<string, string> = o.apiKey ? { 'x-api-key': o.apiKey } : {};

  const fetchBytes = async (path: string): Promise<{ status: number; body: Buffer; url: string }> => {
    const url = new URL(path, o.managerUrl).toString();
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status >= 500) throw new ManagerUnavailable(`GET ${url}: HTTP ${res.status} ${detail(body)}`);
      return { status: res.status, body, url };
    } catch (e) {
      if (e instanceof ManagerUnavailable) throw e;
      const why = e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : errorMessage((e as Error).cause ?? e);
      throw new ManagerUnavailable(`GET ${url}: ${why}`);
    }
  };

  const refused = (r: { status: number; body: Buffer; url: string }) => {
    const hint = r.status === 401 || r.status === 403 ? ": set SVC_API_KEY to the manager's API key" : '';
    return new Error(`the manager refused GET ${r.url} with HTTP ${r.status} (${detail(r.body)})${hint}`);
  };

  // `valid` sees one element of the answer's list (any JSON value): it checks the fields it needs.
  const list = async <T>(path: string, valid: (x: { readonly [K in keyof T]?: unknown } | null | undefined) => boolean): Promise<T[]> => {
    const r = await fetchBytes(path);
    if (r.status !== 200) throw refused(r);
    let body: unknown;
    try {
      body = JSON.parse(r.body.toString('utf8'));
    } catch {
      throw new Error(`GET ${r.url} did not answer JSON: is SVC_MANAGER_URL the manager's API address?`);
    }
    if (!Array.isArray(body) || !body.every(valid))
      throw new Error(`GET ${r.url} did not answer a list of files: is SVC_MANAGER_URL the manager's API address?`);
    return body as T[];
  };

  return {
    listSchemas: async () =>
      (
        await list<SchemaListing>('/api/schemas', (x) => typeof x?.path === 'string' && Number.isInteger(x.size_bytes) && typeof x.modified === 'string')
      ).filter((s) => {
        if (safeSchemaPath(s.path)) return true;
        o.log.warn({ path: s.path }, 'schema path from the manager refused: it could leave the schema folder');
        return false;
      }),
    listMibs: async () =>
      (await list<MibListing>('/api/mibs', (x) => typeof x?.name === 'string' && Number.isInteger(x.size_bytes))).filter((m) => {
        if (MODULE_NAME.test(m.name)) return true;
        o.log.warn({ module: m.name }, 'MIB module name from the manager refused');
        return false;
      }),
    /** The bytes, or undefined when the file went away since the listing (the next sync drops it). */
    get: async (path: string): Promise<Buffer | undefined> => {
      const r = await fetchBytes(path);
      if (r.status === 404) {
        o.log.debug({ url: r.url }, 'deleted on the manager since the listing');
        return undefined;
      }
      if (r.status !== 200) throw refused(r);
      return r.body;
    },
  };
}

const detail = (body: Buffer) => {
  try {
    const d = (JSON.parse(body.toString('utf8')) as { detail?: unknown }).detail;
    if (typeof d === 'string') return d;
  } catch {
    // not the API's {detail}
  }
  return body.toString('utf8').slice(0, 200);
};

/** A listed path as the manager's SchemaStore gives it: relative, `/`-separated, no `..`, no hidden names. */
function safeSchemaPath(p: string): boolean {
  try {
    const segs = relativeSegments(p);
    return segs.length > 0 && segs.join('/') === p && !segs.some((s) => s.startsWith('.'));
  } catch {
    return false;
  }
}

/** The version `current` points to, with its manifest; undefined before the first sync. */
async function currentVersion(root: string): Promise<{ n: number; manifest: Manifest } | undefined> {
  let target: string;
  try {
    target = await fs.readlink(join(root, CURRENT));
  } catch {
    return undefined;
  }
  const n = Number(target);
  if (!Number.isInteger(n) || n <= 0) return undefined;
  const manifest = await readJsonFile<Manifest>(join(root, target, MANIFEST)).catch(() => undefined);
  return manifest?.format === 1 && manifest.schemas && manifest.mibs ? { n, manifest } : undefined;
}

/** Every file of the manifest is there with its size (nobody removed part of the copy). */
async function complete(dir: string, m: Manifest): Promise<boolean> {
  for (const kind of ['schemas', 'mibs'] as const) {
    for (const [rel, e] of Object.entries(m[kind])) {
      const st = await fs.stat(join(dir, kind, rel)).catch(() => undefined);
      if (!st?.isFile() || st.size !== e.size) return false;
    }
  }
  return true;
}

async function versionNumbers(root: string): Promise<number[]> {
  return (await fs.readdir(root)).filter((f) => /^[1-9]\d*$/.test(f)).map(Number);
}

/** Points `link` at `target` by renaming a fresh symlink over it (atomic for readers). */
async function replaceLink(link: string, target: string): Promise<void> {
  const tmp = join(dirname(link), `.link-${randomBytes(6).toString('hex')}`);
  await fs.symlink(target, tmp);
  try {
    await fs.rename(tmp, link);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await syncDir(dirname(link));
}

async function switchTo(root: string, n: number): Promise<void> {
  await replaceLink(join(root, CURRENT), String(n));
}

/** The fixed links `<dataDir>/schemas` and `<dataDir>/mibs` (checked only unless `create`); a real folder there is not ours to replace. */
async function linkDirs(dataDir: string, create = true): Promise<void> {
  for (const kind of ['schemas', 'mibs']) {
    const link = join(dataDir, kind);
    const target = join(SYNC, CURRENT, kind);
    const st = await fs.lstat(link).catch(() => undefined);
    if (st && !st.isSymbolicLink()) {
      throw new Error(
        `${link} exists and is not the link to the synced copy (${join(dataDir, target)}): move it away, the worker syncs ${kind} from the manager`,
      );
    }
    if (!create || (st && (await fs.readlink(link)) === target)) continue;
    await replaceLink(link, target);
  }
}

/** Removes every version but `keep`, and links left by a crash. */
async function prune(root: string, keep: (number | undefined)[]): Promise<void> {
  const kept = new Set(keep.filter((k) => k !== undefined).map(String));
  for (const f of await fs.readdir(root)) {
    if (f === CURRENT || kept.has(f)) continue;
    await fs.rm(join(root, f), { recursive: true, force: true });
  }
}

async function writeSynced(file: string, data: Buffer): Promise<void> {
  const fh = await fs.open(file, 'wx', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** `fn` over `items`, PARALLEL at a time; after the first failure no new item starts, and that failure is thrown. */
async function eachLimited<T>(items: T[], fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { e: unknown } | undefined;
  const lane = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!;
      await fn(item).catch((e: unknown) => void (failure ??= { e }));
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, lane));
  if (failure) throw failure.e;
}

/**
 * The synced modules as CompiledModule, for the worker's MIB index: the engine's resolution
 * (mib/resolver.ts storeMibs) compiles sources and does not read SVC_MIB_DIR.
 */
export async function readSyncedMibs(mibDir: string): Promise<CompiledModule[]> {
  const files = (await fs.readdir(mibDir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(files.map(async (f) => compiledFromJson(await fs.readFile(join(mibDir, f), 'utf8'), f)));
}

/**
 * A worker's MIBs (PluginContext.mibs of its runs): those synced from the manager into `mibDir`
 * (SVC_DATA_DIR/mibs, before the run) go first, the modules `base` compiles here fill in the rest.
 */
export function syncedMibsFirst(base: MibResolver, mibDir: string): MibResolver {
  return {
    async index(dirs) {
      const ix = await base.index(dirs);
      const synced = await readSyncedMibs(mibDir);
      if (!synced.length) return ix;
      const names = new Set(synced.map((m) => m.module));
      return new MibIndex([...synced, ...ix.modules().filter((m) => !names.has(m.module))]);
    },
  };
}
