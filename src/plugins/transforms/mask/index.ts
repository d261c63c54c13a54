import { createHash, getHashes, type Hash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Top-level fields to mask (IMSI, MSISDN, IMEI, IP...). Missing and null values are left alone.',
    }),
    mode: Type.Union([Type.Literal('partial'), Type.Literal('hash'), Type.Literal('redact'), Type.Literal('ipv4')], {
      default: 'partial',
      description:
        'partial: replace the middle characters with mask_char; hash: replace with a digest; redact: replace with `replacement`; ipv4: keep the first ipv4_prefix bits of an IPv4 address (10.1.2.3 -> 10.1.2.0), other values are redacted.',
    }),
    keep_first: Type.Integer({ minimum: 0, default: 0, description: 'partial: characters left visible at the start (e.g. 5 keeps the MCC+MNC of an IMSI).' }),
    keep_last: Type.Integer({
      minimum: 0,
      default: 4,
      description: 'partial: characters left visible at the end. A value not longer than keep_first + keep_last is masked entirely.',
    }),
    mask_char: Type.String({
      minLength: 1,
      maxLength: 1,
      default: '*',
      description: 'partial: the character that replaces each hidden character (the length is kept).',
    }),
    algorithm: Type.Union([Type.Literal('sha256'), Type.Literal('sha1'), Type.Literal('md5')], { default: 'sha256', description: 'hash: digest algorithm.' }),
    salt: Type.Optional(
      Type.String({
        description:
          'hash: secret text hashed before the value (digest of salt + value); use ${VAR}. Without it, short identifiers such as IMSI or MSISDN can be recovered by brute force.',
      }),
    ),
    output: Type.Union([Type.Literal('hex'), Type.Literal('base64')], { default: 'hex', description: 'hash: encoding of the digest.' }),
    truncate: Type.Optional(Type.Integer({ minimum: 1, description: 'hash: keep only the first N characters of the encoded digest.' })),
    replacement: Type.String({ default: '***', description: 'redact (and ipv4, for values that are not IPv4 addresses): the text that replaces the value.' }),
    ipv4_prefix: Type.Integer({
      minimum: 0,
      maximum: 32,
      default: 24,
      description: 'ipv4: number of leading bits kept; the others are set to 0 (24: 10.1.2.3 -> 10.1.2.0).',
    }),
  },
  { additionalProperties: false },
);

type Config = typeof config.static;
const PER_MODE: Record<string, (keyof Config)[]> = {
  partial: ['keep_first', 'keep_last', 'mask_char'],
  hash: ['algorithm', 'salt', 'output', 'truncate'],
  ipv4: ['ipv4_prefix'],
};
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The value as text: strings as they are, numbers (MSISDN as a number) and booleans via String, objects as JSON. */
const text = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v));

function compile(c: Config): (v: unknown) => unknown {
  switch (c.mode) {
    case 'redact': {
      const rep = c.replacement;
      return () => rep;
    }
    case 'hash': {
      const base: Hash = createHash(c.algorithm);
      if (c.salt) base.update(c.salt, 'utf8');
      const enc = c.output;
      const n = c.truncate;
      // copy() keeps the salted state: the salt is hashed once, not once per value.
      return n === undefined ? (v) => base.copy().update(text(v), 'utf8').digest(enc) : (v) => base.copy().update(text(v), 'utf8').digest(enc).slice(0, n);
    }
    case 'ipv4': {
      const keep = c.ipv4_prefix === 0 ? 0 : (0xffffffff << (32 - c.ipv4_prefix)) >>> 0;
      const rep = c.replacement;
      return (v) => {
        const m = typeof v === 'string' ? IPV4.exec(v.trim()) : null;
        if (!m) return rep;
        let ip = 0;
        for (let i = 1; i <= 4; i++) {
          const o = Number(m[i]);
          if (o > 255) return rep;
          ip = ip * 256 + o;
        }
        const x = (ip & keep) >>> 0;
        return `${x >>> 24}.${(x >>> 16) & 255}.${(x >>> 8) & 255}.${x & 255}`;
      };
    }
    default: {
      const first = c.keep_first;
      const last = c.keep_last;
      const ch = c.mask_char;
      return (v) => {
        const s = text(v);
        const n = s.length;
        if (n <= first + last) return ch.repeat(n);
        return s.slice(0, first) + ch.repeat(n - first - last) + s.slice(n - last);
      };
    }
  }
}

export default defineTransform({
  key: 'mask',
  summary: 'Mask identifiers (IMSI, MSISDN, IP): partial masking, salted hashing, redaction or an IPv4 prefix.',
  config,
  lint(c) {
    const issues: LintIssue[] = [];
    // Parameters of another mode are most likely a mistake (the mode was forgotten).
    for (const [mode, keys] of Object.entries(PER_MODE)) {
      if (mode === c.mode) continue;
      for (const k of keys) {
        const v = c[k];
        const def = (config.properties[k] as { default?: unknown }).default;
        if (v !== undefined && v !== def) issues.push({ path: k, message: `applies to mode ${mode} only (mode is ${c.mode})` });
      }
    }
    if (c.mode === 'hash' && !getHashes().includes(c.algorithm))
      issues.push({ path: 'algorithm', message: `${c.algorithm} is not available in this Node.js build` });
    return issues;
  },
  examples: [
    { title: 'Keep the MCC+MNC and last 2 digits of the IMSI', yaml: 'type: mask\nfields: [imsi]\nmode: partial\nkeep_first: 5\nkeep_last: 2' },
    { title: 'Pseudonymize MSISDN with a salted SHA-256', yaml: 'type: mask\nfields: [msisdn, imei]\nmode: hash\nsalt: ${MASK_SALT:-change-me}\ntruncate: 16' },
    { title: 'Keep the /24 of subscriber IPs', yaml: 'type: mask\nfields: [ue_ip]\nmode: ipv4\nipv4_prefix: 24' },
  ],
  create(c) {
    const fields = c.fields;
    const fn = compile(c);
    return {
      apply(r: Rec) {
        for (let i = 0; i < fields.length; i++) {
          const f = fields[i]!;
          const v = r[f];
          // Own fields only; null stays null (there is nothing to hide).
          if (v === undefined || v === null || !Object.hasOwn(r, f)) continue;
          setField(r, f, fn(v));
        }
        return r;
      },
    };
  },
});
