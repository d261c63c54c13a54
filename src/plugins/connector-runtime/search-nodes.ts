// What the elasticsearch source and sink and the opensearch sink share: the node fields and the
// reading of both clients' errors into messages a user can act on. The two clients come from one
// code base and throw the same error classes (ResponseError with
// meta.statusCode and meta.body, ConnectionError, TimeoutError...), read here by name.
import { STATUS_CODES } from 'node:http';
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../core/errors.js';
import { secret } from '../../core/secrets.js';
import type { LintIssue } from '../types.js';

/** How long one request may take (a bulk request of chunk_size documents included). */
export const REQUEST_TIMEOUT_MS = 60_000;

export type Product = 'elasticsearch' | 'opensearch';
const PRODUCT_NAME: Record<Product, string> = { elasticsearch: 'Elasticsearch', opensearch: 'OpenSearch' };

/** The fields that say where the cluster is and who we are, for every role and both products. */
export const nodeFields = (product: Product) => ({
  hosts: Type.Array(Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$', description: 'A node: http(s)://host:port.' }), {
    minItems: 1,
    description: `${PRODUCT_NAME[product]} nodes, http(s)://host:port each; requests go round-robin to the nodes that answer. Put credentials in username and password, not in the URL.`,
    examples: [['https://search-1.example.net:9200', 'https://search-2.example.net:9200']],
  }),
  username: Type.Optional(Type.String({ minLength: 1, description: 'User for HTTP basic authentication; with password. Unset: no authentication.' })),
  password: secret('Password of username.'),
  verify_ssl: Type.Boolean({
    default: true,
    description:
      'Check the server certificate of https:// nodes against the system CAs; false accepts any certificate (a self-signed test cluster), which also accepts an attacker in the middle.',
  }),
});

export interface NodeConfig {
  hosts: string[];
  username?: string;
  password?: string;
  verify_ssl: boolean;
}

/** Cross-field rules of the node fields. */
export function lintNodes(c: NodeConfig): LintIssue[] {
  const out: LintIssue[] = [];
  if (c.username !== undefined && c.password === undefined) out.push({ path: 'password', message: 'username needs a password' });
  if (c.password !== undefined && c.username === undefined) out.push({ path: 'username', message: 'password needs a username' });
  c.hosts.forEach((h, i) => {
    if (/^https?:\/\/[^/?#]*@/i.test(h)) out.push({ path: `hosts.${i}`, message: 'credentials in the URL are not used; set username and password' });
  });
  return out;
}

/** A failure of a request, read: its message, whether trying again may help, whether the connection broke. */
export interface RequestFailure {
  message: string;
  /** The HTTP status when the server answered. */
  status?: number;
  /** The server's error type (`index_not_found_exception`...), when it gave one. */
  type?: string;
  retryable: boolean;
  /** No HTTP answer at all (refused, reset, timeout): the connection is gone. */
  connectionLost: boolean;
}

interface ErrorBody {
  type?: string;
  reason?: string;
  caused_by?: ErrorBody;
  root_cause?: ErrorBody[];
}

/** `type: reason (caused by type: reason)` of an error object the server sent. */
export function errorText(err: ErrorBody | undefined): string {
  if (!err || typeof err !== 'object') return '';
  const head = [err.type, err.reason].filter(Boolean).join(': ');
  const cause = err.caused_by && err.caused_by.reason !== err.reason ? errorText(err.caused_by) : '';
  return cause ? `${head} (caused by ${cause})` : head;
}

const statusText = (s: number) => `${s}${STATUS_CODES[s] ? ` ${STATUS_CODES[s]}` : ''}`;

/** The start of a text body for a message: one line, 200 characters at most. */
const excerpt = (t: string) => {
  const s = t.replace(/\s+/g, ' ').trim();
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
};

const CERT_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS/;

/** Reads an error of either client. `what` names the request (`search index 'alarms'`). */
export function readFailure(e: unknown, product: Product, what: string): RequestFailure {
  const err = e as { name?: string; code?: string; meta?: { statusCode?: number; body?: unknown }; cause?: { code?: string } };
  const name = err?.name ?? '';
  if (name === 'ResponseError' && typeof err.meta?.statusCode === 'number') {
    const status = err.meta.statusCode;
    const body = err.meta.body;
    const error = body && typeof body === 'object' ? (body as { error?: unknown }).error : undefined;
    const type = error && typeof error === 'object' ? (error as ErrorBody).type : undefined;
    const detail =
      error && typeof error === 'object' ? errorText(error as ErrorBody) : typeof error === 'string' ? error : typeof body === 'string' ? excerpt(body) : '';
    let hint = '';
    if (status === 401) hint = ' (the server refused the credentials: check username and password)';
    else if (status === 403) hint = ' (the user lacks a privilege this needs: grant it, or use another user)';
    else if (status === 413) hint = ' (the request is larger than the server takes: lower chunk_size)';
    else if (status === 406 && product === 'elasticsearch')
      hint =
        ' (the server does not take the content type of the Elasticsearch 8 client: is it Elasticsearch 7.11 or later? for OpenSearch use the opensearch sink)';
    const message = `${what}: ${statusText(status)}${hint}${detail ? `: ${detail}` : ''}`;
    return { message, status, type, retryable: status === 408 || status === 429 || status >= 500, connectionLost: false };
  }
  if (name === 'ProductNotSupportedError') {
    return {
      message: `${what}: the server is not ${PRODUCT_NAME[product]} (its answer lacks the X-Elastic-Product header); for OpenSearch use the opensearch sink`,
      retryable: false,
      connectionLost: false,
    };
  }
  if (name === 'TimeoutError') return { message: `${what}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s (timeout)`, retryable: true, connectionLost: true };
  if (name === 'NoLivingConnectionsError') return { message: `${what}: no node of hosts is reachable`, retryable: true, connectionLost: true };
  if (name === 'RequestAbortedError') return { message: `${what}: stopped`, retryable: false, connectionLost: true };
  if (name === 'ConnectionError') {
    const msg = errorMessage(e);
    const code = err.code ?? err.cause?.code ?? /\b(E[A-Z]{3,}|ERR_[A-Z_]+|[A-Z_]*CERT[A-Z_]*|SELF_SIGNED[A-Z_]*)\b/.exec(msg)?.[1];
    let text = msg;
    if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(msg)) text = 'connection refused (nothing listens there)';
    else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') text = `host not found (${code})`;
    else if ((code && CERT_CODES.test(code)) || /certificate/i.test(msg)) {
      text = `the server certificate is not trusted (${code ?? msg}); give the cluster a certificate from a trusted CA, or set verify_ssl: false to accept it anyway`;
    }
    return { message: `${what}: ${text}`, retryable: true, connectionLost: true };
  }
  return { message: `${what}: ${errorMessage(e)}`, retryable: true, connectionLost: false };
}

/** `http://h1:9200, http://h2:9200` for messages. */
export const hostList = (hosts: string[]) => hosts.join(', ');
