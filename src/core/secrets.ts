// Secrets never reach an error, a log line or a response. A secret is a config field whose schema
// says `writeOnly` (the `secret()` field below), or any string field whose name says it is one
// (password, token, secret, api key, authorization: header maps too). URL credentials
// (`scheme://user:password@host`) are masked wherever they appear. So is a value that `${VAR}`
// read from a variable whose name says it is a secret (src/config/interpolate.ts).
import { Type, type TSchema } from '@sinclair/typebox';

/** A config field that holds a secret: shown as such in the docs and masked in every message. */
export const secret = (description: string) => Type.Optional(Type.String({ writeOnly: true, description }));

const SECRET_NAME = /pass(word)?|secret|token|api[_-]?key|authorization|credential|private[_-]?key$/i;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@/\s]+@/gi;
/** Secrets shorter than this are not searched for in text (a one-letter password would mask every such letter). */
const MIN_SECRET = 3;
/** An environment variable whose name says its value is a secret (`${DB_PASSWORD}`, `${API_TOKEN}`, `${AWS_SECRET_ACCESS_KEY}`). */
const SECRET_VARIABLE = /KEY|TOKEN|PASS|SECRET|CREDENTIAL|AUTH/i;

export const isSecretVariable = (name: string) => SECRET_VARIABLE.test(name);

/** Every secret value in `value`, judged by `schema` (writeOnly) and by field names. */
export function secretsOf(schema: TSchema | undefined, value: unknown, out: Set<string> = new Set()): Set<string> {
  if (value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (const v of value) secretsOf(schema?.items as TSchema | undefined, v, out);
    return out;
  }
  const props = (schema?.properties ?? {}) as Record<string, TSchema>;
  // A map field (Type.Record: header name to value) describes every value once.
  const each = (schema?.patternProperties ? Object.values(schema.patternProperties)[0] : undefined) as TSchema | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const s = props[k] ?? each;
    if (typeof v === 'string') {
      if ((s?.writeOnly || SECRET_NAME.test(k)) && v.length >= MIN_SECRET) out.add(v);
      for (const m of v.matchAll(URL_CREDENTIALS)) out.add(m[0].slice(m[1]!.length + 1, -1));
    } else secretsOf(s, v, out);
  }
  return out;
}

/** A function that masks URL credentials and each of `secrets` (longest first) in a text. */
export function redactor(secrets: Iterable<string>): (text: string) => string {
  const list = [...secrets].filter((s) => s.length >= MIN_SECRET).sort((a, b) => b.length - a.length);
  return (text) => {
    let t = text.replace(URL_CREDENTIALS, '$1:***@');
    for (const s of list) if (t.includes(s)) t = t.split(s).join('***');
    return t;
  };
}
