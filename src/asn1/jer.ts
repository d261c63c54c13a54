// JER (X.697, JSON encoding rules): the JSON document read against the type model and mapped as
// the other encodings are (so a JER CHOICE `{"alt": v}` becomes `{type, value}`).
import { tagText, type Asn1Type } from './model.js';
import { bitsValue, generalizedTime, intValue, realValue, utcTime } from './values.js';

export class JerError extends Error {
  override name = 'JerError';
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Integers too long for a double are quoted before JSON.parse, so they stay exact. */
export function parseJerText(text: string): unknown {
  let out = '';
  let last = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inStr = false;
      continue;
    }
    if (c === 0x22) inStr = true;
    else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
      let j = i + 1;
      while (j < text.length && /[0-9]/.test(text[j]!)) j++;
      const isInt = !/[.eE]/.test(text[j] ?? '');
      if (isInt && j - i > 15) {
        out += text.slice(last, i) + '"' + text.slice(i, j) + '"';
        last = j;
      }
      i = j - 1;
    }
  }
  return JSON.parse(out + text.slice(last));
}

export function fromJer(t: Asn1Type, v: unknown, path = '$'): unknown {
  const b = t.body;
  const fail = (what: string): never => {
    throw new JerError(`${path}: expected ${what}, found ${JSON.stringify(v)?.slice(0, 60)}`);
  };
  switch (b.kind) {
    case 'sequence':
    case 'set': {
      if (!isObj(v)) return fail('an object');
      const out: Record<string, unknown> = {};
      for (const c of b.components!) {
        const x = v[c.name];
        if (x === undefined) {
          if (c.hasDefault) out[c.name] = c.default;
          else if (!c.optional && c.extGroup === undefined) throw new JerError(`${path}: missing component '${c.name}'`);
          continue;
        }
        out[c.name] = fromJer(c.type, x, `${path}.${c.name}`);
      }
      return out;
    }
    case 'choice': {
      if (!isObj(v)) return fail('an object with one member (CHOICE)');
      const keys = Object.keys(v);
      if (keys.length !== 1) return fail('an object with one member (CHOICE)');
      const alt = b.components!.find((c) => c.name === keys[0]);
      if (!alt) {
        if (b.ext) return { type: keys[0], value: v[keys[0]!] };
        throw new JerError(`${path}: '${keys[0]}' is none of the alternatives of ${b.name ?? 'the CHOICE'}`);
      }
      return { type: alt.name, value: fromJer(alt.type, v[alt.name], `${path}.${alt.name}`) };
    }
    case 'sequenceOf':
    case 'setOf':
      if (!Array.isArray(v)) return fail('an array');
      return v.map((x, i) => fromJer(b.element!, x, `${path}[${i}]`));
    case 'integer':
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      if (typeof v === 'string' && /^-?\d+$/.test(v)) return intValue(BigInt(v));
      return fail('an integer');
    case 'real':
      if (typeof v === 'number') return v;
      if (v === 'INF') return realValue(Infinity);
      if (v === '-INF') return realValue(-Infinity);
      if (v === 'NaN') return realValue(NaN);
      if (v === '-0') return 0;
      return fail('a number');
    case 'boolean':
      return typeof v === 'boolean' ? v : fail('true or false');
    case 'null':
      return v === null ? null : fail('null');
    case 'enumerated': {
      if (typeof v !== 'string') return fail('an enumeration name');
      const ok = [...(b.enumRoot ?? []), ...(b.enumExt ?? [])].some((i) => i.name === v);
      return ok ? v : fail(`one of ${[...(b.enumRoot ?? []), ...(b.enumExt ?? [])].map((i) => i.name).join(', ')}`);
    }
    case 'octets':
      if (typeof v !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(v)) return fail('a hex string');
      return v.toLowerCase();
    case 'bits': {
      // Fixed size: a hex string; otherwise {"value": hex, "length": bits}.
      let hex: unknown = v;
      let length: number | undefined = t.size && t.size.lo === t.size.hi && !t.size.ext ? t.size.lo : undefined;
      if (isObj(v)) {
        hex = v.value;
        length = typeof v.length === 'number' ? v.length : undefined;
      }
      if (typeof hex !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(hex) || length === undefined) return fail('a BIT STRING ({"value": hex, "length": n})');
      let bits = '';
      for (let i = 0; i < hex.length; i += 2)
        bits += parseInt(hex.slice(i, i + 2), 16)
          .toString(2)
          .padStart(8, '0');
      return bitsValue(b, bits.slice(0, length));
    }
    case 'oid':
    case 'relOid':
      return typeof v === 'string' ? v : fail('an OBJECT IDENTIFIER string');
    case 'gtime':
      return typeof v === 'string' ? wrap(() => generalizedTime(v), path) : fail('a GeneralizedTime string');
    case 'utime':
      return typeof v === 'string' ? wrap(() => utcTime(v), path) : fail('a UTCTime string');
    case 'string':
      return typeof v === 'string' ? v : fail('a string');
    case 'any':
      return v;
  }
  throw new JerError(`${path}: unsupported type ${b.kind} ${tagText(t.tags[0] ?? 0)}`);
}

const wrap = <T>(f: () => T, path: string): T => {
  try {
    return f();
  } catch (err) {
    throw new JerError(`${path}: ${(err as Error).message}`);
  }
};
