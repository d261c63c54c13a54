// Reads back a DLQ written by the `sftp` sink: every file under remote_path (recursively, as
// filename_template may make subdirectories), listed and read by the sftp source's store.
import { fileStoreReader } from '../../connector-runtime/file-store-dlq.js';
import type { DlqReader, DlqReaderContext, SourcePlugin } from '../../types.js';
import { serverFields } from './client.js';
import sftpSource from './source.js';

export function sftpDlqReader(c: Record<string, unknown> & { remote_path: string }, ctx: DlqReaderContext): DlqReader {
  const server = Object.fromEntries(
    Object.keys(serverFields)
      .filter((k) => c[k] !== undefined)
      .map((k) => [k, c[k]]),
  );
  return fileStoreReader(sftpSource as unknown as SourcePlugin, { ...server, remote_path: c.remote_path, recursive: true }, ctx);
}
