// Source `s3` (batch): every object under `prefix` in key order, one unit per object, its body
// streamed (GetObject, never held whole). Listing pages through ListObjectsV2 with continuation
// tokens. Objects are never changed or deleted; skip_processed remembers an object by key and ETag
// once all its records were delivered, so a rewritten object (new ETag) is read again. What is read
// is the version that was listed (If-Match on its ETag). Listing order, skip_processed and
// finalizing after delivery are the shared fileUnits' (connector-runtime/file-source.ts).
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError, errorMessage } from '../../../core/errors.js';
import type { FileStat } from '../../connector-runtime/file-guards.js';
import { fileUnits, type FileStore, type ListedFile } from '../../connector-runtime/file-source.js';
import { defineSource, type PluginContext, type Source, type SourceMeta, type SourceUnit } from '../../types.js';
import { checkBucket, isAbort, lintS3, s3Fields, s3Link, s3Problem, s3sdk, type S3Link, type S3Sdk } from './client.js';

/**
 * Keys asked for per ListObjectsV2 request. S3 answers at most 1,000; an internal setting (not a
 * config field) so that tests can page through a small listing.
 */
export const listing = { maxKeys: 1000 };

const config = Type.Object(
  {
    bucket: s3Fields.bucket,
    prefix: Type.String({
      default: '',
      description: 'Read only keys that start with this, e.g. pm/in/ (empty: the whole bucket). Keys ending in / (folder markers) are skipped.',
    }),
    endpoint_url: s3Fields.endpoint_url,
    region_name: s3Fields.region_name,
    aws_access_key_id: s3Fields.aws_access_key_id,
    aws_secret_access_key: s3Fields.aws_secret_access_key,
    skip_processed: Type.Boolean({
      default: false,
      description: 'Skip objects delivered by an earlier run with the same key and ETag; an object written again (new ETag) is read again.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

interface S3File extends ListedFile {
  etag: string;
}

class S3Source implements Source, FileStore<S3File> {
  notes: string[] = [];
  private link?: S3Link;
  /** The part of the prefix up to its last '/': what source_relative_dir is relative to. */
  private readonly root: string;

  constructor(
    private readonly c: Config,
    private readonly ctx: PluginContext,
  ) {
    this.root = c.prefix.slice(0, c.prefix.lastIndexOf('/') + 1);
  }

  /** The client (made at first use) and the SDK's command classes. */
  private async s3(): Promise<{ client: S3Client; sdk: S3Sdk }> {
    const sdk = await s3sdk();
    this.link ??= s3Link(sdk, this.c, this.ctx);
    return { client: this.link.client, sdk };
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, { skip_processed: this.c.skip_processed }, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  private where(key = this.c.prefix) {
    return `s3://${this.c.bucket}/${key}`;
  }

  private failure(e: unknown, what: string, permission: string): SourceError {
    const msg = s3Problem(e, this.c, what, permission).message;
    return new SourceError(`s3: ${this.ctx.redact ? this.ctx.redact(msg) : msg}`, { cause: e });
  }

  async list(signal: AbortSignal): Promise<S3File[]> {
    const files: S3File[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        const { client, sdk } = await this.s3();
        page = await client.send(
          new sdk.ListObjectsV2Command({ Bucket: this.c.bucket, Prefix: this.c.prefix || undefined, MaxKeys: listing.maxKeys, ContinuationToken: token }),
          { abortSignal: signal },
        );
      } catch (e) {
        throw this.failure(e, `listing ${this.where()}`, 's3:ListBucket');
      }
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue; // a folder marker, not data
        const rel = o.Key.slice(this.root.length);
        const slash = rel.lastIndexOf('/');
        files.push({
          path: o.Key,
          name: rel.slice(slash + 1),
          relDir: slash < 0 ? '' : rel.slice(0, slash),
          size: o.Size ?? 0,
          mtimeMs: o.LastModified?.getTime() ?? 0,
          etag: o.ETag ?? '',
        });
      }
      const next = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (page.IsTruncated && (!next || next === token))
        throw new SourceError(`s3: listing ${this.where()}: the store said the list goes on but gave no new continuation token`);
      token = next;
    } while (token !== undefined && !signal.aborted);
    return files;
  }

  /** Not used by the source's own fields (s3 has no file-done guards); fresh size and mtime by HEAD. */
  restat(files: S3File[], signal: AbortSignal): Promise<(FileStat | undefined)[]> {
    return Promise.all(
      files.map(async (f) => {
        try {
          const { client, sdk } = await this.s3();
          const h = await client.send(new sdk.HeadObjectCommand({ Bucket: this.c.bucket, Key: f.path }), { abortSignal: signal });
          return { size: h.ContentLength ?? 0, mtimeMs: h.LastModified?.getTime() ?? 0 };
        } catch (e) {
          if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
          throw this.failure(e, `reading ${this.where(f.path)}`, 's3:GetObject');
        }
      }),
    );
  }

  async *read(f: S3File, signal: AbortSignal): AsyncIterable<Buffer> {
    let body: Readable;
    let expected: number | undefined;
    try {
      // If-Match: the version that was listed (and whose ETag skip_processed remembers), or nothing.
      const { client, sdk } = await this.s3();
      const r = await client.send(new sdk.GetObjectCommand({ Bucket: this.c.bucket, Key: f.path, IfMatch: f.etag || undefined }), { abortSignal: signal });
      body = r.Body as Readable;
      expected = r.ContentLength;
    } catch (e) {
      if ((e as { name?: string }).name === 'PreconditionFailed')
        throw new SourceError(`s3: ${this.where(f.path)} changed since it was listed; it is read at the next run`);
      throw this.failure(e, `reading ${this.where(f.path)}`, 's3:GetObject');
    }
    let got = 0;
    try {
      for await (const chunk of body) {
        got += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    } catch (e) {
      if (signal.aborted || isAbort(e)) throw e;
      this.link?.lost(e);
      throw new SourceError(
        `s3: reading ${this.where(f.path)} broke off after ${got} of ${expected ?? f.size} bytes: ${errorMessage(e)}; the object is read again at the next run`,
        { cause: e },
      );
    } finally {
      body.destroy(); // the consumer stopped early: release the connection
    }
    if (expected !== undefined && got !== expected)
      throw new SourceError(`s3: ${this.where(f.path)} ended after ${got} of ${expected} bytes; the object is read again at the next run`);
  }

  processedKey(f: S3File): string {
    return `s3://${this.c.bucket}/${f.path}|${f.etag}`;
  }

  meta(f: S3File): SourceMeta {
    return { s3_bucket: this.c.bucket, s3_etag: f.etag };
  }

  async close(): Promise<void> {
    this.link?.client.destroy();
    this.link = undefined;
  }
}

export default defineSource({
  key: 's3',
  summary: 'Read the objects of an S3 (or S3-compatible) bucket under a prefix, one unit per object, streamed, with skip-processed by key and ETag.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'reading changes nothing in the bucket; with skip_processed an object is remembered (key and ETag) only after every record from it was written and the sinks flushed, so an object whose read or delivery failed midway is read again, whole, by the next run.',
  },
  config,
  lint: (c) => lintS3(c),
  examples: [
    {
      title: 'PM files from an AWS bucket, each object once',
      yaml: 'type: s3\nbucket: ran-pm-drop\nprefix: ericsson/A/\nregion_name: eu-west-1\nskip_processed: true\n',
    },
    {
      title: 'CDR objects on MinIO with static keys',
      yaml: 'type: s3\nbucket: cdr\nprefix: in/\nendpoint_url: http://minio.internal:9000\naws_access_key_id: svc-reader\naws_secret_access_key: ${MINIO_SECRET:-change-me}\nskip_processed: true\n',
    },
  ],
  test: (c, { signal }) => checkBucket(c, signal),
  create: (c, ctx) => new S3Source(c, ctx),
});
