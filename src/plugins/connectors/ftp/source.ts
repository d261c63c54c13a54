// Source `ftp` (batch): the files of one directory on an FTP server, one unit per file, streamed
// (RETR through a bounded buffer, never held whole). Selection, the file-done guards, skip_processed
// and finalizing are the shared fileUnits' (connector-runtime/file-source.ts); this module lists (MLSD, with
// MDTM where the listing has no dates), re-checks (SIZE and MDTM), reads, moves and deletes.
//
// Two connections: one reads (listing and downloads), a second, opened at the first finalize,
// moves or deletes delivered files. A file is finalized while the next one is being downloaded,
// and one FTP control connection carries one transfer at a time.
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import type { FileInfo } from 'basic-ftp';
import { SourceError } from '../../../core/errors.js';
import type { FileStat } from '../../connector-runtime/file-guards.js';
import {
  fileGuardFields,
  fileSelectionFields,
  fileUnits,
  lintFileSelection,
  numberedName,
  type FileStore,
  type ListedFile,
} from '../../connector-runtime/file-source.js';
import { defineSource, type LintIssue, type PluginContext, type Source, type SourceMeta, type SourceUnit } from '../../types.js';
import { checkFtp, oneLine, FtpLink, isReply, lintServer, sameRemoteDir, serverAddress, serverFields, transportFields, type FtpSession } from './client.js';

/** Bytes buffered between the data connection and the pipeline; above it the download waits. */
const READ_BUFFER = 1024 * 1024;

export const config = Type.Object(
  {
    ...serverFields,
    remote_path: Type.String({
      minLength: 1,
      default: '/',
      description: 'Directory to read (absolute, or relative to the login directory); subdirectories are not read.',
    }),
    file_pattern: fileSelectionFields.file_pattern,
    passive: transportFields.passive,
    move_after_read: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Move each delivered file into this directory on the server (absolute, or relative to the login directory; created if missing); a name already there gets _1, _2, ... and is never replaced.',
      }),
    ),
    delete_after_read: fileSelectionFields.delete_after_read,
    skip_processed: fileSelectionFields.skip_processed,
    ...fileGuardFields,
    secure: transportFields.secure,
    tls_ca_certs: transportFields.tls_ca_certs,
  },
  { additionalProperties: false },
);

export type FtpSourceConfig = Static<typeof config>;

const lint = (c: FtpSourceConfig): LintIssue[] => [...lintServer(c), ...lintFileSelection(c, (dir) => sameRemoteDir(dir, c.remote_path))];

class FtpSource implements Source, FileStore<ListedFile> {
  notes: string[] = [];
  private readonly reader: FtpLink;
  /** Moves and deletes, beside a download in progress on the reader. */
  private readonly finisher: FtpLink;
  private readonly at: string;

  constructor(
    private readonly c: FtpSourceConfig,
    private readonly ctx: PluginContext,
  ) {
    this.reader = new FtpLink(c, ctx, { signal: ctx.signal });
    this.finisher = new FtpLink(c, ctx, { telemetry: false, signal: ctx.signal });
    this.at = serverAddress(c);
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, this.c, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  /** The reader's session; a failed connect fails the run. */
  private async session(): Promise<FtpSession> {
    try {
      return await this.reader.get();
    } catch (e) {
      throw new SourceError(oneLine(e), { cause: e });
    }
  }

  /** Runs `op` on the reader; a reply error keeps the connection, others drop it. Fails as a SourceError. */
  private async reading<R>(what: string, op: (s: FtpSession) => Promise<R>): Promise<R> {
    const s = await this.session();
    try {
      return await op(s);
    } catch (e) {
      if (!isReply(e)) this.reader.drop(s, e as Error);
      throw new SourceError(`ftp: ${what} at ${this.at}: ${oneLine(e)}`, { cause: e });
    }
  }

  async list(): Promise<ListedFile[]> {
    return this.reading(`cannot list ${this.c.remote_path}`, async (s) => {
      const root = s.abs(this.c.remote_path);
      if (!(await s.isDir(root))) throw new Error(`not a directory the user can enter: create it or correct remote_path`);
      const entries = await s.client.list(); // MLSD where the server has it (dates in UTC), else LIST
      const files: ListedFile[] = [];
      for (const e of entries) {
        if (!e.isFile) continue; // directories, and links whose target LIST cannot tell
        const file = path.posix.join(root, e.name);
        files.push({ path: file, relDir: '', name: e.name, size: e.size, mtimeMs: await mtimeOf(s, e, file) });
      }
      return files;
    });
  }

  /** file_stability_seconds: SIZE and MDTM of each file (no listing, no data connection). */
  restat(files: ListedFile[]): Promise<(FileStat | undefined)[]> {
    return this.reading('cannot check the files again', async (s) => {
      const out: (FileStat | undefined)[] = [];
      for (const f of files) {
        try {
          const size = await s.client.size(f.path);
          // Without MDTM, the listed date stands: the guard then compares sizes only.
          const mtimeMs = await s.client.lastMod(f.path).then(
            (d) => d.getTime(),
            () => f.mtimeMs,
          );
          out.push({ size, mtimeMs });
        } catch (e) {
          if (!isReply(e)) throw e;
          out.push(undefined); // 550: gone (or renamed by its producer)
        }
      }
      return out;
    });
  }

  read(f: ListedFile, signal: AbortSignal): AsyncIterable<Buffer> {
    return this.download(f, signal);
  }

  /**
   * RETR into a bounded buffer. The stream ends only once the server confirmed the transfer (226)
   * and at least the listed size arrived: a connection that drops mid-file, or a data connection
   * that ends early while the server believes it sent everything, fails the read (the file stays
   * for the next run) instead of ending it with part of the bytes.
   */
  private async *download(f: ListedFile, signal: AbortSignal): AsyncGenerator<Buffer> {
    const s = await this.session();
    const out = new PassThrough({ highWaterMark: READ_BUFFER });
    let received = 0;
    const into = new Writable({
      highWaterMark: READ_BUFFER,
      write(chunk: Buffer, _enc, done) {
        received += chunk.length;
        if (out.write(chunk)) done();
        else out.once('drain', () => done());
      },
    });
    /** The server answered the RETR (226, or an error reply): the control connection is in step. */
    let answered = false;
    let failure: Error | undefined;
    const brokeOff = (why: string, cause?: unknown) => out.destroy(new Error(`ftp: reading ${f.path} at ${this.at} broke off ${why}`, { cause }));
    const transfer = s.client.downloadTo(into, f.path).then(
      () => {
        answered = true;
        if (received < f.size) brokeOff(`after ${received} of its ${f.size} bytes (the data connection ended early)`);
        else out.end();
      },
      (e: unknown) => {
        answered = isReply(e);
        failure = e as Error;
        brokeOff(`after ${received} bytes: ${oneLine(e)}`, e);
      },
    );
    const abort = () => s.close();
    signal.addEventListener('abort', abort, { once: true });
    try {
      for await (const chunk of out) yield chunk as Buffer;
    } finally {
      signal.removeEventListener('abort', abort);
      // A lost connection, or a read stopped early with the transfer still running on it.
      if (!answered) this.reader.drop(s, failure ?? new Error(`reading ${f.path} stopped before its end`));
      await transfer;
    }
  }

  async move(f: ListedFile, destDir: string): Promise<void> {
    await this.finisher.use(async (s) => {
      const dir = s.abs(destDir);
      await s.mkdirs(dir); // and enters it: the listing below is of dir
      // FTP has no rename that refuses an existing name (RNTO replaces on most servers): pick a free one.
      const taken = new Set((await s.client.list()).map((e) => e.name));
      let name = f.name;
      for (let n = 1; taken.has(name); n++) name = numberedName(f.name, n, this.c.file_done_suffix);
      await s.client.rename(f.path, path.posix.join(dir, name));
    });
  }

  async remove(f: ListedFile): Promise<void> {
    await this.finisher.use((s) => s.client.remove(f.path));
  }

  /** Server, path, size and mtime: a file rewritten in place is read again. */
  processedKey(f: ListedFile): string {
    return `ftp://${this.c.username}@${this.at}${f.path}|${f.size}|${f.mtimeMs}`;
  }

  meta(): SourceMeta {
    return { source_host: this.c.host };
  }

  async close(): Promise<void> {
    await Promise.all([this.reader.end(), this.finisher.end()]);
  }
}

/** The listing's date (MLSD, UTC) or MDTM's; 0 when the server has neither (the guards then compare sizes only). */
async function mtimeOf(s: FtpSession, e: FileInfo, file: string): Promise<number> {
  if (e.modifiedAt) return e.modifiedAt.getTime();
  try {
    return (await s.client.lastMod(file)).getTime();
  } catch (err) {
    if (isReply(err)) return 0;
    throw err;
  }
}

export default defineSource({
  key: 'ftp',
  summary:
    'Read the files of a directory on an FTP (or explicit FTPS) server, one unit per file, streamed, with move, delete, skip-processed and the file-done guards.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a file is moved, deleted or marked processed only after every record from it was written (and the sinks flushed) or dead-lettered; a failed run or a connection lost mid-file leaves it in place for the next run.',
  },
  config,
  lint,
  async test(c, { signal }) {
    await checkFtp(c, signal, async (s) => {
      if (!(await s.isDir(c.remote_path)))
        throw new Error(`${serverAddress(c)}: remote_path ${c.remote_path} is not a directory '${c.username}' can enter; create it or correct remote_path`);
    });
  },
  examples: [
    {
      title: 'CSV files, moved to an archive directory after delivery',
      yaml: 'type: ftp\nhost: ftp.example.net\nusername: svc\npassword: ${FTP_PASSWORD:-change-me}\nremote_path: /outgoing\nfile_pattern: "*.csv"\nmove_after_read: /outgoing/done\n',
    },
    {
      title: 'PM files over FTPS, read once their producer renamed them to *.done',
      yaml: 'type: ftp\nhost: oss.example.net\nusername: pm\npassword: ${PM_PASSWORD:-change-me}\nsecure: true\ntls_ca_certs: /etc/svc/oss-ca.pem\nremote_path: /pm\nfile_pattern: "A*.xml"\nfile_done_suffix: .done\nskip_processed: true\n',
    },
    {
      title: 'Files of a slow uploader, deleted after delivery',
      yaml: 'type: ftp\nhost: 10.0.0.7\nport: 2121\nusername: drop\npassword: ${DROP_PASSWORD:-change-me}\nremote_path: incoming\nfile_min_age_seconds: 30\nfile_stability_seconds: 5\ndelete_after_read: true\n',
    },
  ],
  create: (c, ctx) => new FtpSource(c, ctx),
});
