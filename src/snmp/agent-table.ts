// The rows an agent serves, sorted in OID order and BER-encoded once when the table is built: a
// constant's whole varbind, a computed value's OID. An answer then copies bytes (a walk's run of
// constants in one copy) and encodes only the values that move, fresh for each request.
import { BerWriter, Tag } from './ber.js';
import type { MibEntry } from './device.js';
import { writeTypedValue, writeVarBind } from './message.js';
import { compareOids, oidParts, type SnmpType, type VarBind } from './values.js';

export interface Row {
  oid: string;
  parts: number[];
  type: SnmpType;
  value: MibEntry['value'];
}

/** Rows sorted in OID order with their index and encoding: immutable, so agents can share one. */
export interface AgentTable {
  readonly rows: readonly Row[];
  readonly index: ReadonlyMap<string, number>;
  /** Row i's bytes are ber[at[i], at[i + 1]): its whole varbind when constant[i] is 1, else its OID. */
  readonly ber: Buffer;
  readonly at: Uint32Array;
  readonly constant: Uint8Array;
}

/** Builds a shareable table from entries (a later entry for the same OID wins). */
export function agentTable(entries: Iterable<MibEntry | VarBind>): AgentTable {
  const byOid = new Map<string, Row>();
  for (const r of entries) byOid.set(r.oid, { oid: r.oid, type: r.type, value: r.value as MibEntry['value'], parts: (r as Row).parts ?? oidParts(r.oid) });
  const rows = [...byOid.values()].sort((a, b) => compareOids(a.parts, b.parts));
  const w = new BerWriter(rows.length * 32 + 64);
  const at = new Uint32Array(rows.length + 1);
  const constant = new Uint8Array(rows.length);
  rows.forEach((r, i) => {
    at[i] = w.pos;
    if (typeof r.value !== 'function') {
      try {
        w.begin(Tag.Sequence);
        w.oid(r.parts);
        writeTypedValue(w, r.type, r.value);
        w.end();
        constant[i] = 1;
        return;
      } catch {
        // A value that cannot be encoded fails the requests that reach it (as it always did), not the table.
        w.reset().pos = at[i]!;
      }
    }
    w.oid(r.parts);
  });
  at[rows.length] = w.pos;
  return { rows, index: new Map(rows.map((r, i) => [r.oid, i])), ber: w.toBuffer(), at, constant };
}

/** Index of the first row after the OID (GETNEXT order), or rows.length. */
export function rowAfter(t: AgentTable, oid: string): number {
  const hit = t.index.get(oid);
  if (hit !== undefined) return hit + 1;
  const p = oidParts(oid);
  const rows = t.rows;
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareOids(rows[mid]!.parts, p) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The VarBindList content of one answer, written into one reused buffer, with the end of every
 * varbind so a GETBULK answer can be cut to fit. Answers are built and sent synchronously, so all
 * agents of the process share one.
 */
export class VarBindBody {
  private readonly w = new BerWriter(8192);
  /** Offset after each varbind. */
  readonly ends: number[] = [];

  reset(): void {
    this.w.reset();
    this.ends.length = 0;
  }

  get count(): number {
    return this.ends.length;
  }

  get length(): number {
    return this.w.pos;
  }

  /** The first `count` varbinds (a view, valid until the next reset). */
  bytes(count = this.ends.length): Uint8Array {
    return this.w.buf.subarray(0, count ? this.ends[count - 1] : 0);
  }

  /** Rows [from, to): runs of constants copied at once, computed values from `elapsed` and `context`. */
  rows(t: AgentTable, from: number, to: number, elapsed: number, context: unknown): void {
    const { w, ends } = this;
    const { at, constant } = t;
    for (let i = from; i < to; ) {
      if (!constant[i]) {
        const r = t.rows[i]!;
        w.begin(Tag.Sequence);
        w.copyFrom(t.ber, at[i]!, at[i + 1]!);
        // A constant here is one the table could not encode: encoding it again throws the reason.
        writeTypedValue(w, r.type, typeof r.value === 'function' ? r.value(elapsed, context) : r.value);
        w.end();
        ends.push(w.pos);
        i++;
        continue;
      }
      let j = i + 1;
      while (j < to && constant[j]) j++;
      const shift = w.pos - at[i]!;
      w.copyFrom(t.ber, at[i]!, at[j]!);
      for (let k = i + 1; k <= j; k++) ends.push(at[k]! + shift);
      i = j;
    }
  }

  /** A varbind that is not a row: an exception (noSuchObject, endOfMibView...) or an echo of the request. */
  varbind(vb: VarBind): void {
    writeVarBind(this.w, vb);
    this.ends.push(this.w.pos);
  }

  exception(oid: string, type: SnmpType): void {
    this.varbind({ oid, type, value: null });
  }
}
