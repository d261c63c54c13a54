// The agents one snmp_poll run polls: `host` (one agent), a `targets` list, or a `targets_file`
// read at the start of each run. Each target inherits the top-level SNMP fields and may override
// its port, community, version and SNMPv3 fields; `_target` is its `name`, else host:port.
import { readFile, stat } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { SourceError } from '../../../core/errors.js';
import type { SnmpVersion } from '../../../snmp/message.js';
import type { TargetOptions } from '../../../snmp/session.js';
import { agentSessionOptions, PER_AGENT_KEYS, type SnmpFields } from '../../common/snmp.js';

export interface TargetEntry extends SnmpFields {
  host: string;
  name?: string;
}

export interface PollTarget {
  /** `_target` of its records: the entry's name, else host:port. */
  id: string;
  host: string;
  port: number;
  version: SnmpVersion;
  options: TargetOptions;
}

const OVERRIDES = PER_AGENT_KEYS;

/** `host`, `host:port`, `[v6]:port` or a bare IPv6 address. */
export function splitHostPort(text: string): { host: string; port?: number } {
  const s = text.trim();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1]!, ...(v6[2] ? { port: Number(v6[2]) } : {}) };
  const c = s.lastIndexOf(':');
  if (c > 0 && s.indexOf(':') === c && /^\d+$/.test(s.slice(c + 1))) return { host: s.slice(0, c), port: Number(s.slice(c + 1)) };
  return { host: s };
}

/** The identity of a target (`_target`): its name, else host:port. */
export function targetId(entry: TargetEntry, top: SnmpFields): string {
  if (entry.name !== undefined) return entry.name;
  const host = entry.host.trim();
  const port = entry.port ?? top.port ?? 161;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The SNMP session options of one target: its own fields over the top-level ones. */
export function targetOf(entry: TargetEntry, top: SnmpFields & { timeout: number; retries: number }): PollTarget {
  const host = entry.host.trim();
  const id = targetId(entry, top);
  const options = agentSessionOptions(host, entry, top, `snmp_poll: target ${id}`);
  return { id, host, port: options.port, version: options.version, options };
}

/**
 * A targets file: a YAML or JSON list (of `host[:port]` strings or of objects shaped like `targets`
 * entries), or plain text with one `host[:port]` per line (blank lines and `#` comments skipped).
 */
export function parseTargetsFile(text: string, file: string): TargetEntry[] {
  const body = text.replace(/^\uFEFF/, '');
  const first = body.replace(/^(\s*#.*\n|\s*\n)*/, '').trimStart();
  if (first.startsWith('[') || first.startsWith('- ') || first.startsWith('-\n') || first === '-') {
    let list: unknown;
    try {
      list = parseYaml(body);
    } catch (e) {
      throw new SourceError(`snmp_poll: targets_file ${file}: not a YAML/JSON list: ${(e as Error).message}`);
    }
    if (!Array.isArray(list)) throw new SourceError(`snmp_poll: targets_file ${file}: expected a list of targets`);
    return list.map((item, i) => {
      if (typeof item === 'string') return splitHostPort(item);
      if (item && typeof item === 'object' && typeof (item as TargetEntry).host === 'string') return checkEntry(item as TargetEntry, `${file}: entry ${i + 1}`);
      throw new SourceError(`snmp_poll: targets_file ${file}: entry ${i + 1} is neither "host[:port]" nor an object with host`);
    });
  }
  const out: TargetEntry[] = [];
  for (const raw of body.split(/\r?\n/)) {
    const line = raw.replace(/#.*$/, '').trim();
    if (line) out.push(splitHostPort(line));
  }
  return out;
}

const ENTRY_KEYS = new Set<string>(['host', 'name', ...OVERRIDES]);
function checkEntry(e: TargetEntry, where: string): TargetEntry {
  for (const k of Object.keys(e))
    if (!ENTRY_KEYS.has(k)) throw new SourceError(`snmp_poll: targets_file ${where}: unknown field ${k}; use ${[...ENTRY_KEYS].join(', ')}`);
  if (e.version !== undefined) e.version = String(e.version) as SnmpVersion;
  if (e.version !== undefined && !['1', '2c', '3'].includes(e.version)) throw new SourceError(`snmp_poll: targets_file ${where}: version must be 1, 2c or 3`);
  if (e.port !== undefined && (!Number.isInteger(e.port) || e.port < 1 || e.port > 65535))
    throw new SourceError(`snmp_poll: targets_file ${where}: port must be 1-65535`);
  return e;
}

/**
 * The last parse of each targets file, kept while the file is unchanged (same inode, size, mtime
 * and ctime): the shards of a sharded run (issue 33) and the cycles of a schedule read the same
 * file again and again. A few files at most; the entries are never changed after the parse.
 */
const parsed = new Map<string, { stamp: string; entries: readonly TargetEntry[] }>();
const PARSED_FILES = 8;

async function readTargetsFile(file: string): Promise<readonly TargetEntry[]> {
  let text: string;
  let stamp: string;
  try {
    const st = await stat(file, { bigint: true });
    stamp = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    const hit = parsed.get(file);
    if (hit?.stamp === stamp) return hit.entries;
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new SourceError(`snmp_poll: cannot read targets_file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const entries = parseTargetsFile(text, file);
  // Written between the stat and the read: the stamp may be the old one; a later run parses again.
  parsed.delete(file);
  if (parsed.size >= PARSED_FILES) parsed.delete(parsed.keys().next().value!);
  parsed.set(file, { stamp, entries });
  return entries;
}

/** Every entry of the config, its identity checked unique. */
async function entriesOf(c: { host?: string; targets?: TargetEntry[]; targets_file?: string }, top: SnmpFields) {
  let entries: readonly TargetEntry[];
  if (c.targets_file) entries = await readTargetsFile(c.targets_file);
  else if (c.targets) entries = c.targets;
  else if (c.host) entries = [{ host: c.host }];
  else throw new SourceError('snmp_poll: set host, targets or targets_file');
  const ids = entries.map((e) => targetId(e, top));
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new SourceError(`snmp_poll: target ${id} is listed twice; give each entry its own name`);
    seen.add(id);
  }
  return { entries, ids };
}

/** The identities of the run's targets, in config order (what a manager cuts into shards). */
export async function loadTargetIds(c: { host?: string; targets?: TargetEntry[]; targets_file?: string }, top: SnmpFields): Promise<string[]> {
  return (await entriesOf(c, top)).ids;
}

/**
 * The run's targets, in config order; with `keep`, only those whose identity it keeps (a shard
 * builds the session options of its own targets only, not of the whole fleet).
 */
export async function loadTargets(
  c: { host?: string; targets?: TargetEntry[]; targets_file?: string },
  top: SnmpFields & { timeout: number; retries: number },
  keep?: (id: string) => boolean,
): Promise<PollTarget[]> {
  const { entries, ids } = await entriesOf(c, top);
  const out: PollTarget[] = [];
  entries.forEach((e, i) => {
    if (!keep || keep(ids[i]!)) out.push(targetOf(e, top));
  });
  return out;
}
