// What the azure_blob source and sink share: the credential fields and their lint, one
// @azure/storage-blob client per component (building it parses the credentials and does no I/O),
// the connection states of an HTTP client, and errors in words a user can act on.
import { Type } from '@sinclair/typebox';
import type { BlobServiceClient, ContainerClient, StoragePipelineOptions } from '@azure/storage-blob';
import { errorMessage } from '../../../core/errors.js';
import { secret } from '../../../core/secrets.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { once } from '../../connector-runtime/lazy.js';
import type { LintIssue, PluginContext } from '../../types.js';

export const commonFields = {
  container: Type.String({
    pattern: '^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$',
    description: 'Container name: 3-63 lower-case letters, digits and single hyphens.',
  }),
  connection_string: secret(
    'Storage account connection string (`DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...` or with a SharedAccessSignature). Excludes account_name and account_key.',
  ),
  account_name: Type.Optional(Type.String({ minLength: 1, description: 'Storage account name, with account_key (instead of connection_string).' })),
  account_key: secret('Storage account access key (base64), with account_name.'),
  endpoint_url: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description:
        'Blob service URL with account_name and account_key, instead of https://<account_name>.blob.core.windows.net: sovereign clouds, Azurite (`http://127.0.0.1:10000/devstoreaccount1`). Our extension of doc 3.',
    }),
  ),
};

export interface AzureConfig {
  container: string;
  connection_string?: string;
  account_name?: string;
  account_key?: string;
  endpoint_url?: string;
}

const has = (v: string | undefined) => v !== undefined && v !== '';

/** Exactly one way to authenticate: a connection string, or an account name with its key. */
export function lintCredentials(c: AzureConfig): LintIssue[] {
  const out: LintIssue[] = [];
  if (has(c.connection_string)) {
    for (const f of ['account_name', 'account_key', 'endpoint_url'] as const) {
      if (has(c[f]))
        out.push({
          path: f,
          message: `${f} is not used with connection_string (the connection string names the account, its key and endpoint); remove one of them`,
        });
    }
    return out;
  }
  if (!has(c.account_name) && !has(c.account_key)) out.push({ path: 'connection_string', message: 'set connection_string, or account_name and account_key' });
  else if (!has(c.account_name)) out.push({ path: 'account_name', message: 'account_key needs account_name' });
  else if (!has(c.account_key)) out.push({ path: 'account_key', message: 'account_name needs account_key (or use connection_string)' });
  return out;
}

const azureSdk = once(() => import('@azure/storage-blob'));

/** The SDK's own retries are off: the runtime's sink policy and the next run decide. */
const PIPELINE: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

/** The container's client; parses the credentials (a malformed one throws here), no I/O besides loading the SDK. */
export async function containerClient(c: AzureConfig): Promise<ContainerClient> {
  const { BlobServiceClient, StorageSharedKeyCredential } = await azureSdk();
  let service: BlobServiceClient;
  try {
    if (has(c.connection_string)) service = BlobServiceClient.fromConnectionString(c.connection_string!, PIPELINE);
    else {
      const url = (c.endpoint_url ?? `https://${c.account_name}.blob.core.windows.net`).replace(/\/+$/, '');
      service = new BlobServiceClient(url, new StorageSharedKeyCredential(c.account_name!, c.account_key!), PIPELINE);
    }
  } catch (e) {
    throw new AzureConfigError(
      `the credentials cannot be used: ${errorMessage(e)}; check ${has(c.connection_string) ? 'connection_string' : 'account_name and account_key'}`,
    );
  }
  return service.getContainerClient(c.container);
}

/** A mistake in the configuration: retrying cannot fix it. */
export class AzureConfigError extends Error {
  override name = 'AzureConfigError';
}

/** One lazily built client per component, and its connection states (as the rest connector reports them). */
export class AzureClient {
  private client?: Promise<ContainerClient>;
  /** Connection states, as the rest connector reports them. */
  readonly presence: PeerPresence;

  constructor(
    readonly c: AzureConfig,
    ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>,
  ) {
    this.presence = new PeerPresence(ctx, 'azure_blob', (e) => httpStatus(e) !== undefined || e instanceof AzureConfigError);
  }

  container(): Promise<ContainerClient> {
    return (this.client ??= containerClient(this.c));
  }

  /** Runs one exchange with the peer, reporting what it showed of the connection. */
  call<T>(op: (container: ContainerClient) => Promise<T>): Promise<T> {
    return this.presence.call(async () => op(await this.container()));
  }
}

export function httpStatus(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown }).statusCode;
  return typeof s === 'number' && s >= 100 ? s : undefined;
}

/** Retrying the same request may succeed: no answer, throttled, or a server error. */
export function retryable(e: unknown): boolean {
  if (e instanceof AzureConfigError) return false;
  const s = httpStatus(e);
  return s === undefined || s === 408 || s === 429 || s >= 500;
}

/** A failed request in words a user can act on (`what`: `listing container x`...). */
export function describe(e: unknown, what: string, c: AzureConfig): string {
  if (e instanceof AzureConfigError) return `${what}: ${e.message}`;
  // The service's message ends with RequestId and Time lines: the first line says it.
  const msg = errorMessage(e).split('\n')[0]!.trim();
  const code = (e as { code?: unknown }).code;
  const status = httpStatus(e);
  if (status === undefined) return `${what}: cannot reach the blob service: ${msg}${typeof code === 'string' && !msg.includes(code) ? ` (${code})` : ''}`;
  const tag = `${status}${typeof code === 'string' ? ` ${code}` : ''}`;
  if (status === 403 && /AuthenticationFailed|AuthorizationFailure|InvalidAuthenticationInfo/.test(String(code) + msg)) {
    return `${what}: ${tag}: ${msg}; check ${has(c.connection_string) ? 'connection_string' : 'account_name and account_key'}`;
  }
  if (status === 403) return `${what}: ${tag}: ${msg}; the credentials lack a permission on container ${c.container}`;
  if (code === 'ContainerNotFound') return `${what}: ${tag}: container ${c.container} does not exist`;
  return `${what}: ${tag}: ${msg}`;
}
