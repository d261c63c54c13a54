// CosNaming: a stringified name (`a.kind/b`, the Interoperable Naming Service syntax: components
// separated by '/', id and kind by '.', '\' escaping either) resolved through a NamingContext's
// `resolve` operation into the object reference it is bound to.
import type { CdrWriter } from './cdr.js';
import { CorbaClient, CorbaException } from './client.js';
import { readIor, whereOf, type ObjectRef } from './ior.js';

export interface NameComponent {
  id: string;
  kind: string;
}

export class NameError extends Error {
  override name = 'NameError';
}

/** `a.kind/b` → [{id: 'a', kind: 'kind'}, {id: 'b', kind: ''}]. */
export function parseName(text: string): NameComponent[] {
  if (!text) throw new NameError('an object name cannot be empty');
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\') {
      const n = text[i + 1];
      if (n === undefined) throw new NameError(`'${text}' ends with a lone '\\'`);
      cur += c + n;
      i++;
    } else if (c === '/') {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts.map((p) => {
    if (p === '') throw new NameError(`'${text}' has an empty component (a leading, trailing or doubled '/')`);
    let id = '';
    let kind: string | undefined;
    for (let i = 0; i < p.length; i++) {
      const c = p[i]!;
      if (c === '\\') {
        const n = p[++i]!;
        if (kind === undefined) id += n;
        else kind += n;
      } else if (c === '.') {
        if (kind !== undefined) throw new NameError(`the component '${p}' of '${text}' has more than one unescaped '.' (escape a dot inside an id as '\\.')`);
        kind = '';
      } else if (kind === undefined) id += c;
      else kind += c;
    }
    if (p === '.') return { id: '', kind: '' };
    return { id, kind: kind ?? '' };
  });
}

export const nameText = (name: NameComponent[]) => name.map((c) => (c.kind ? `${c.id}.${c.kind}` : c.id)).join('/');

const NOT_FOUND = 'IDL:omg.org/CosNaming/NamingContext/NotFound:1.0';
const CANNOT_PROCEED = 'IDL:omg.org/CosNaming/NamingContext/CannotProceed:1.0';
const INVALID_NAME = 'IDL:omg.org/CosNaming/NamingContext/InvalidName:1.0';
const REASONS = ['missing_node', 'not_context', 'not_object'];

const writeName = (name: NameComponent[]) => (w: CdrWriter) => {
  w.ulong(name.length);
  for (const c of name) {
    w.string(c.id);
    w.string(c.kind);
  }
};

/** NamingContext::resolve(name) on the context `ns`; NotFound and its kin become clear errors. */
export async function resolveName(client: CorbaClient, ns: ObjectRef, name: NameComponent[], timeoutMs: number): Promise<ObjectRef> {
  let result;
  try {
    ({ result } = await client.invoke(ns, 'resolve', writeName(name), { timeoutMs }));
  } catch (e) {
    if (e instanceof CorbaException && e.kind === 'user' && e.body) {
      const shown = nameText(name);
      if (e.id === NOT_FOUND) {
        const why = e.body.ulong();
        const rest: NameComponent[] = [];
        const n = e.body.ulong();
        for (let i = 0; i < n; i++) rest.push({ id: e.body.string(), kind: e.body.string() });
        throw new NameError(
          `'${shown}' is not bound in the naming service at ${whereOf(ns)} (NotFound: ${REASONS[why] ?? why} at '${nameText(rest)}'): check object_name`,
        );
      }
      if (e.id === INVALID_NAME) throw new NameError(`the naming service at ${whereOf(ns)} calls '${shown}' an invalid name`);
      if (e.id === CANNOT_PROCEED) throw new NameError(`the naming service at ${whereOf(ns)} cannot proceed resolving '${shown}' (CannotProceed)`);
    }
    throw e;
  }
  const ref = readIor(result);
  if (ref.profiles.length === 0) throw new NameError(`'${nameText(name)}' is bound to a nil or non-IIOP reference in the naming service at ${whereOf(ns)}`);
  return ref;
}
