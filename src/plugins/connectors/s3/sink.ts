// Sink `s3`: writes the encoded batches into objects named by key_template. An object cannot be
// appended to, so the shared RollingFileSink runs in `flush` mode: every open object is completed
// (published) at each runtime flush, before the source finalizes its input, and a key written again
// later in the run gets the next part suffix (_00001...). Each object is one streamed upload
// (@aws-sdk/lib-storage 3.1169.0 `Upload` fed by a PassThrough): up to PART_SIZE it is one
// PutObject at the end, above it a multipart upload whose parts go out while the records are
// written, so memory stays bounded whatever the object's size. An object is visible only once
// its upload completed; a failed or cancelled one is never published (its multipart upload is
// aborted).
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { Upload } from '@aws-sdk/lib-storage';
import type { S3Client } from '@aws-sdk/client-s3';
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { lintTemplateField, objectSinkFields, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { once as lazy } from '../../connector-runtime/lazy.js';
import { defineSink, type PluginContext, type Sink } from '../../types.js';
import { checkBucket, lintS3, s3Fields, s3Link, s3Problem, s3sdk, type S3Link } from './client.js';
import { s3DlqReader } from './dlq-reader.js';

const libStorage = lazy(() => import('@aws-sdk/lib-storage'));

/** Bytes per multipart part (S3's minimum is 5 MiB) and parts uploaded at once per object. */
export const PART_SIZE = 8 * 1024 * 1024;
export const PARTS_AT_ONCE = 2;
/** Bytes a write may run ahead of the upload before it waits. */
const WRITE_BUFFER = 1024 * 1024;

const config = Type.Object(
  {
    bucket: s3Fields.bucket,
    key_template: objectSinkFields('object').template,
    endpoint_url: s3Fields.endpoint_url,
    aws_access_key_id: s3Fields.aws_access_key_id,
    aws_secret_access_key: s3Fields.aws_secret_access_key,
    region_name: s3Fields.region_name,
    content_type: objectSinkFields('object').content_type,
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

/** Objects of one bucket; the client is made at the first upload and let go at close. */
class S3Objects implements FileTarget {
  readonly label = 's3 sink';
  private link?: S3Link;

  constructor(
    private readonly c: Config,
    private readonly ctx: PluginContext,
  ) {}

  where(rel: string): string {
    return `s3://${this.c.bucket}/${rel}`;
  }

  async openNew(rel: string): Promise<OutFile> {
    const sdk = await s3sdk();
    this.link ??= s3Link(sdk, this.c, this.ctx);
    return S3Upload.start(this.link.client, this.c, rel, (e) => this.problem(e, rel));
  }

  problem(e: unknown, key: string): WriteError {
    const p = s3Problem(e, this.c, `writing ${this.where(key)}`, 's3:PutObject');
    const msg = `s3 sink: ${p.message}`;
    return new WriteError(this.ctx.redact ? this.ctx.redact(msg) : msg, p.retryable, { cause: e });
  }

  end() {
    this.link?.client.destroy();
    this.link = undefined;
  }
}

/** One object being uploaded: bytes written go out as the upload takes them. */
export class S3Upload implements OutFile {
  size = 0;
  private readonly body = new PassThrough({ highWaterMark: WRITE_BUFFER });
  private readonly done: Promise<unknown>;
  /** Rejects when the upload failed (a write waiting for room must not wait forever). */
  private readonly failed: Promise<never>;
  private error?: WriteError;

  /** Starts the upload of `key` (no request before the first part or finish()). */
  static async start(client: S3Client, c: Pick<Config, 'bucket' | 'content_type'>, key: string, problem: (e: unknown) => WriteError): Promise<S3Upload> {
    return new S3Upload((await libStorage()).Upload, client, c, key, problem);
  }

  private constructor(
    UploadClass: typeof Upload,
    client: S3Client,
    c: Pick<Config, 'bucket' | 'content_type'>,
    key: string,
    private readonly problem: (e: unknown) => WriteError,
  ) {
    const upload = new UploadClass({
      client,
      params: { Bucket: c.bucket, Key: key, Body: this.body, ContentType: c.content_type },
      partSize: PART_SIZE,
      queueSize: PARTS_AT_ONCE,
    });
    this.done = upload.done();
    this.failed = this.done.then(
      () => new Promise<never>(() => {}),
      (e: unknown) => {
        this.error ??= this.problem(e);
        throw this.error;
      },
    );
    this.failed.catch(() => {});
  }

  async write(buf: Buffer): Promise<void> {
    if (this.error) throw this.error;
    if (!this.body.write(buf)) await Promise.race([once(this.body, 'drain'), this.failed]);
    this.size += buf.length;
  }

  /** Completes the upload: the object appears whole, or not at all. Nothing written: no object. */
  async finish(): Promise<void> {
    if (this.size === 0) return this.abort();
    this.body.end();
    try {
      await this.done;
    } catch (e) {
      throw this.error ?? this.problem(e);
    }
  }

  /**
   * Cancels the upload: the body fails, so lib-storage publishes nothing and aborts a multipart
   * upload it started (AbortMultipartUpload), and waits for parts already on their way.
   */
  async abort(): Promise<void> {
    this.body.destroy(new Error('upload cancelled'));
    await this.done.catch(() => undefined);
  }
}

export default defineSink({
  key: 's3',
  summary: 'Write serialized batches as objects into an S3 (or S3-compatible) bucket, streamed (multipart above 8 MiB), published whole at each flush.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: 'an object is published (its upload completed) before the source finalizes the input it came from; an upload that fails is never published and the input stays for the next run, which writes those records again.',
  },
  config,
  lint: (c) => [...lintS3(c), ...lintTemplateField(c.key_template, 'key_template')],
  examples: [
    {
      title: 'NDJSON exports into AWS S3, one object per run (and per flush)',
      yaml: 'type: s3\nbucket: noc-exports\nkey_template: "alarms/{pipeline}/{timestamp}.ndjson"\nregion_name: eu-west-1\ncontent_type: application/x-ndjson\nserializer_out:\n  type: ndjson\n',
    },
    {
      title: 'One object per input file on MinIO, mirroring the input tree',
      yaml: 'type: s3\nbucket: cdr-json\nkey_template: "{source_path}/{source_stem}.json"\nendpoint_url: http://minio.internal:9000\naws_access_key_id: svc-writer\naws_secret_access_key: ${MINIO_SECRET:-change-me}\ncontent_type: application/json\n',
    },
  ],
  test: (c, { signal }) => checkBucket(c, signal),
  dlqReader: s3DlqReader,
  create(c, ctx): Sink {
    const target = new S3Objects(c, ctx);
    return new RollingFileSink(target, { templateField: 'key_template', template: c.key_template, mode: 'flush' }, ctx);
  },
});
