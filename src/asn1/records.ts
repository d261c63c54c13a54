// From decoded ASN.1 values to pipeline records: the top-level value as a record, and split_path
// (one record per element of a list inside the document, with split_path_context values copied in).
/** A record: the same shape as a pipeline record (plugins/types.ts Rec), named here so asn1 imports no plugin code. */
type Rec = Record<string, unknown>;

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A decoded top-level value as a record: SEQUENCE / SET / CHOICE are objects already. */
export const asRecord = (v: unknown): Rec => (isObject(v) ? v : { _value: v });

/** The value at a dot path (`value.listOfServiceData`); array elements by index (`items.0`). */
export function atPath(v: unknown, path: string): unknown {
  let cur = v;
  for (const seg of path.split('.')) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

/**
 * The records of a document split at `path`: each list element, with `context` (output name ->
 * dot path in the document) copied in first so the element's own fields win. Throws when the path
 * does not lead to a list.
 */
export function splitAt(doc: unknown, path: string, context: Record<string, string> | undefined): Rec[] {
  const list = atPath(doc, path);
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new Error(`split_path '${path}' leads to a ${typeof list}, not a list`);
  let ctx: Rec | undefined;
  if (context) {
    ctx = {};
    for (const [name, p] of Object.entries(context)) {
      const v = atPath(doc, p);
      if (v !== undefined) ctx[name] = v;
    }
  }
  return list.map((item) => (ctx ? { ...ctx, ...asRecord(item) } : asRecord(item)));
}
