// What the s3 source and sink share: the bucket and connection fields, the client
// (@aws-sdk/client-s3 3.1169.0), the reachability check, and errors that say what to fix.
// - The SDK's own retries are off (maxAttempts 1): the runtime's sink policy retries, one place.
// - With endpoint_url (MinIO, Ceph, s3rver...): path-style addresses (endpoint/bucket/key), region
//   us-east-1 unless region_name says otherwise, and checksums only where S3 requires them
//   (WHEN_REQUIRED): the SDK's default (CRC32 on every upload, sent as aws-chunked framing for
//   streamed bodies) is stored verbatim inside the object by stores that do not know it.
// - Without keys, the SDK's default credential chain applies (environment, shared files, SSO,
//   container or instance role).
// - Every request goes through one middleware that reports the connection state: an HTTP answer
//   (any status) is `connected`, no answer is `disconnected`.
import type { S3Client } from '@aws-sdk/client-s3';
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../../core/errors.js';
import { secret } from '../../../core/secrets.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { once } from '../../connector-runtime/lazy.js';
import type { LintIssue, PluginContext } from '../../types.js';

/** Seconds before a TCP connect fails, and before a request without a response (headers) fails. */
const CONNECT_TIMEOUT_MS = 10_000;
const RESPONSE_TIMEOUT_MS = 120_000;

export const s3Fields = {
  bucket: Type.String({ minLength: 1, description: 'Bucket name (the name only: a path inside it goes into prefix or key_template).' }),
  endpoint_url: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'URL of an S3-compatible store (MinIO, Ceph RGW...), e.g. http://minio.internal:9000; unset: AWS S3. With it, requests use path-style addresses (<endpoint>/<bucket>/<key>).',
    }),
  ),
  region_name: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Region, e.g. eu-west-1. Unset: us-east-1 with endpoint_url, otherwise the AWS default chain (AWS_REGION, ~/.aws/config).',
    }),
  ),
  aws_access_key_id: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Access key ID, with aws_secret_access_key. Unset: the AWS default credential chain (environment, ~/.aws/credentials, SSO, container or instance role).',
    }),
  ),
  aws_secret_access_key: secret('Secret access key, with aws_access_key_id.'),
};

export interface S3Location {
  bucket: string;
  endpoint_url?: string;
  region_name?: string;
  aws_access_key_id?: string;
  aws_secret_access_key?: string;
}

/** Cross-field rules of the shared fields. */
export function lintS3(c: S3Location): LintIssue[] {
  const out: LintIssue[] = [];
  if (c.bucket.includes('/'))
    out.push({ path: 'bucket', message: 'bucket is a bucket name only; put the path inside it into prefix (source) or key_template (sink)' });
  if ((c.aws_access_key_id === undefined) !== (c.aws_secret_access_key === undefined)) {
    const missing = c.aws_access_key_id === undefined ? 'aws_access_key_id' : 'aws_secret_access_key';
    out.push({ path: missing, message: 'set aws_access_key_id and aws_secret_access_key together, or neither (the AWS default credential chain)' });
  }
  if (c.endpoint_url !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(c.endpoint_url);
    } catch {
      // reported below
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      out.push({ path: 'endpoint_url', message: 'endpoint_url must be an http:// or https:// URL, e.g. http://minio.internal:9000' });
  }
  return out;
}

/** Where the bucket lives, for messages. */
export const storeName = (c: S3Location) => c.endpoint_url ?? `AWS S3${c.region_name ? ` (${c.region_name})` : ''}`;

export interface S3Link {
  client: S3Client;
  /** Reports a connection lost outside a request's answer (a response body cut off mid-object). */
  lost(e: unknown): void;
}

/** @aws-sdk/client-s3, loaded at the first connection: the client and the command classes. */
export const s3sdk = once(() => import('@aws-sdk/client-s3'));
export type S3Sdk = Awaited<ReturnType<typeof s3sdk>>;

/** A client for `c`; `ctx` (a run's source or sink) gets the connection states. No I/O besides loading the SDK. */
export async function s3Client(c: S3Location, ctx?: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>): Promise<S3Link> {
  return s3Link(await s3sdk(), c, ctx);
}

/** s3Client() with the SDK at hand (synchronous). */
export function s3Link(sdk: S3Sdk, c: S3Location, ctx?: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>): S3Link {
  const endpoint = c.endpoint_url;
  const client = new sdk.S3Client({
    region: c.region_name ?? (endpoint !== undefined ? 'us-east-1' : undefined),
    ...(endpoint !== undefined
      ? { endpoint, forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }
      : {}),
    ...(c.aws_access_key_id !== undefined && c.aws_secret_access_key !== undefined
      ? { credentials: { accessKeyId: c.aws_access_key_id, secretAccessKey: c.aws_secret_access_key } }
      : {}),
    maxAttempts: 1,
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: RESPONSE_TIMEOUT_MS, throwOnRequestTimeout: true },
  });
  if (!ctx) return { client, lost: () => {} };
  const presence = new PeerPresence(ctx, 's3', answered);
  const lost = (e: unknown) => presence.lost(e);
  client.middlewareStack.add(
    (next) => async (args) => {
      presence.connecting();
      try {
        const out = await next(args);
        presence.answered();
        return out;
      } catch (e) {
        if (!isAbort(e)) presence.failed(e);
        throw e;
      }
    },
    { step: 'initialize', name: 'svcConnectionState' },
  );
  return { client, lost };
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string> };
}

/** The server answered (any HTTP status): the connection itself is fine. */
const answered = (e: unknown) => typeof (e as SdkError)?.$metadata?.httpStatusCode === 'number';
export const isAbort = (e: unknown) => (e as SdkError)?.name === 'AbortError';

/** Problems that sending the same request again cannot fix. */
const PERMANENT = new Set([
  'NoSuchBucket',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidBucketName',
  'PermanentRedirect',
  'AuthorizationHeaderMalformed',
  'CredentialsProviderError',
  'NoSuchKey',
  'PreconditionFailed',
]);

/**
 * What went wrong, in words that say what to fix, and whether a retry can help. `what` is the
 * operation (`listing s3://bucket/prefix`); `permission` the IAM action it needs.
 */
export function s3Problem(e: unknown, c: S3Location, what: string, permission: string): { message: string; retryable: boolean } {
  const err = (e ?? {}) as SdkError;
  const name = err.name ?? '';
  const status = err.$metadata?.httpStatusCode;
  const text = errorMessage(e);
  const at = storeName(c);
  let message: string;
  if (name === 'NoSuchBucket') message = `bucket '${c.bucket}' does not exist at ${at}; create it or correct 'bucket'`;
  else if (name === 'InvalidAccessKeyId') message = `${at} does not know the access key ID (InvalidAccessKeyId); check aws_access_key_id`;
  else if (name === 'SignatureDoesNotMatch')
    message = `${at} refused the request signature (SignatureDoesNotMatch): the secret access key does not belong to the access key ID; check aws_secret_access_key`;
  else if (name === 'AccessDenied' || status === 403)
    message = `${at} denied ${what} (${name || 'HTTP 403'}); the credentials need ${permission} on bucket '${c.bucket}'`;
  else if (name === 'PermanentRedirect' || status === 301) {
    const region = err.$response?.headers?.['x-amz-bucket-region'];
    message = `bucket '${c.bucket}' is in ${region ? `region ${region}` : 'another region'}; set region_name${region ? `: ${region}` : ''}`;
  } else if (name === 'CredentialsProviderError' || /Could not load credentials/i.test(text)) {
    message =
      'no credentials: set aws_access_key_id and aws_secret_access_key, or provide them through the AWS default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, a container or instance role)';
  } else if (/Region is missing/i.test(text)) message = 'no region: set region_name (or AWS_REGION in the environment)';
  else if (status === undefined && !isAbort(e))
    message = `cannot reach ${at} while ${what}: ${err.code && !text.includes(err.code) ? `${err.code} ` : ''}${text}; check ${c.endpoint_url !== undefined ? 'endpoint_url' : 'region_name and the network'}`;
  else message = `${what} failed: ${name && !text.startsWith(name) ? `${name}: ` : ''}${text}${status ? ` (HTTP ${status})` : ''}`;
  const retryable =
    !PERMANENT.has(name) &&
    !(status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) &&
    !/Region is missing|Could not load credentials/i.test(text);
  return { message, retryable };
}

/** The reachability check of source and sink: authenticate and list one key of the bucket (s3:ListBucket). */
export async function checkBucket(c: S3Location & { prefix?: string }, signal: AbortSignal): Promise<void> {
  const sdk = await s3sdk();
  const { client } = s3Link(sdk, c);
  try {
    await client.send(new sdk.ListObjectsV2Command({ Bucket: c.bucket, Prefix: c.prefix || undefined, MaxKeys: 1 }), { abortSignal: signal });
  } catch (e) {
    throw new Error(`s3: ${s3Problem(e, c, `listing bucket '${c.bucket}'`, 's3:ListBucket').message}`, { cause: e });
  } finally {
    client.destroy();
  }
}
