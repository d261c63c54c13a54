// Sink `gcs`: writes encoded batches as objects named by blob_template. Objects cannot be appended
// to, so the shared RollingFileSink runs in `flush` mode: every open object is completed at each
// runtime flush, and a name written again later in the run gets the next part suffix. An object is
// one simple (multipart, non-resumable) upload that the bucket shows only once it completed, so
// readers never see half an object; the client checks the stored CRC32C against what it sent.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import type { Bucket } from '@google-cloud/storage';
import { WriteError } from '../../../core/errors.js';
import { lintTemplateField, objectSinkFields, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { defineSink } from '../../types.js';
import { commonFields, describe, GcsClient, openStorage, retryable, type GcsConfig } from './client.js';

/**
 * Bytes an object collects before its upload starts. A smaller object goes up in one request at
 * publish time (no connection held open while a slow source trickles in); a larger one streams from
 * then on, so memory stays at about this much per open object whatever its size.
 */
export const UPLOAD_START_BYTES = 4 * 1024 * 1024;

const config = Type.Object(
  {
    bucket: commonFields.bucket,
    blob_template: objectSinkFields('object').template,
    service_account_json: commonFields.service_account_json,
    content_type: objectSinkFields('object').content_type,
    endpoint_url: commonFields.endpoint_url,
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

class GcsObjects implements FileTarget {
  readonly label = 'gcs sink';

  constructor(
    private readonly c: Config,
    private readonly client: GcsClient,
  ) {}

  where(rel: string): string {
    return `gs://${this.c.bucket}/${rel}`;
  }

  async openNew(rel: string): Promise<OutFile> {
    if (Buffer.byteLength(rel) > 1024) throw new WriteError(`gcs sink: object name ${this.where(rel)} is longer than 1024 bytes; shorten blob_template`, false);
    return new GcsUpload(await this.bucket(rel), rel, this.c, this.client);
  }

  private async bucket(rel: string): Promise<Bucket> {
    try {
      return await this.client.bucket();
    } catch (e) {
      throw new WriteError(`gcs sink: ${describe(e, `writing ${this.where(rel)}`, this.c)}`, retryable(e), { cause: e });
    }
  }
}

/** One object being written: held until UPLOAD_START_BYTES, then streamed; published by finish(). */
class GcsUpload implements OutFile {
  size = 0;
  private held: Buffer[] = [];
  private stream?: Writable;
  private done?: Promise<void>;
  private failure?: unknown;
  private abandoned = false;

  constructor(
    private readonly bucket: Bucket,
    private readonly name: string,
    private readonly c: GcsConfig & { content_type: string },
    private readonly client: GcsClient,
  ) {}

  async write(buf: Buffer): Promise<void> {
    this.check();
    this.size += buf.length;
    if (!this.stream) {
      this.held.push(buf);
      if (this.size >= UPLOAD_START_BYTES) await this.start();
      return;
    }
    await this.push(buf);
  }

  async finish(): Promise<void> {
    if (this.size === 0) return; // nothing written: publish nothing
    if (!this.stream) await this.start();
    this.stream!.end();
    await this.done;
    this.check();
  }

  async abort(): Promise<void> {
    this.held = [];
    this.abandoned = true;
    // Destroying the request before its last byte leaves no object behind.
    this.stream?.destroy(new Error('upload abandoned'));
    await this.done?.catch(() => undefined);
  }

  private start(): Promise<void> {
    this.client.presence.connecting();
    const ws = this.bucket.file(this.name).createWriteStream({ resumable: false, contentType: this.c.content_type, validation: 'crc32c' });
    this.stream = ws;
    this.done = new Promise<void>((resolve, reject) => {
      ws.once('finish', resolve);
      ws.once('error', reject);
    }).then(
      () => this.client.presence.answered(),
      (e: unknown) => {
        this.failure ??= e;
        if (!this.abandoned) this.client.presence.failed(e);
      },
    );
    const held = this.held;
    this.held = [];
    return this.pushAll(held);
  }

  private async pushAll(bufs: Buffer[]) {
    for (const b of bufs) await this.push(b);
  }

  /** Writes into the upload, waiting while its buffer is full (the peer sets the pace). */
  private async push(buf: Buffer): Promise<void> {
    const ws = this.stream!;
    if (!ws.write(buf)) await Promise.race([once(ws, 'drain'), this.done!.then(() => this.check())]).catch((e: unknown) => (this.failure ??= e));
    this.check();
  }

  private check() {
    if (this.failure === undefined) return;
    const e = this.failure;
    throw new WriteError(`gcs sink: ${describe(e, `uploading gs://${this.c.bucket}/${this.name}`, this.c)}`, retryable(e), { cause: e });
  }
}

export default defineSink({
  key: 'gcs',
  summary: 'Write serialized batches as Google Cloud Storage objects named by a template, each published whole.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: 'an object is complete at the bucket (its CRC32C checked) before the source input behind it is finalized; an upload cut short publishes nothing and the input stays for the next run, which writes those records again.',
  },
  config,
  lint: (c) => lintTemplateField(c.blob_template, 'blob_template'),
  examples: [
    {
      title: 'NDJSON objects per pipeline and run',
      yaml: 'type: gcs\nbucket: svc-exports\nblob_template: "{pipeline}/{timestamp}.ndjson"\nservice_account_json: /etc/svc/gcs-writer.json\ncontent_type: application/x-ndjson\n',
    },
    {
      title: 'One object per input file, mirroring its directory',
      yaml: 'type: gcs\nbucket: svc-archive\nblob_template: "converted/{source_path}/{source_stem}.json"\ncontent_type: application/json\n',
    },
  ],
  async test(c) {
    // Authenticate and read the bucket's metadata (storage.buckets.get): writing a probe object
    // would leave traces and needs delete rights a writer may not have.
    try {
      const storage = await openStorage(c);
      await storage.bucket(c.bucket).getMetadata();
    } catch (e) {
      throw new Error(describe(e, `reading bucket ${c.bucket}`, c), { cause: e });
    }
  },
  create(c, ctx) {
    const client = new GcsClient(c, ctx);
    return new RollingFileSink(new GcsObjects(c, client), { templateField: 'blob_template', template: c.blob_template, mode: 'flush' }, ctx);
  },
});
