// Loading a .proto schema with protobufjs and mapping messages to records and back.
// The mapping: field names as written in the .proto (keepCase, as Kafka Connect's ProtobufConverter),
// enums as their names, bytes as base64 and NaN/Infinity as strings (proto3 JSON mapping), 64-bit
// integers as numbers when they are safe and as decimal strings beyond 2^53 (the proto3 JSON
// mapping would always write strings; records keep numbers where they can, as Kafka Connect does).
// Unset fields carry their defaults (Kafka Connect gives every field a value too).
import { distance } from 'fastest-levenshtein';
import protobuf from 'protobufjs';
import { climbs, schemaPath } from '../../common/schema-file.js';
import type { Rec } from '../../types.js';

export class ProtoSchemaError extends Error {
  override name = 'ProtoSchemaError';
}

/** Loads a .proto file (a relative one under `schemaDir`) and its imports; errors name the file that is wrong and its line. */
export function loadProto(file: string, schemaDir: string | undefined): { root: protobuf.Root; path: string } {
  const path = schemaPath(file, schemaDir);
  const root = new protobuf.Root();
  const defaultResolve = root.resolvePath.bind(root);
  root.resolvePath = (origin, target) => {
    if (climbs(target)) throw new ProtoSchemaError(`schema file '${origin || path}': import '${target}' climbs with '..': path traversal is refused`);
    return defaultResolve(origin, target);
  };
  try {
    root.loadSync(path, { keepCase: true });
    root.resolveAll();
  } catch (e) {
    if (e instanceof ProtoSchemaError) throw e;
    // protobufjs names the line but not the file; the file being parsed is the last one it opened.
    const current = root.files.at(-1) ?? path;
    const msg = (e as Error).message;
    const where = (e as NodeJS.ErrnoException).code === 'ENOENT' ? `schema file '${path}': import not found: ${msg}` : `schema file '${current}': ${msg}`;
    throw new ProtoSchemaError(where);
  }
  return { root, path };
}

/** Every message type of the root, by full name without the leading dot. */
function allTypes(ns: protobuf.NamespaceBase, out: protobuf.Type[] = []): protobuf.Type[] {
  for (const n of ns.nestedArray) {
    if (n instanceof protobuf.Type) out.push(n);
    if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) allTypes(n as protobuf.NamespaceBase, out);
  }
  return out;
}

const fullName = (t: protobuf.ReflectionObject) => t.fullName.replace(/^\./, '');

/** The message type named `name` (full name, or a simple name that is unique); throws with the nearest names. */
export function findType(root: protobuf.Root, name: string, where: string): protobuf.Type {
  const types = allTypes(root).filter((t) => !fullName(t).startsWith('google.protobuf.'));
  const exact = types.find((t) => fullName(t) === name.replace(/^\./, ''));
  if (exact) return exact;
  // A simple or partly qualified name (Sample, Sample.Nested) matches the end of one full name.
  const bySimple = types.filter((t) => fullName(t).endsWith('.' + name.replace(/^\./, '')));
  if (bySimple.length === 1) return bySimple[0]!;
  if (bySimple.length > 1) throw new ProtoSchemaError(`message '${name}' is ambiguous in ${where}: ${bySimple.map(fullName).join(', ')}; give the full name`);
  const names = types.map(fullName);
  const near = names
    .map((n) => ({ n, d: Math.min(distance(name, n), distance(name, n.split('.').at(-1)!)) }))
    .sort((a, b) => a.d - b.d || a.n.localeCompare(b.n))
    .slice(0, 3)
    .map((x) => x.n);
  const hint = near.length ? `; nearest: ${near.join(', ')}` : '; it defines no messages';
  throw new ProtoSchemaError(`message '${name}' not found in ${where}${hint}`);
}

/**
 * Confluent's message indexes for a type: its position among the messages of its file, then among
 * the nested messages of each enclosing message ([0] for the first top-level message).
 */
export function messageIndexes(t: protobuf.Type): number[] {
  const out: number[] = [];
  let cur: protobuf.ReflectionObject = t;
  while (cur.parent && cur.parent instanceof protobuf.Type) {
    const siblings: protobuf.Type[] = cur.parent.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);
    out.unshift(siblings.indexOf(cur as protobuf.Type));
    cur = cur.parent;
  }
  // Top level: the messages of the same file, in declaration order, across the package namespaces.
  const top = allTypes(t.root).filter((x) => !(x.parent instanceof protobuf.Type) && x.filename === (cur as protobuf.Type).filename);
  out.unshift(top.indexOf(cur as protobuf.Type));
  return out;
}

const LONG_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const SAFE_DIGITS = /^-?\d{1,15}$/;

/** A 64-bit value as string (toObject with longs: String) -> number when it is exact. */
const safeLong = (s: unknown): unknown => {
  if (typeof s !== 'string') return s;
  if (SAFE_DIGITS.test(s)) return Number(s);
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : s;
};

type Fix = (o: Rec) => void;

/** Turns the 64-bit strings of a converted message into numbers where safe; undefined when the type has none. */
function longFixer(t: protobuf.Type, seen = new Map<protobuf.Type, Fix | undefined | null>()): Fix | undefined {
  if (seen.has(t)) {
    const f = seen.get(t);
    // A recursive type still being built: call through the map later.
    return f === null ? (o) => seen.get(t)?.(o) : (f ?? undefined);
  }
  seen.set(t, null);
  const steps: Fix[] = [];
  for (const f of t.fieldsArray) {
    const name = f.name;
    if (LONG_TYPES.has(f.type) || (f.map && LONG_TYPES.has(f.type))) {
      if (f.map)
        steps.push((o) => {
          const m = o[name] as Rec | undefined;
          if (m) for (const k in m) m[k] = safeLong(m[k]);
        });
      else if (f.repeated)
        steps.push((o) => {
          const a = o[name] as unknown[] | undefined;
          if (a) for (let i = 0; i < a.length; i++) a[i] = safeLong(a[i]);
        });
      else
        steps.push((o) => {
          if (o[name] !== undefined) o[name] = safeLong(o[name]);
        });
    } else if (f.resolvedType instanceof protobuf.Type) {
      const sub = longFixer(f.resolvedType, seen);
      if (!sub) continue;
      if (f.map)
        steps.push((o) => {
          const m = o[name] as Record<string, Rec> | undefined;
          if (m) for (const k in m) if (m[k]) sub(m[k]);
        });
      else if (f.repeated)
        steps.push((o) => {
          const a = o[name] as Rec[] | undefined;
          if (a) for (const x of a) if (x) sub(x);
        });
      else
        steps.push((o) => {
          const x = o[name] as Rec | null | undefined;
          if (x) sub(x);
        });
    }
  }
  const fix: Fix | undefined = steps.length
    ? (o) => {
        for (const s of steps) s(o);
      }
    : undefined;
  seen.set(t, fix);
  return fix;
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String, defaults: true, arrays: true, objects: true, json: true };

/** Converters between messages of a type and records. */
export function messageMapping(t: protobuf.Type): { toRecord: (bytes: Uint8Array) => Rec; fromRecord: (r: Rec) => Uint8Array } {
  const fix = longFixer(t);
  // toObject puts repeated and map fields first; records keep the .proto order (CSV columns).
  const names = t.fieldsArray.map((f) => f.name);
  return {
    toRecord(bytes) {
      const o = t.toObject(t.decode(bytes), TO_OBJECT) as Rec;
      if (fix) fix(o);
      const r: Rec = {};
      for (const n of names) if (n in o) r[n] = o[n];
      return r;
    },
    fromRecord: (r) => t.encode(t.fromObject(r)).finish(),
  };
}

/** The varint at `pos`: its value and end; `more` when the buffer ends inside it; `bad` past 10 bytes. */
export function readVarint(b: Buffer, pos: number): { value: number; end: number } | 'more' | 'bad' {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (pos + i >= b.length) return 'more';
    const byte = b[pos + i]!;
    v += (byte & 0x7f) * mul;
    mul *= 128;
    if ((byte & 0x80) === 0) return { value: v, end: pos + i + 1 };
  }
  return 'bad';
}

export function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 128) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
