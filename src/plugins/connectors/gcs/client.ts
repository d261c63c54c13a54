// What the gcs source and sink share: the credential and endpoint fields, one @google-cloud/storage
// client per component (built at first use: reading the key file is I/O, which create() must not
// do), the connection states of an HTTP client, and errors in words a user can act on.
import { readFile } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import type { Bucket, Storage, StorageOptions } from '@google-cloud/storage';
import { errorMessage } from '../../../core/errors.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { once } from '../../connector-runtime/lazy.js';
import type { PluginContext } from '../../types.js';

/** Cloud Storage bucket names: 3-63 characters (up to 222 with dots), lower case, digits, - _ . */
const BUCKET_PATTERN = '^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$';

export const commonFields = {
  bucket: Type.String({ pattern: BUCKET_PATTERN, description: 'Bucket name (without gs://).' }),
  service_account_json: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Path to a service account key file (JSON, as the Cloud console creates it). Unset: Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud, or the metadata server on Google Cloud).',
    }),
  ),
  endpoint_url: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description: 'JSON API endpoint instead of https://storage.googleapis.com, for emulators and tests. Our extension of doc 3.',
    }),
  ),
};

export interface GcsConfig {
  bucket: string;
  service_account_json?: string;
  endpoint_url?: string;
}

const gcsSdk = once(() => import('@google-cloud/storage'));

/** The token endpoint @google-cloud/storage's auth library posts to, whatever the key file says. */
const LIBRARY_TOKEN_URL = 'https://www.googleapis.com/oauth2/v4/token';

interface ServiceAccountKey {
  type?: string;
  project_id?: string;
  client_email?: string;
  private_key?: string;
  token_uri?: string;
}

async function readKey(path: string): Promise<ServiceAccountKey> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new GcsConfigError(
      code === 'ENOENT' ? `service_account_json ${path} does not exist` : `cannot read service_account_json ${path}: ${errorMessage(e)}`,
    );
  }
  let key: ServiceAccountKey;
  try {
    key = JSON.parse(text) as ServiceAccountKey;
  } catch {
    throw new GcsConfigError(`service_account_json ${path} is not JSON; download a JSON key of the service account`);
  }
  if (key.type !== 'service_account' || !key.client_email || !key.private_key) {
    throw new GcsConfigError(`service_account_json ${path} is not a service account key (type "${String(key.type)}", needs client_email and private_key)`);
  }
  return key;
}

/** A mistake in the configuration: retrying cannot fix it. */
export class GcsConfigError extends Error {
  override name = 'GcsConfigError';
}

/**
 * The Storage client of a config. The key file's `token_uri` is honoured when it is not Google's
 * (a test peer, a private deployment): the auth library otherwise posts to its own fixed URL.
 * The library's own retries are off: the runtime's sink policy and the next run decide.
 */
export async function openStorage(c: GcsConfig): Promise<Storage> {
  const opts: StorageOptions = { retryOptions: { autoRetry: false } };
  if (c.endpoint_url !== undefined) {
    opts.apiEndpoint = c.endpoint_url.replace(/\/+$/, '');
    // An endpoint of our own still authenticates (the library skips it for emulators by default).
    opts.useAuthWithCustomEndpoint = true;
  }
  if (c.service_account_json !== undefined) {
    const key = await readKey(c.service_account_json);
    opts.credentials = { client_email: key.client_email, private_key: key.private_key };
    if (key.project_id) opts.projectId = key.project_id;
    const tokenUri = key.token_uri;
    if (tokenUri && !/^https:\/\/([a-z0-9-]+\.)*googleapis\.com\//.test(tokenUri)) {
      opts.clientOptions = {
        transporterOptions: {
          adapter: (o, next) => next(String(o.url) === LIBRARY_TOKEN_URL ? { ...o, url: tokenUri } : o),
        },
      };
    }
  }
  const { Storage } = await gcsSdk();
  return new Storage(opts);
}

/** One lazily opened client per component, and its connection states (as the rest connector reports them). */
export class GcsClient {
  private storage?: Promise<Storage>;
  /** Connection states, as the rest connector reports them. */
  readonly presence: PeerPresence;

  constructor(
    readonly c: GcsConfig,
    ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>,
  ) {
    this.presence = new PeerPresence(ctx, 'gcs', (e) => httpStatus(e) !== undefined || e instanceof GcsConfigError);
  }

  bucket(): Promise<Bucket> {
    this.storage ??= openStorage(this.c);
    this.storage.catch(() => (this.storage = undefined)); // a missing key file may appear later
    return this.storage.then((s) => s.bucket(this.c.bucket));
  }

  /** Runs one exchange with the peer, reporting what it showed of the connection. */
  call<T>(op: (bucket: Bucket) => Promise<T>): Promise<T> {
    return this.presence.call(async () => op(await this.bucket()));
  }
}

/** The HTTP status of a failed request (an API or token endpoint answer), if there was one. */
export function httpStatus(e: unknown): number | undefined {
  const err = e as { code?: unknown; status?: unknown; response?: { status?: unknown } };
  for (const v of [err.code, err.status, err.response?.status]) if (typeof v === 'number' && v >= 100 && v < 600) return v;
  return undefined;
}

/** Retrying the same request may succeed: no answer, throttled, or a server error. */
export function retryable(e: unknown): boolean {
  if (e instanceof GcsConfigError) return false;
  const s = httpStatus(e);
  return s === undefined || s === 408 || s === 429 || s >= 500;
}

/** A failed request in words a user can act on (`what`: `listing gs://b/prefix`...). */
export function describe(e: unknown, what: string, c: GcsConfig): string {
  if (e instanceof GcsConfigError) return e.message;
  const msg = oneLine(errorMessage(e));
  if (/invalid_grant|invalid_scope|unauthorized_client/.test(msg)) {
    return `${what}: the token endpoint refused the service account (${msg}); check service_account_json (a revoked or deleted key?)`;
  }
  if (/Could not load the default credentials/.test(msg)) return `${what}: no credentials: set service_account_json or GOOGLE_APPLICATION_CREDENTIALS`;
  const status = httpStatus(e);
  const endpoint = c.endpoint_url ?? 'https://storage.googleapis.com';
  if (status === undefined) return `${what}: cannot reach ${endpoint}: ${msg}`;
  if (status === 401) return `${what}: 401 ${msg}: the credentials were refused; check service_account_json`;
  if (status === 403) return `${what}: 403 ${msg}: the service account lacks a role on bucket ${c.bucket}`;
  if (status === 404) return `${what}: 404 ${msg}`;
  return `${what}: HTTP ${status}: ${msg}`;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
