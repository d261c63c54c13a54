// A DLQ read back from files or objects through the FileStore of the matching source connector
// (sftp, s3): the same listing and reading code as the source, no copy of it. Oldest first, as
// listed when the read began; hidden names (a sink's temporaries) skipped.
import { Value } from '@sinclair/typebox/value';
import type { FileStore, ListedFile } from './file-source.js';
import { MemoryProcessedFiles } from './processed-files.js';
import type { DlqItem, DlqReader, DlqReaderContext, Source, SourcePlugin } from '../types.js';

/** `plugin.create(config)` must give a Source that is a FileStore (the file and object sources are). */
export function fileStoreReader(plugin: SourcePlugin, config: Record<string, unknown>, ctx: DlqReaderContext): DlqReader {
  let source: (Source & FileStore) | undefined;
  return {
    async *read(): AsyncIterable<DlqItem> {
      const c = Value.Default(plugin.config, structuredClone(config));
      source = plugin.create(c as never, {
        pipeline: ctx.pipeline,
        log: ctx.log,
        signal: ctx.signal,
        processed: new MemoryProcessedFiles(),
        skipProcessed: false,
      }) as Source & FileStore;
      const files = (await source.list(ctx.signal)).filter((f: ListedFile) => !f.name.startsWith('.'));
      files.sort((a, b) => a.mtimeMs - b.mtimeMs || a.path.localeCompare(b.path));
      for (const f of files) {
        const parts: Buffer[] = [];
        for await (const b of source.read(f, ctx.signal)) parts.push(b);
        yield { location: f.relDir ? `${f.relDir}/${f.name}` : f.name, payload: Buffer.concat(parts) };
      }
    },
    async close() {
      await source?.close?.();
    },
  };
}

/** The fixed part of a key or file name template: up to its last '/' before the first token. */
export function templateDir(template: string): string {
  const fixed = template.split('{')[0]!;
  return fixed.slice(0, fixed.lastIndexOf('/') + 1);
}
