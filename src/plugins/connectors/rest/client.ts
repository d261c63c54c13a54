// What the rest source and sink share: the auth, TLS and timeout fields. Each component's HTTP client
// is the connector runtime's (connector-runtime/http-client.ts), which the ves sink uses too.
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { secret } from '../../../core/secrets.js';
import type { LintIssue } from '../../types.js';

export const AUTH_TYPES = ['none', 'basic', 'bearer', 'apikey'] as const;

/** Fields of both roles: where, who, how long, how much trust. */
export const commonFields = {
  url: Type.String({
    minLength: 1,
    pattern: '^https?://',
    description: 'http:// or https:// URL of the endpoint. Put credentials in the auth fields, not in the URL.',
  }),
  headers: Type.Record(Type.String(), Type.String(), {
    default: {},
    description: 'Extra request headers. Values holding secrets (Authorization, tokens) are masked in messages; prefer the auth fields.',
  }),
  auth_type: Type.Union(
    AUTH_TYPES.map((a) => Type.Literal(a)),
    {
      default: 'none',
      description:
        '`basic` (username, password), `bearer` (token: `Authorization: Bearer <token>`), `apikey` (api_key in the header named by api_key_header) or `none`.',
    },
  ),
  username: Type.Optional(Type.String({ description: 'User name for `auth_type: basic`.' })),
  password: secret('Password for `auth_type: basic`.'),
  token: secret('Bearer token for `auth_type: bearer`.'),
  api_key: secret('Key for `auth_type: apikey`, sent in the header api_key_header.'),
  api_key_header: Type.String({ minLength: 1, default: 'X-API-Key', description: 'Header that carries api_key with `auth_type: apikey`.' }),
  timeout: Type.Number({ exclusiveMinimum: 0, default: 30, description: 'Seconds one request may take, from connecting to the last byte of the response.' }),
  verify_ssl: Type.Boolean({
    default: true,
    description:
      'Check the server certificate of an https:// URL; false accepts any certificate (self-signed test servers), which also accepts an attacker in the middle.',
  }),
};

export type AuthConfig = {
  auth_type: (typeof AUTH_TYPES)[number];
  username?: string;
  password?: string;
  token?: string;
  api_key?: string;
  api_key_header: string;
};
type Common = Static<TObject<typeof commonFields>>;

const has = (v: string | undefined) => v !== undefined && v !== '';

/** Cross-field rules of the auth fields: what the chosen auth_type needs, nothing set for another. */
export function lintCommon(c: Common): LintIssue[] {
  const out: LintIssue[] = [];
  if (/^https?:\/\/[^/?#]*@/i.test(c.url))
    out.push({ path: 'url', message: 'credentials in the URL are not sent; use auth_type: basic with username and password' });
  if (c.auth_type === 'basic' && !has(c.username)) out.push({ path: 'username', message: 'auth_type basic needs a username' });
  if (c.auth_type === 'bearer' && !has(c.token)) out.push({ path: 'token', message: 'auth_type bearer needs a token' });
  if (c.auth_type === 'apikey' && !has(c.api_key)) out.push({ path: 'api_key', message: 'auth_type apikey needs an api_key' });
  const unused: ['username' | 'password' | 'token' | 'api_key', string][] = [
    ['username', 'basic'],
    ['password', 'basic'],
    ['token', 'bearer'],
    ['api_key', 'apikey'],
  ];
  for (const [field, type] of unused) {
    if (has(c[field]) && c.auth_type !== type)
      out.push({ path: field, message: `${field} is only used with auth_type ${type} (auth_type is ${c.auth_type}): set auth_type: ${type} or remove it` });
  }
  const authHeader = c.auth_type === 'apikey' ? c.api_key_header.toLowerCase() : c.auth_type !== 'none' ? 'authorization' : undefined;
  for (const name of Object.keys(c.headers)) {
    if (authHeader && name.toLowerCase() === authHeader)
      out.push({ path: `headers.${name}`, message: `header ${name} is set by auth_type ${c.auth_type}; remove it from headers` });
  }
  return out;
}

/** The header that authenticates a request, as auth_type says. */
export function authHeaders(c: AuthConfig): Record<string, string> {
  switch (c.auth_type) {
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`${c.username ?? ''}:${c.password ?? ''}`).toString('base64')}` };
    case 'bearer':
      return { authorization: `Bearer ${c.token ?? ''}` };
    case 'apikey':
      return { [c.api_key_header.toLowerCase()]: c.api_key ?? '' };
    default:
      return {};
  }
}

/** Header names lower-cased (HTTP header names are case-insensitive; later entries win). */
export function lowerHeaders(...maps: Record<string, string>[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of maps) for (const [k, v] of Object.entries(m)) out[k.toLowerCase()] = v;
  return out;
}

/**
 * The config with its schema defaults filled in: test() may be handed a config that was not loaded
 * through the pipeline schema (the conformance suite passes the fixture's raw object).
 */
