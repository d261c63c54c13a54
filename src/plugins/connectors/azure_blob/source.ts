// Source `azure_blob` (batch): reads the blobs of a container under a prefix, one unit per blob,
// each download streamed. A unit reads the version that was listed (If-Match on its ETag), so a blob
// rewritten meanwhile is not mixed up with the one remembered by skip_processed (keyed on name and
// ETag). Listing, order, skip_processed and finalizing are the shared fileUnits'
// (connector-runtime/file-source.ts); this module only lists and reads.
import { Type, type Static } from '@sinclair/typebox';
import type { BlobItem, ContainerListBlobFlatSegmentResponse } from '@azure/storage-blob';
import { SourceError } from '../../../core/errors.js';
import { withIdleTimeout } from '../../connector-runtime/idle-timeout.js';
import { fileUnits, type FileStore, type ListedFile } from '../../connector-runtime/file-source.js';
import type { FileStat } from '../../connector-runtime/file-guards.js';
import { defineSource, type PluginContext, type Source, type SourceMeta, type SourceUnit } from '../../types.js';
import { AzureClient, commonFields, containerClient, describe, lintCredentials } from './client.js';

/** Blobs per list request (the service's maximum). */
const PAGE_SIZE = 5000;

const config = Type.Object(
  {
    container: commonFields.container,
    connection_string: commonFields.connection_string,
    account_name: commonFields.account_name,
    account_key: commonFields.account_key,
    prefix: Type.String({ default: '', description: 'Read only blobs whose name starts with this (e.g. `pm/2024/`); empty reads the whole container.' }),
    skip_processed: Type.Boolean({
      default: false,
      description: 'Skip blobs delivered by an earlier run with the same name and ETag (a rewritten blob is read again).',
    }),
    endpoint_url: commonFields.endpoint_url,
    read_timeout_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 60,
      description:
        'Abandon a download that receives no bytes for this many seconds while the run waits for them (a dead or stalled connection); the blob stays for the next run. Our extension of doc 3.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

interface Blob extends ListedFile {
  etag: string;
}

/** The directory of the prefix: `{source_path}` mirrors the tree below it. */
const prefixDir = (prefix: string) => prefix.slice(0, prefix.lastIndexOf('/') + 1);

class AzureSource implements Source, FileStore<Blob> {
  notes: string[] = [];
  private readonly client: AzureClient;

  constructor(
    private readonly c: Config,
    private readonly ctx: PluginContext,
  ) {
    this.client = new AzureClient(c, ctx);
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, { skip_processed: this.c.skip_processed }, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  async list(signal: AbortSignal): Promise<Blob[]> {
    const out: Blob[] = [];
    const base = prefixDir(this.c.prefix);
    let continuationToken: string | undefined;
    do {
      if (signal.aborted) break;
      let page: ContainerListBlobFlatSegmentResponse;
      try {
        page = await this.client.call(async (cc) => {
          const r = await cc
            .listBlobsFlat({ prefix: this.c.prefix || undefined, includeMetadata: true, abortSignal: signal })
            .byPage({ maxPageSize: PAGE_SIZE, continuationToken })
            .next();
          return r.value as ContainerListBlobFlatSegmentResponse;
        });
      } catch (e) {
        throw new SourceError(`azure_blob: ${describe(e, `listing container ${this.c.container} under '${this.c.prefix}'`, this.c)}`, { cause: e });
      }
      for (const b of page.segment.blobItems) {
        const listed = this.listed(b, base);
        if (listed) out.push(listed);
      }
      continuationToken = page.continuationToken || undefined;
    } while (continuationToken);
    return out;
  }

  private listed(b: BlobItem, base: string): Blob | undefined {
    // Directory markers (names ending in /, or hdi_isfolder in accounts with a hierarchical namespace) hold no data.
    if (b.name.endsWith('/') || b.metadata?.hdi_isfolder === 'true') return undefined;
    const rel = b.name.slice(base.length);
    const slash = rel.lastIndexOf('/');
    return {
      path: b.name,
      relDir: slash < 0 ? '' : rel.slice(0, slash),
      name: b.name.slice(b.name.lastIndexOf('/') + 1),
      size: b.properties.contentLength ?? 0,
      mtimeMs: b.properties.lastModified.getTime(),
      etag: b.properties.etag ?? '',
    };
  }

  async restat(files: Blob[]): Promise<(FileStat | undefined)[]> {
    const cc = await this.client.container();
    return Promise.all(
      files.map(async (f) => {
        try {
          const p = await cc.getBlobClient(f.path).getProperties();
          return { size: p.contentLength ?? 0, mtimeMs: p.lastModified?.getTime() ?? 0 };
        } catch {
          return undefined;
        }
      }),
    );
  }

  async *read(f: Blob, signal: AbortSignal): AsyncIterable<Buffer> {
    const where = `${this.c.container}/${f.path}`;
    let body: NodeJS.ReadableStream | undefined;
    try {
      // If-Match: a rewrite since the listing fails this read (412) instead of mixing versions.
      const r = await this.client.call((cc) =>
        cc.getBlobClient(f.path).download(0, undefined, { abortSignal: signal, conditions: f.etag ? { ifMatch: f.etag } : undefined, maxRetryRequests: 0 }),
      );
      body = r.readableStreamBody;
    } catch (e) {
      throw new SourceError(`azure_blob: ${describe(e, `reading ${where}`, this.c)}`, { cause: e });
    }
    if (!body) return;
    try {
      const ms = this.c.read_timeout_seconds * 1000;
      const stream = body as AsyncIterable<Buffer> & { destroy?(err?: Error): void };
      for await (const chunk of withIdleTimeout(
        stream,
        ms,
        () => `no data for ${this.c.read_timeout_seconds} s (read_timeout_seconds): the connection is dead or stalled`,
      ))
        yield chunk;
    } catch (e) {
      if (!signal.aborted) this.client.presence.failed(e);
      const why = e instanceof SourceError ? `reading ${where}: ${e.message}` : describe(e, `reading ${where}`, this.c);
      throw new SourceError(`azure_blob: ${why}`, { cause: e });
    } finally {
      (body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    }
  }

  /** Name and ETag: a rewritten blob has a new ETag and is read again. */
  processedKey(f: Blob): string {
    return `${this.c.container}/${f.path}#${f.etag}`;
  }

  meta(f: Blob): SourceMeta {
    return { azure_container: this.c.container, azure_etag: f.etag };
  }
}

export default defineSource({
  key: 'azure_blob',
  summary: 'Read blobs from an Azure Blob Storage container under a prefix, one unit per blob, streamed.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a blob is marked processed (skip_processed) only after every record from it was written (and the sinks flushed) or dead-lettered; a failed or cut download leaves it unmarked, so the next run reads it again.',
  },
  config,
  lint: lintCredentials,
  examples: [
    {
      title: 'PM files under a prefix with a connection string, each version read once',
      yaml: 'type: azure_blob\ncontainer: ran-pm\nconnection_string: ${AZURE_STORAGE_CONNECTION_STRING:-change-me}\nprefix: pm/\nskip_processed: true\n',
    },
    {
      title: 'Account name and key',
      yaml: 'type: azure_blob\ncontainer: cdr-landing\naccount_name: telcodata\naccount_key: ${AZURE_STORAGE_KEY:-change-me}\nprefix: cdr/\n',
    },
  ],
  async test(c, { signal }) {
    // Authenticate and list at most one blob: the permission a run needs.
    try {
      const page = (await containerClient(c)).listBlobsFlat({ prefix: c.prefix || undefined, abortSignal: signal }).byPage({ maxPageSize: 1 });
      await page.next();
    } catch (e) {
      throw new Error(describe(e, `listing container ${c.container}`, c), { cause: e });
    }
  },
  create: (c, ctx: PluginContext) => new AzureSource(c, ctx),
});
