// Sink `azure_blob`: writes encoded batches as block blobs named by blob_template. Blobs are not
// appended to, so the shared RollingFileSink runs in `flush` mode: every open blob is committed at
// each runtime flush, and a name written again later in the run gets the next part suffix. A blob is
// one uploadStream: blocks are staged as they fill and the blob exists only once its block list is
// committed, so readers never see half a blob.
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import type { ContainerClient } from '@azure/storage-blob';
import { WriteError } from '../../../core/errors.js';
import { lintTemplateField, objectSinkFields, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { defineSink } from '../../types.js';
import { AzureClient, commonFields, containerClient, describe, lintCredentials, retryable, type AzureConfig } from './client.js';

/**
 * Block size: a blob shorter than this is sent at commit time in one block. Memory per open blob
 * stays under about BLOCK_BYTES x 4 (the input buffer, the block being gathered, two in flight).
 */
export const BLOCK_BYTES = 4 * 1024 * 1024;
const MAX_CONCURRENCY = 2;

const config = Type.Object(
  {
    container: commonFields.container,
    connection_string: commonFields.connection_string,
    account_name: commonFields.account_name,
    account_key: commonFields.account_key,
    blob_template: objectSinkFields('blob').template,
    content_type: objectSinkFields('blob').content_type,
    endpoint_url: commonFields.endpoint_url,
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

class AzureBlobs implements FileTarget {
  readonly label = 'azure_blob sink';

  constructor(
    private readonly c: Config,
    private readonly client: AzureClient,
  ) {}

  where(rel: string): string {
    return `${this.c.container}/${rel}`;
  }

  async openNew(rel: string): Promise<OutFile> {
    if (rel.length > 1024) throw new WriteError(`azure_blob sink: blob name ${this.where(rel)} is longer than 1024 characters; shorten blob_template`, false);
    let cc: ContainerClient;
    try {
      cc = await this.client.container();
    } catch (e) {
      throw new WriteError(`azure_blob sink: ${describe(e, `writing ${this.where(rel)}`, this.c)}`, false, { cause: e });
    }
    return new AzureUpload(cc, rel, this.c, this.client);
  }
}

/** One blob being written through uploadStream; committed by finish(). */
class AzureUpload implements OutFile {
  size = 0;
  private readonly input = new PassThrough({ highWaterMark: BLOCK_BYTES });
  private readonly cancel = new AbortController();
  private done?: Promise<void>;
  private failure?: unknown;
  private abandoned = false;

  constructor(
    private readonly cc: ContainerClient,
    private readonly name: string,
    private readonly c: AzureConfig & { content_type: string },
    private readonly client: AzureClient,
  ) {}

  async write(buf: Buffer): Promise<void> {
    this.check();
    this.start();
    this.size += buf.length;
    // Waits while the staged blocks are in flight (the service sets the pace).
    if (!this.input.write(buf)) await Promise.race([once(this.input, 'drain'), this.done!]).catch((e: unknown) => (this.failure ??= e));
    this.check();
  }

  async finish(): Promise<void> {
    if (this.size === 0) return this.abort(); // nothing written: publish nothing
    this.input.end();
    await this.done;
    this.check();
  }

  async abort(): Promise<void> {
    this.abandoned = true;
    // The block list is never committed: staged blocks are discarded by the service.
    this.cancel.abort();
    this.input.destroy();
    await this.done?.catch(() => undefined);
  }

  private start() {
    if (this.done) return;
    this.client.presence.connecting();
    this.done = this.cc
      .getBlockBlobClient(this.name)
      .uploadStream(this.input, BLOCK_BYTES, MAX_CONCURRENCY, { blobHTTPHeaders: { blobContentType: this.c.content_type }, abortSignal: this.cancel.signal })
      .then(
        () => this.client.presence.answered(),
        (e: unknown) => {
          this.failure ??= e;
          if (!this.abandoned) this.client.presence.failed(e);
        },
      );
  }

  private check() {
    if (this.failure === undefined) return;
    const e = this.failure;
    throw new WriteError(`azure_blob sink: ${describe(e, `uploading ${this.c.container}/${this.name}`, this.c)}`, retryable(e), { cause: e });
  }
}

export default defineSink({
  key: 'azure_blob',
  summary: 'Write serialized batches as Azure block blobs named by a template, each committed whole.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: "a blob's block list is committed before the source input behind it is finalized; an upload cut short commits nothing and the input stays for the next run, which writes those records again.",
  },
  config,
  lint: (c) => [...lintCredentials(c), ...lintTemplateField(c.blob_template, 'blob_template')],
  examples: [
    {
      title: 'NDJSON blobs per pipeline and run, connection string from the environment',
      yaml: 'type: azure_blob\ncontainer: svc-exports\nconnection_string: ${AZURE_STORAGE_CONNECTION_STRING:-change-me}\nblob_template: "{pipeline}/{timestamp}.ndjson"\ncontent_type: application/x-ndjson\n',
    },
    {
      title: 'One blob per input file, account name and key',
      yaml: 'type: azure_blob\ncontainer: svc-archive\naccount_name: telcodata\naccount_key: ${AZURE_STORAGE_KEY:-change-me}\nblob_template: "converted/{source_path}/{source_stem}.json"\ncontent_type: application/json\n',
    },
  ],
  async test(c, { signal }) {
    // Authenticate and read the container's properties: writing a probe blob would leave traces.
    try {
      await (await containerClient(c)).getProperties({ abortSignal: signal });
    } catch (e) {
      throw new Error(describe(e, `reading container ${c.container}`, c), { cause: e });
    }
  },
  create(c, ctx) {
    const client = new AzureClient(c, ctx);
    return new RollingFileSink(new AzureBlobs(c, client), { templateField: 'blob_template', template: c.blob_template, mode: 'flush' }, ctx);
  },
});
