// What the nats source and sink share: the server list and credential fields, and the connection
// (@nats-io/transport-node 3.3.0: the maintained client; `nats` 2.x is the legacy line, and 3.4
// pulls @nats-io/nuid 3, whose engines want Node 22). The client's own reconnect is off: the
// runtime reconnects with its backoff, logs and counts each state change.
import { Type } from '@sinclair/typebox';
import type { InvalidArgumentError, NatsConnection, PermissionViolationError } from '@nats-io/transport-node';
import { secret } from '../../../core/secrets.js';
import { lazyModule } from '../../connector-runtime/lazy.js';
import type { LintIssue } from '../../types.js';

export const DEFAULT_SERVERS = ['nats://localhost:4222'];

/** Seconds before an unanswered connect attempt fails. */
const CONNECT_TIMEOUT_MS = 10_000;

export const serverFields = {
  servers: Type.Array(Type.String({ minLength: 1, pattern: '^((nats|tls)://)?\\S+$', description: 'A server: nats://host:port (or host:port).' }), {
    minItems: 1,
    default: DEFAULT_SERVERS,
    description: 'Server URLs (nats://host:port); each connect attempt tries them in random order. Credentials in a URL are masked in every message.',
  }),
};

export const authFields = {
  username: Type.Optional(Type.String({ minLength: 1, description: 'User for user/password authentication (with `password`).' })),
  password: secret('Password of `username`.'),
  token: secret('Token for token authentication (instead of username and password).'),
};

export interface NatsAuth {
  servers: string[];
  username?: string;
  password?: string;
  token?: string;
}

export function lintAuth(c: NatsAuth): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.password !== undefined && c.username === undefined) issues.push({ path: 'password', message: 'password needs a username' });
  if (c.token !== undefined && c.username !== undefined) issues.push({ path: 'token', message: 'use either token or username/password, not both' });
  return issues;
}

/** A subject with no wildcard token (`*`, `>`): what a publisher needs. */
export const hasWildcard = (subject: string) => subject.split('.').some((t) => t === '*' || t === '>');

const natsSdk = lazyModule(() => import('@nats-io/transport-node'));

/** The client refused a call (a payload larger than the server's max_payload...). */
export const isInvalidArgument = (e: unknown): e is InvalidArgumentError => natsSdk.loaded !== undefined && e instanceof natsSdk.loaded.InvalidArgumentError;
/** The server refused an operation to this user (-ERR 'Permissions Violation ...'). */
export const isPermissionViolation = (e: unknown): e is PermissionViolationError =>
  natsSdk.loaded !== undefined && e instanceof natsSdk.loaded.PermissionViolationError;

/** Connects once (no client reconnect); `name` shows in the server's connz (which pipeline holds it). */
export async function connectNats(c: NatsAuth, name: string): Promise<NatsConnection> {
  const { connect } = await natsSdk();
  return connect({
    servers: c.servers,
    name,
    reconnect: false,
    timeout: CONNECT_TIMEOUT_MS,
    // A server that stops answering is found within about a minute (3 pings 20 s apart unanswered).
    pingInterval: 20_000,
    maxPingOut: 3,
    ...(c.username !== undefined ? { user: c.username, pass: c.password ?? '' } : {}),
    ...(c.token !== undefined ? { token: c.token } : {}),
  });
}

/** Calls `lost` once when the connection closes (the server went away, a protocol or auth error). */
export function onLost(nc: NatsConnection, lost: (err: Error) => void) {
  let last: string | undefined;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'error') last = s.error.message;
      else if (s.type === 'disconnect') last ??= `disconnected from ${s.server}`;
      else if (s.type === 'staleConnection') last ??= 'the server stopped answering pings';
    }
  })().catch(() => {});
  nc.closed().then(
    (err) => lost(err ?? new Error(last ? `connection closed: ${last}` : 'connection closed by the server')),
    (err: Error) => lost(err),
  );
}
