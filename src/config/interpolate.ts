// ${VAR} and ${VAR:-default} in string values, resolved after parsing so that every error and every
// line number still points at the YAML the user wrote. `$$` writes a literal `$`.

const REF = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export interface UnsetVar {
  path: (string | number)[];
  name: string;
}

/** Returns a copy of `value` with references replaced; unset required variables are reported. */
export function interpolate(
  value: unknown,
  env: Record<string, string | undefined>,
  unset: UnsetVar[],
  path: (string | number)[] = [],
): unknown {
  if (typeof value === 'string') {
    if (!value.includes('$')) return value;
    return value.replace(REF, (m, name: string | undefined, def: string | undefined) => {
      if (m === '$$') return '$';
      const v = env[name!];
      if (v !== undefined && v !== '') return v;
      if (def !== undefined) return def;
      if (v === undefined) {
        unset.push({ path, name: name! });
        return m; // keep the reference: the unset variable is the one error to report here
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, unset, [...path, i]));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, unset, [...path, k]);
    return out;
  }
  return value;
}
