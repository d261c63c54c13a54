// ${VAR} and ${VAR:-default} in string values, resolved after parsing so that every error and every
// line number still points at the YAML the user wrote. `$$` writes a literal `$`.
//
// Which variables a pipeline may read is SVC_CONFIG_ENV_ALLOW (default: all but svc's own SVC_*,
// which hold its API key and session secret): a reference to any other is an error, and its value
// is never read. The expanded config is for running only: it carries (out of band, see
// withExpansion) each value as written, which is what the API shows (asWritten), and the values of
// secret-named variables, which runs mask in logs, errors and dead letters.
import { isSecretVariable } from '../core/secrets.js';

const REF = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export type ConfigPath = (string | number)[];

export interface EnvRef {
  path: ConfigPath;
  name: string;
}

/** What expansion did to a config. */
export interface Expansion {
  /** Each string value that held a reference (or `$$`), as written, by its path in the config. */
  written: { path: ConfigPath; text: string }[];
  /** Values read from variables whose names say they are secrets: masked wherever a run reports. */
  secrets: string[];
}

export interface Interpolated {
  value: unknown;
  /** Variables referenced without a default that are not set. */
  unset: EnvRef[];
  /** Variables SVC_CONFIG_ENV_ALLOW does not allow: left as written, never read. */
  denied: EnvRef[];
  expansion: Expansion;
}

/**
 * Whether SVC_CONFIG_ENV_ALLOW's entries let a pipeline read `name`: an entry is a name, or a prefix
 * ending in `*`. svc's own SVC_* variables are matched only by entries that start with `SVC_`, so
 * `*` (the default) and a prefix like `S*` never reach them.
 */
export function envAllowed(name: string, allow: readonly string[]): boolean {
  return allow.some((a) => {
    if (name.startsWith('SVC_') && !a.startsWith('SVC_')) return false;
    return a.endsWith('*') ? name.startsWith(a.slice(0, -1)) : name === a;
  });
}

/** A copy of `value` with the references it may read replaced. */
export function interpolate(value: unknown, env: Record<string, string | undefined>, allow: readonly string[]): Interpolated {
  const out: Interpolated = { value: undefined, unset: [], denied: [], expansion: { written: [], secrets: [] } };
  const secrets = new Set<string>();
  const walk = (v: unknown, path: ConfigPath): unknown => {
    if (typeof v === 'string') {
      if (!v.includes('$')) return v;
      let changed = false;
      const r = v.replace(REF, (m, name: string | undefined, def: string | undefined) => {
        changed = true;
        if (m === '$$') return '$';
        if (!envAllowed(name!, allow)) {
          out.denied.push({ path, name: name! });
          return m;
        }
        const e = env[name!];
        if (e !== undefined && e !== '') {
          if (isSecretVariable(name!)) secrets.add(e);
          return e;
        }
        if (def !== undefined) return def;
        if (e === undefined) {
          out.unset.push({ path, name: name! });
          return m; // keep the reference: the unset variable is the one error to report here
        }
        return e;
      });
      if (changed) out.expansion.written.push({ path, text: v });
      return r;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, i]));
    if (v && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) o[k] = walk(x, [...path, k]);
      return o;
    }
    return v;
  };
  out.value = walk(value, []);
  out.expansion.secrets = [...secrets];
  return out;
}

// A symbol, not a field: JSON (API answers, structured clones to worker threads) leaves it out, and
// object spreads ({...config, source}) of the replay and test harnesses keep it.
const EXPANSION = Symbol('svc.config.expansion');

/** Attaches `e` to `config` (when anything was expanded) and returns `config`. */
export function withExpansion<T extends object>(config: T, e: Expansion): T {
  if (e.written.length) Object.assign(config, { [EXPANSION]: e });
  return config;
}

/** What expansion did to a config, if it expanded anything. */
export function expansionOf(config: object | undefined): Expansion | undefined {
  return config ? (config as { [EXPANSION]?: Expansion })[EXPANSION] : undefined;
}

/** A copy of `config` with each expanded string put back as written: what the API shows. */
export function asWritten<T extends object>(config: T): T {
  const e = expansionOf(config);
  if (!e) return config;
  const copy = structuredClone(config);
  for (const { path, text } of e.written) {
    let node: unknown = copy;
    for (const seg of path.slice(0, -1)) node = node && typeof node === 'object' ? (node as Record<string | number, unknown>)[seg] : undefined;
    const last = path[path.length - 1];
    // A value the schema moved or dropped is not in the config to show.
    if (last !== undefined && node && typeof node === 'object' && Object.hasOwn(node, last)) (node as Record<string | number, unknown>)[last] = text;
  }
  return copy;
}
