// Walks a subtree: GETBULK for v2c/v3, GETNEXT for v1, stopping at the end of the subtree, at
// endOfMibView, or when the agent returns an OID that does not increase (as snmpwalk does).
import { PduType } from './message.js';
import { SnmpSession, type TargetOptions } from './session.js';
import { isUnder, parseOid, SnmpInputError, SnmpResponseError, type VarBind } from './values.js';

export interface WalkOptions extends TargetOptions {
  /** Start OID, numeric (default 1.3.6.1.2.1, as snmpwalk). */
  oid?: string;
  /** GETBULK max-repetitions (default 25). */
  maxRepetitions?: number;
  /** Stops after this many varbinds (default 1,000,000). */
  maxOids?: number;
}

/** Compares two dotted numeric OIDs in OID order without allocating. */
export function compareOidStrings(a: string, b: string): number {
  return compareFrom(a, b, commonPrefix(a, b));
}

/** How many leading characters two strings share. */
function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let k = 0;
  while (k < n && a.charCodeAt(k) === b.charCodeAt(k)) k++;
  return k;
}

/** compareOidStrings of two OIDs whose first `k` characters are the same. */
function compareFrom(a: string, b: string, k: number): number {
  // Arcs before the first differing character are equal: start at the arc that holds it.
  while (k > 0 && a.charCodeAt(k - 1) !== 46) k--;
  let i = k;
  let j = k;
  for (;;) {
    if (i >= a.length) return j >= b.length ? 0 : -1;
    if (j >= b.length) return 1;
    let x = 0;
    let y = 0;
    let c: number;
    while (i < a.length && (c = a.charCodeAt(i)) !== 46) {
      x = x * 10 + c - 48;
      i++;
    }
    while (j < b.length && (c = b.charCodeAt(j)) !== 46) {
      y = y * 10 + c - 48;
      j++;
    }
    if (x !== y) return x - y;
    i++;
    j++;
  }
}

export async function walk(opts: WalkOptions): Promise<VarBind[]> {
  const session = await SnmpSession.open(opts);
  try {
    return await walkSession(session, opts);
  } finally {
    session.close();
  }
}

/** A walk over a session that is already open (several walks to one agent share its socket and v3 engine). */
export async function walkSession(session: SnmpSession, opts: Pick<WalkOptions, 'oid' | 'maxRepetitions' | 'maxOids'>): Promise<VarBind[]> {
  const root = parseOid(opts.oid ?? '1.3.6.1.2.1', 'start OID', true);
  const maxRep = opts.maxRepetitions ?? 25;
  if (!Number.isInteger(maxRep) || maxRep < 1 || maxRep > 1000) throw new SnmpInputError(`max_repetitions must be 1..1000, got ${maxRep}`);
  const limit = opts.maxOids ?? 1_000_000;
  {
    const out: VarBind[] = [];
    // A one-arc root (".1") cannot be encoded: ask from its first child, as net-snmp does.
    let last = root.includes('.') ? root : `${root}.0`;
    const bulk = session.version !== '1';
    let reps = maxRep;
    for (;;) {
      const req = [{ oid: last, type: 'Null' as const, value: null }];
      let vbs: VarBind[];
      try {
        vbs = (bulk ? await session.request(PduType.GetBulk, req, 0, reps) : await session.request(PduType.GetNext, req)).varbinds;
      } catch (e) {
        if (!bulk && e instanceof SnmpResponseError && e.errorStatus === 2) break; // v1 noSuchName: end of MIB
        // tooBig: an agent that does not trim GETBULK answers itself. Retry the step with half the
        // repetitions (kept for the rest of the walk); at 1 the next object alone is too big: fail.
        if (bulk && e instanceof SnmpResponseError && e.errorStatus === 1 && reps > 1) {
          reps = Math.max(1, Math.floor(reps / 2));
          continue;
        }
        if (bulk && e instanceof SnmpResponseError && e.errorStatus === 1)
          throw new SnmpResponseError(
            `${e.message}: the object after ${last} does not fit in a response even with max-repetitions 1`,
            e.errorStatus,
            e.errorIndex,
          );
        throw e;
      }
      if (vbs.length === 0) break;
      let done = false;
      for (const vb of vbs) {
        if (vb.type === 'EndOfMibView') {
          done = true;
          break;
        }
        // Past the first varbind `last` is under root: an OID that shares root and its dot with it is too.
        const k = commonPrefix(vb.oid, last);
        if (!((out.length > 0 && k > root.length) || isUnder(vb.oid, root))) {
          done = true;
          break;
        }
        if (compareFrom(vb.oid, last, k) <= 0) throw new SnmpResponseError(`agent returned OID ${vb.oid} that does not increase after ${last}`);
        out.push(vb);
        last = vb.oid;
        if (out.length >= limit) return out;
      }
      if (done) break;
    }
    if (out.length === 0) {
      // As snmpwalk: a walk of a leaf instance returns the instance itself.
      const got = await session.get([root]).catch(() => undefined);
      const vb = got?.varbinds[0];
      if (vb && vb.type !== 'NoSuchObject' && vb.type !== 'NoSuchInstance' && vb.type !== 'EndOfMibView') out.push(vb);
    }
    return out;
  }
}
