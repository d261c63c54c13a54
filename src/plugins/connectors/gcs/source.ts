// Source `gcs` (batch): reads the objects of a bucket under a prefix, one unit per object, each
// download streamed and checked against the object's CRC32C. A unit reads the generation that was
// listed, so an object rewritten meanwhile is not mixed up with the one remembered by skip_processed
// (keyed on name and generation). Listing, order, skip_processed and finalizing are the shared
// fileUnits' (connector-runtime/file-source.ts); this module only lists and reads.
import { Type, type Static } from '@sinclair/typebox';
import type { File } from '@google-cloud/storage';
import { SourceError } from '../../../core/errors.js';
import { withIdleTimeout } from '../../connector-runtime/idle-timeout.js';
import { fileUnits, type FileStore, type ListedFile } from '../../connector-runtime/file-source.js';
import type { FileStat } from '../../connector-runtime/file-guards.js';
import { defineSource, type PluginContext, type Source, type SourceMeta, type SourceUnit } from '../../types.js';
import { commonFields, describe, GcsClient, openStorage } from './client.js';

/** Objects per list request (Google's maximum). */
const PAGE_SIZE = 1000;

const config = Type.Object(
  {
    bucket: commonFields.bucket,
    prefix: Type.String({ default: '', description: 'Read only objects whose name starts with this (e.g. `pm/2024/`); empty reads the whole bucket.' }),
    service_account_json: commonFields.service_account_json,
    skip_processed: Type.Boolean({
      default: false,
      description: 'Skip objects delivered by an earlier run with the same name and generation (a rewritten object is read again).',
    }),
    endpoint_url: commonFields.endpoint_url,
    read_timeout_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 60,
      description:
        'Abandon a download that receives no bytes for this many seconds while the run waits for them (a dead or stalled connection); the object stays for the next run. Our extension of doc 3.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

interface GcsObject extends ListedFile {
  generation: string;
}

interface ObjectMetadata {
  name?: string;
  size?: string | number;
  updated?: string;
  generation?: string | number;
}

/** The directory of the prefix: `{source_path}` mirrors the tree below it. */
const prefixDir = (prefix: string) => prefix.slice(0, prefix.lastIndexOf('/') + 1);

class GcsSource implements Source, FileStore<GcsObject> {
  notes: string[] = [];
  private readonly client: GcsClient;

  constructor(
    private readonly c: Config,
    private readonly ctx: PluginContext,
  ) {
    this.client = new GcsClient(c, ctx);
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, { skip_processed: this.c.skip_processed }, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  async list(signal: AbortSignal): Promise<GcsObject[]> {
    const out: GcsObject[] = [];
    const base = prefixDir(this.c.prefix);
    let pageToken: string | undefined;
    do {
      if (signal.aborted) break;
      let files: File[];
      let next: { pageToken?: string } | null | undefined;
      try {
        [files, next] = await this.client.call((b) =>
          b.getFiles({ prefix: this.c.prefix || undefined, maxResults: PAGE_SIZE, pageToken, autoPaginate: false }),
        );
      } catch (e) {
        throw new SourceError(`gcs: ${describe(e, `listing gs://${this.c.bucket}/${this.c.prefix}`, this.c)}`, { cause: e });
      }
      for (const f of files) {
        const o = this.listed(f.metadata as ObjectMetadata, base);
        if (o) out.push(o);
      }
      pageToken = next?.pageToken;
    } while (pageToken);
    return out;
  }

  private listed(m: ObjectMetadata, base: string): GcsObject | undefined {
    const name = m.name ?? '';
    if (name === '' || name.endsWith('/')) return undefined; // folder placeholders hold no data
    const rel = name.slice(base.length);
    const slash = rel.lastIndexOf('/');
    return {
      path: name,
      relDir: slash < 0 ? '' : rel.slice(0, slash),
      name: name.slice(name.lastIndexOf('/') + 1),
      size: Number(m.size ?? 0),
      mtimeMs: m.updated ? Date.parse(m.updated) : 0,
      generation: String(m.generation ?? ''),
    };
  }

  async restat(files: GcsObject[]): Promise<(FileStat | undefined)[]> {
    const b = await this.client.bucket();
    return Promise.all(
      files.map(async (f) => {
        try {
          const [m] = await b.file(f.path).getMetadata();
          return { size: Number(m.size ?? 0), mtimeMs: m.updated ? Date.parse(m.updated) : 0 };
        } catch {
          return undefined;
        }
      }),
    );
  }

  async *read(f: GcsObject, signal: AbortSignal): AsyncIterable<Buffer> {
    const where = `gs://${this.c.bucket}/${f.path}`;
    let stream;
    try {
      const b = await this.client.bucket();
      // The listed generation: a rewrite since the listing fails this read instead of mixing versions.
      stream = b.file(f.path, { generation: f.generation || undefined }).createReadStream({ validation: 'crc32c' });
    } catch (e) {
      throw new SourceError(`gcs: ${describe(e, `reading ${where}`, this.c)}`, { cause: e });
    }
    this.client.presence.connecting();
    const stop = () => stream.destroy(new Error('run stopped'));
    signal.addEventListener('abort', stop, { once: true });
    stream.once('response', () => this.client.presence.answered());
    try {
      // The library never ends a download whose connection was cut before its Content-Length.
      const ms = this.c.read_timeout_seconds * 1000;
      for await (const chunk of withIdleTimeout(
        stream,
        ms,
        () => `no data for ${this.c.read_timeout_seconds} s (read_timeout_seconds): the connection is dead or stalled`,
      ))
        yield chunk as Buffer;
    } catch (e) {
      if (!signal.aborted) this.client.presence.failed(e);
      const why = e instanceof SourceError ? `reading ${where}: ${e.message}` : describe(e, `reading ${where}`, this.c);
      throw new SourceError(`gcs: ${why}`, { cause: e });
    } finally {
      signal.removeEventListener('abort', stop);
      stream.destroy();
    }
  }

  /** Name and generation: a rewritten object has a new generation and is read again. */
  processedKey(f: GcsObject): string {
    return `gs://${this.c.bucket}/${f.path}#${f.generation}`;
  }

  meta(f: GcsObject): SourceMeta {
    return { gcs_bucket: this.c.bucket, gcs_generation: f.generation };
  }
}

export default defineSource({
  key: 'gcs',
  summary: 'Read objects from a Google Cloud Storage bucket under a prefix, one unit per object, streamed and CRC32C-checked.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'an object is marked processed (skip_processed) only after every record from it was written (and the sinks flushed) or dead-lettered; a failed or cut download leaves it unmarked, so the next run reads it again.',
  },
  config,
  examples: [
    {
      title: 'PM files under a prefix, each generation read once',
      yaml: 'type: gcs\nbucket: ran-pm-exports\nprefix: pm/\nservice_account_json: /etc/svc/gcs-reader.json\nskip_processed: true\n',
    },
    {
      title: 'Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS or the metadata server)',
      yaml: 'type: gcs\nbucket: cdr-landing\nprefix: cdr/2024/\n',
    },
  ],
  async test(c) {
    // Authenticate and list at most one object: the permission a run needs (storage.objects.list).
    try {
      const storage = await openStorage(c);
      await storage.bucket(c.bucket).getFiles({ prefix: c.prefix || undefined, maxResults: 1, autoPaginate: false });
    } catch (e) {
      throw new Error(describe(e, `listing gs://${c.bucket}/${c.prefix}`, c), { cause: e });
    }
  },
  create: (c, ctx) => new GcsSource(c, ctx),
});
