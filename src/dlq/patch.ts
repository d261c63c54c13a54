// RFC 6902 JSON Patch on one record (replay edits). No package for it is in the dependencies; the
// six operations on plain JSON are short. A failing operation throws: the patch is all or nothing.
import { isDeepStrictEqual } from 'node:util';

export interface PatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

type Container = Record<string, unknown> | unknown[];

/** RFC 6901: '' is the whole document; '/a/b~1c' is ['a', 'b/c']. */
function tokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`'${pointer}' is not a JSON pointer (it must start with /)`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function index(arr: unknown[], t: string, forAdd: boolean, pointer: string): number {
  if (forAdd && t === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(t)) throw new Error(`${pointer}: '${t}' is not an array index`);
  const i = Number(t);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new Error(`${pointer}: index ${i} is out of range`);
  return i;
}

/** The container of the pointer's last token, and that token. */
function parentOf(doc: unknown, pointer: string): { parent: Container; key: string } {
  const ts = tokens(pointer);
  if (ts.length === 0) throw new Error('the whole record cannot be the target of this operation');
  let cur: unknown = doc;
  for (const t of ts.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[index(cur, t, false, pointer)];
    else if (cur && typeof cur === 'object' && Object.hasOwn(cur, t)) cur = (cur as Record<string, unknown>)[t];
    else throw new Error(`${pointer}: '${t}' does not exist`);
  }
  if (!cur || typeof cur !== 'object') throw new Error(`${pointer}: the parent is not an object or array`);
  return { parent: cur as Container, key: ts[ts.length - 1]! };
}

function get(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) return parent[index(parent, key, false, pointer)];
  if (!Object.hasOwn(parent, key)) throw new Error(`${pointer} does not exist`);
  return parent[key];
}

function add(doc: unknown, pointer: string, value: unknown) {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(index(parent, key, true, pointer), 0, value);
  else parent[key] = value;
}

function remove(doc: unknown, pointer: string): unknown {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) return parent.splice(index(parent, key, false, pointer), 1)[0];
  if (!Object.hasOwn(parent, key)) throw new Error(`${pointer} does not exist`);
  const v = parent[key];
  delete parent[key];
  return v;
}

/** Applies `ops` to a copy of `record`; returns the copy. */
export function applyPatch(record: Record<string, unknown>, ops: PatchOp[]): Record<string, unknown> {
  const doc = structuredClone(record);
  ops.forEach((o, n) => {
    const at = `patch[${n}] (${o.op} ${o.path})`;
    try {
      switch (o.op) {
        case 'add':
          add(doc, o.path, structuredClone(o.value));
          break;
        case 'remove':
          remove(doc, o.path);
          break;
        case 'replace':
          remove(doc, o.path);
          add(doc, o.path, structuredClone(o.value));
          break;
        case 'move': {
          if (o.from === undefined) throw new Error('move needs from');
          if (o.path.startsWith(`${o.from}/`)) throw new Error('a value cannot be moved into itself');
          add(doc, o.path, remove(doc, o.from));
          break;
        }
        case 'copy':
          if (o.from === undefined) throw new Error('copy needs from');
          add(doc, o.path, structuredClone(get(doc, o.from)));
          break;
        case 'test':
          if (!isDeepStrictEqual(get(doc, o.path), o.value)) throw new Error('the value differs');
          break;
        default:
          throw new Error(`unknown op '${(o as { op: unknown }).op}'`);
      }
    } catch (e) {
      throw new Error(`${at}: ${(e as Error).message}`, { cause: e });
    }
  });
  return doc;
}
