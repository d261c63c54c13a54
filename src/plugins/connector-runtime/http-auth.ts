// The HTTP authentication fields of the connectors that speak plain HTTP to one peer (ves,
// prometheus_rw's sink, prometheus_scrape): `auth_type` none, basic or bearer with its credentials,
// their checks, and the Authorization header they make. One place, so a fix to one reaches all.
// (The rest connector has more kinds, apikey among them: its own in rest/client.ts.)
import { Type } from '@sinclair/typebox';
import { secret } from '../../core/secrets.js';
import type { LintIssue } from '../types.js';

const AUTH = ['none', 'basic', 'bearer'] as const;

/** Spread into a connector's config: auth_type, username, password (secret), token (secret). */
export const httpAuthFields = {
  auth_type: Type.Union(
    AUTH.map((a) => Type.Literal(a)),
    { default: 'none', description: '`basic` (username, password: HTTP Basic), `bearer` (token: `Authorization: Bearer <token>`) or `none`.' },
  ),
  username: Type.Optional(Type.String({ description: 'User name for `auth_type: basic`.' })),
  password: secret('Password for `auth_type: basic`.'),
  token: secret('Bearer token for `auth_type: bearer`.'),
};

export interface HttpAuth {
  auth_type?: (typeof AUTH)[number];
  username?: string;
  password?: string;
  token?: string;
}

const has = (v: string | undefined) => v !== undefined && v !== '';

/** What is missing for the chosen auth_type, and credentials given for another one. */
export function lintHttpAuth(c: HttpAuth): LintIssue[] {
  const out: LintIssue[] = [];
  const type = c.auth_type ?? 'none';
  if (type === 'basic' && !has(c.username)) out.push({ path: 'username', message: 'auth_type basic needs a username' });
  if (type === 'bearer' && !has(c.token)) out.push({ path: 'token', message: 'auth_type bearer needs a token' });
  for (const [field, wants] of [
    ['username', 'basic'],
    ['password', 'basic'],
    ['token', 'bearer'],
  ] as const) {
    if (has(c[field]) && type !== wants)
      out.push({ path: field, message: `${field} is only used with auth_type ${wants} (auth_type is ${type}): set auth_type: ${wants} or remove it` });
  }
  return out;
}

/** The Authorization header of `c` (none for auth_type none). */
export function httpAuthHeader(c: HttpAuth): Record<string, string> {
  if (c.auth_type === 'basic') return { authorization: `Basic ${Buffer.from(`${c.username ?? ''}:${c.password ?? ''}`).toString('base64')}` };
  if (c.auth_type === 'bearer') return { authorization: `Bearer ${c.token ?? ''}` };
  return {};
}
