// XER (X.693 BASIC-XER and the CANONICAL subset): the XML document read with saxes into a small
// element tree, then walked against the type model into the common record mapping.
import { SaxesParser } from 'saxes';
import type { Asn1Type, Body } from './model.js';
import { bitsValue, generalizedTime, intValue, realValue, utcTime } from './values.js';

export class XerError extends Error {
  override name = 'XerError';
}

interface El {
  name: string;
  children: El[];
  text: string;
  line: number;
}

export function parseXml(text: string): El {
  const parser = new SaxesParser();
  const root: El = { name: '', children: [], text: '', line: 0 };
  const stack: El[] = [root];
  parser.on('opentag', (t) => {
    const el: El = { name: t.name.replace(/^.*:/, ''), children: [], text: '', line: parser.line };
    stack[stack.length - 1]!.children.push(el);
    stack.push(el);
  });
  parser.on('text', (s) => void (stack[stack.length - 1]!.text += s));
  parser.on('cdata', (s) => void (stack[stack.length - 1]!.text += s));
  parser.on('closetag', () => void stack.pop());
  try {
    parser.write(text).close();
  } catch (err) {
    throw new XerError(`invalid XML: ${(err as Error).message}`);
  }
  if (root.children.length !== 1) throw new XerError('an XER document has exactly one top-level element');
  return root.children[0]!;
}

const fail = (el: El, msg: string): never => {
  throw new XerError(`line ${el.line} <${el.name}>: ${msg}`);
};

/** Element names of the items of a SEQUENCE OF whose items are not wrapped (X.693 XMLValueList). */
const unwrappedItems = (b: Body): boolean => b.kind === 'boolean' || b.kind === 'enumerated' || b.kind === 'choice' || b.kind === 'null';

/** The value of `el`, whose contents encode a value of type `t`. */
export function fromXer(t: Asn1Type, el: El): unknown {
  const b = t.body;
  const text = el.text.trim();
  switch (b.kind) {
    case 'sequence':
    case 'set': {
      const out: Record<string, unknown> = {};
      const byName = new Map(b.components!.map((c) => [c.name, c] as const));
      for (const child of el.children) {
        const c = byName.get(child.name);
        if (!c) {
          if (b.ext) continue; // an unknown extension addition
          fail(child, `is not a component of ${b.name ?? b.kind.toUpperCase()}`);
        }
        out[c!.name] = fromXer(c!.type, child);
      }
      for (const c of b.components!) {
        if (c.name in out) continue;
        if (c.hasDefault) out[c.name] = c.default;
        else if (!c.optional && c.extGroup === undefined) fail(el, `missing component '${c.name}'`);
      }
      return out;
    }
    case 'choice':
      return choiceOf(b, el.children.length === 1 ? el.children[0]! : fail(el, 'a CHOICE holds exactly one element'));
    case 'sequenceOf':
    case 'setOf': {
      const item = b.element!;
      if (unwrappedItems(item.body)) {
        if (item.body.kind === 'choice') return el.children.map((c) => choiceOf(item.body, c));
        return el.children.map((c) => fromXer(item, { ...c, children: [c], text: '' }));
      }
      return el.children.map((c) => fromXer(item, c));
    }
    case 'integer': {
      if (el.children.length === 1 && b.named) {
        for (const [n, name] of b.named) if (name === el.children[0]!.name) return n;
      }
      if (!/^[+-]?\d+$/.test(text)) fail(el, `'${text}' is not an INTEGER`);
      return intValue(BigInt(text));
    }
    case 'boolean': {
      const v = el.children[0]?.name ?? text;
      if (v === 'true' || v === '1') return true;
      if (v === 'false' || v === '0') return false;
      return fail(el, 'expected <true/> or <false/>');
    }
    case 'null':
      return null;
    case 'enumerated': {
      const v = el.children[0]?.name ?? text;
      if (![...(b.enumRoot ?? []), ...(b.enumExt ?? [])].some((i) => i.name === v)) fail(el, `'${v}' is not an item of the enumeration`);
      return v;
    }
    case 'real': {
      const special = el.children[0]?.name;
      if (special === 'PLUS-INFINITY') return realValue(Infinity);
      if (special === 'MINUS-INFINITY') return realValue(-Infinity);
      if (special === 'NOT-A-NUMBER') return realValue(NaN);
      const n = Number(text);
      return Number.isNaN(n) ? fail(el, `'${text}' is not a REAL`) : realValue(n);
    }
    case 'octets': {
      const hex = text.replace(/\s+/g, '');
      if (!/^([0-9a-fA-F]{2})*$/.test(hex)) fail(el, 'expected hex digits');
      return hex.toLowerCase();
    }
    case 'bits': {
      // 0/1 characters, or (for named bits) a list of empty elements named by the bits set.
      if (el.children.length && b.named) return el.children.map((c) => c.name);
      const bits = text.replace(/\s+/g, '');
      if (!/^[01]*$/.test(bits)) fail(el, 'expected 0 and 1 characters');
      return bitsValue(b, bits);
    }
    case 'oid':
    case 'relOid':
      return text.replace(/\s+/g, '');
    case 'gtime':
      return wrap(el, () => generalizedTime(text));
    case 'utime':
      return wrap(el, () => utcTime(text));
    case 'string':
      return el.text;
    case 'any':
      return el.text;
  }
}

function choiceOf(b: Body, alt: El): unknown {
  const c = b.components!.find((x) => x.name === alt.name);
  if (!c) {
    if (b.ext) return { type: alt.name, value: alt.text };
    return fail(alt, `is none of the alternatives of ${b.name ?? 'the CHOICE'}`);
  }
  return { type: c.name, value: fromXer(c.type, alt) };
}

const wrap = <T>(el: El, f: () => T): T => {
  try {
    return f();
  } catch (err) {
    return fail(el, (err as Error).message);
  }
};
