// The gNMI client of the gnmi source: a grpc-js channel to one target (TLS with a CA, or
// insecure), the credentials as `username` / `password` request metadata (as gnmic and Telegraf
// send them, and as targets read them), and errors named by their gRPC status with what to do.
// @grpc/grpc-js and @grpc/proto-loader are loaded on first use, never when the registry is
// imported; the definitions come from gnmi-descriptor.ts (gnmi.proto compiled into the module).
import { readFile } from 'node:fs/promises';
import type { Client, ClientDuplexStream, Metadata, ServiceError } from '@grpc/grpc-js';
import { SourceError } from '../../../core/errors.js';
import { serverNameOnlyForHostNames } from '../../connector-runtime/grpc-tls.js';
import { lazyModule, once } from '../../connector-runtime/lazy.js';
import { GNMI_DESCRIPTOR } from './gnmi-descriptor.js';
import type { GnmiPath } from './path.js';
import type { TypedValueMsg } from './typed-value.js';

export interface GnmiConnection {
  host: string;
  port: number;
  username?: string;
  password?: string;
  tls: boolean;
  tls_ca?: string;
  tls_server_name?: string;
  tls_skip_verify?: boolean;
}

/** How both ends decode messages: field names as in the .proto, int64 as decimal strings, enums by name, the set oneof member named. */
export const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true } as const;

/** The longest wait for a Capabilities answer (test()) and for the first answer to Subscribe. */
export const ANSWER_TIMEOUT_MS = 10_000;

/**
 * Channel options. Keepalive pings every 5 minutes on an open stream find a target that vanished
 * without closing its connections (power loss) on a quiet ON_CHANGE subscription; 5 minutes is what
 * gRPC servers accept by default (grpc-go's enforcement MinTime), so no target answers them with
 * GOAWAY too_many_pings. Notifications of a large subtree can exceed gRPC's 4 MiB default.
 */
const CHANNEL_OPTIONS = {
  'grpc.keepalive_time_ms': 300_000,
  'grpc.keepalive_timeout_ms': 20_000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
};

export interface Notification {
  timestamp?: string;
  prefix?: GnmiPath;
  update?: { path?: GnmiPath; val?: TypedValueMsg; duplicates?: number }[];
  delete?: GnmiPath[];
}

export interface SubscribeResponse {
  response?: 'update' | 'sync_response';
  update?: Notification;
  sync_response?: boolean;
}

export type SubscribeCall = ClientDuplexStream<object, SubscribeResponse>;

interface GnmiStub extends Client {
  Subscribe(metadata: Metadata): SubscribeCall;
  Capabilities(
    req: object,
    metadata: Metadata,
    options: { deadline: Date },
    cb: (err: ServiceError | null, res?: { gNMI_version?: string; supported_encodings?: string[] }) => void,
  ): void;
}

const grpcSdk = lazyModule(() => import('@grpc/grpc-js'));
const loaderSdk = lazyModule(() => import('@grpc/proto-loader'));

/** The generated gNMI client class, built once. */
const stubClass = once(async () => {
  const [grpc, loader] = await Promise.all([grpcSdk(), loaderSdk()]);
  const def = loader.fromJSON(GNMI_DESCRIPTOR as never, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as { gnmi: { gNMI: new (address: string, creds: unknown, options: object) => GnmiStub } };
  return pkg.gnmi.gNMI;
});

/** host:port, an IPv6 host in brackets. */
export const targetAddress = (host: string, port: number) => (host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`);

export interface GnmiClient {
  stub: GnmiStub;
  address: string;
  /** The credentials of every call. */
  metadata(): Metadata;
  close(): void;
}

/** A channel to the target (no I/O until the first call). */
export async function openClient(c: GnmiConnection): Promise<GnmiClient> {
  const [grpc, Stub] = await Promise.all([grpcSdk(), stubClass()]);
  let creds;
  if (c.tls) {
    let ca: Buffer | null = null;
    if (c.tls_ca) {
      try {
        ca = await readFile(c.tls_ca);
      } catch (e) {
        throw new SourceError(`cannot read tls_ca '${c.tls_ca}': ${(e as Error).message}`);
      }
    }
    creds = serverNameOnlyForHostNames(
      grpc.credentials.createSsl(ca, null, null, c.tls_skip_verify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {}),
    );
  } else creds = grpc.credentials.createInsecure();
  const address = targetAddress(c.host, c.port);
  const options = c.tls && c.tls_server_name ? { ...CHANNEL_OPTIONS, 'grpc.ssl_target_name_override': c.tls_server_name } : CHANNEL_OPTIONS;
  const stub = new Stub(address, creds, options);
  return {
    stub,
    address,
    metadata() {
      const md = new grpc.Metadata();
      if (c.username !== undefined) md.set('username', c.username);
      if (c.password !== undefined) md.set('password', c.password);
      return md;
    },
    close: () => stub.close(),
  };
}

const isServiceError = (e: unknown): e is ServiceError => typeof e === 'object' && e !== null && typeof (e as ServiceError).code === 'number' && 'details' in e;

/** A gRPC failure as a message that says what happened and what to check (never the password: it is not in any status). */
export function describeError(e: unknown, address: string): Error {
  if (!isServiceError(e)) return e instanceof Error ? e : new Error(String(e));
  const name = grpcSdk.loaded?.status[e.code] ?? `code ${e.code}`;
  const status = `${name}: ${e.details || 'no details'}`;
  let msg: string;
  switch (name) {
    case 'UNAUTHENTICATED':
      msg = `the target ${address} refused the credentials (${status}); check username and password`;
      break;
    case 'PERMISSION_DENIED':
      msg = `the target ${address} does not allow this user to subscribe (${status})`;
      break;
    case 'UNAVAILABLE':
      msg = `cannot reach ${address} (${status}); check host, port, that gNMI is enabled there, and tls / tls_ca`;
      break;
    case 'INVALID_ARGUMENT':
      msg = `the target ${address} refused the request (${status}); check subscriptions (paths, sample_interval) and subscription_mode`;
      break;
    case 'UNIMPLEMENTED':
      msg = `the target ${address} does not support this request (${status}); check encoding and subscription_mode`;
      break;
    case 'DEADLINE_EXCEEDED':
      msg = `no answer from ${address} in time (${status})`;
      break;
    default:
      msg = `${address}: ${status}`;
  }
  return Object.assign(new Error(msg), { code: e.code, grpcStatus: name });
}

/** Capabilities, bounded: the reachability and credentials check. */
export async function capabilities(client: GnmiClient, timeoutMs = ANSWER_TIMEOUT_MS): Promise<{ gNMI_version?: string; supported_encodings?: string[] }> {
  return new Promise((resolve, reject) => {
    client.stub.Capabilities({}, client.metadata(), { deadline: new Date(Date.now() + timeoutMs) }, (err, res) => {
      if (err) reject(describeError(err, client.address));
      else resolve(res ?? {});
    });
  });
}
