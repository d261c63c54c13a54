// gNMI paths as text, the way gnmic and the gNMI path conventions write them:
// `origin:/elem/elem[key=value][key2=value2]/leaf`. parsePath() turns the configured subscription
// paths into Path messages; formatPath() writes the path of each received update (keys sorted by
// name, so one leaf always has one spelling). Inside a key value, `]` and `\` are escaped with `\`;
// `/` needs no escape there.

export interface PathElem {
  name: string;
  key?: Record<string, string>;
}

export interface GnmiPath {
  origin?: string;
  elem?: PathElem[];
  target?: string;
}

/** Parses `origin:/a/b[k=v]/c` (origin optional, leading `/` optional); throws with what is wrong. */
export function parsePath(text: string): GnmiPath {
  let rest = text.trim();
  let origin: string | undefined;
  if (!rest.startsWith('/')) {
    const colon = rest.indexOf(':');
    const stop = rest.search(/[/[]/);
    if (colon > 0 && (stop === -1 || colon < stop)) {
      origin = rest.slice(0, colon);
      rest = rest.slice(colon + 1);
    }
  }
  const elem: PathElem[] = [];
  let i = rest.startsWith('/') ? 1 : 0;
  while (i < rest.length) {
    let name = '';
    while (i < rest.length && rest[i] !== '/' && rest[i] !== '[') {
      if (rest[i] === ']') throw new Error(`'${text}': ']' without '['`);
      name += rest[i++];
    }
    if (!name) throw new Error(`'${text}': an empty path element (two '/' in a row, or a key without its element)`);
    const e: PathElem = { name };
    while (rest[i] === '[') {
      i++;
      let k = '';
      while (i < rest.length && rest[i] !== '=' && rest[i] !== ']') k += rest[i++];
      if (rest[i] !== '=' || !k) throw new Error(`'${text}': a key of '${name}' must be written [name=value]`);
      i++;
      let v = '';
      for (;;) {
        if (i >= rest.length) throw new Error(`'${text}': '[' without its closing ']'`);
        const ch = rest[i++]!;
        if (ch === '\\' && i < rest.length) v += rest[i++];
        else if (ch === ']') break;
        else v += ch;
      }
      (e.key ??= {})[k] = v;
    }
    elem.push(e);
    if (i < rest.length) {
      if (rest[i] !== '/') throw new Error(`'${text}': expected '/' after '${name}'`);
      i++;
      if (i === rest.length) break; // a trailing '/'
    }
  }
  return { ...(origin ? { origin } : {}), elem };
}

const escapeValue = (v: string) => v.replace(/[\\\]]/g, (c) => '\\' + c);

/** `origin:/a/b[k=v]`: the elements of `prefix` then those of `path`; the origin of either. */
export function formatPath(prefix: GnmiPath | null | undefined, path: GnmiPath | null | undefined): string {
  const origin = path?.origin || prefix?.origin;
  let s = origin ? `${origin}:` : '';
  const elems = [...(prefix?.elem ?? []), ...(path?.elem ?? [])];
  if (elems.length === 0) return s + '/';
  for (const e of elems) {
    s += '/' + e.name;
    if (e.key) for (const k of Object.keys(e.key).sort()) s += `[${k}=${escapeValue(e.key[k]!)}]`;
  }
  return s;
}
