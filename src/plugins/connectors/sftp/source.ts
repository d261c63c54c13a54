// Source `sftp` (batch): the files of a remote directory (or one remote file), one unit per file,
// streamed with several read requests in flight. Selection, guards, skip_processed and finalizing
// are the shared fileUnits (connector-runtime/file-source.ts); this module lists, reads, moves and deletes
// over SFTP. A file is moved or deleted only after every record from it was delivered; a
// connection lost mid-file leaves it where it is (and unmarked), so the next run reads it again.
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError, errorMessage } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
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
import type { DirEntry } from 'ssh2-sftp-client';
import { defineSource, type LintIssue, type PluginContext, type Source, type SourceUnit } from '../../types.js';
import {
  call,
  closeFile,
  connectSftp,
  endSession,
  hostKeyPolicy,
  isStatusError,
  lintServer,
  lstatOrNone,
  mkdirs,
  openFile,
  readStream,
  replacingRename,
  serverFields,
  serverName,
  stat,
  statusOf,
  statusText,
  STATUS,
  unlink,
  type Session,
} from './client.js';

const config = Type.Object(
  {
    ...serverFields,
    remote_path: Type.String({ minLength: 1, description: 'Remote directory to read (or a single remote file); relative paths start at the login directory.' }),
    file_pattern: fileSelectionFields.file_pattern,
    recursive: Type.Boolean({
      default: false,
      description: 'Also read files in subdirectories (symbolic links to directories are not followed). Our extension of doc 3.',
    }),
    move_after_read: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Move each delivered file into this remote directory (created if missing, sub-path kept, never overwrites: a taken name gets _1, _2...).',
      }),
    ),
    delete_after_read: fileSelectionFields.delete_after_read,
    skip_processed: fileSelectionFields.skip_processed,
    ...fileGuardFields,
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

const norm = (p: string) => path.posix.normalize(p).replace(/(.)\/$/, '$1');

function lint(c: Config): LintIssue[] {
  return [...lintServer(c), ...lintFileSelection(c, (dir) => norm(dir) === norm(c.remote_path))];
}

type RemoteFile = ListedFile;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

class SftpSource implements Source, FileStore<RemoteFile> {
  notes: string[] = [];
  private readonly link: Connection<Session>;
  private readonly moveDir?: string;

  constructor(
    private readonly c: Config,
    private readonly ctx: PluginContext,
  ) {
    const policy = hostKeyPolicy(c, ctx, true);
    this.link = new Connection<Session>(ctx, 'sftp', (lost) => connectSftp(c, { policy, log: ctx.log, lost }), endSession);
    this.moveDir = c.move_after_read === undefined ? undefined : norm(c.move_after_read);
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, this.c, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  close(): Promise<void> {
    return this.link.end();
  }

  /** The session; a failed connect fails the run with the reason. */
  private async session(): Promise<Session> {
    try {
      return await this.link.get();
    } catch (e) {
      throw new SourceError(errorMessage(e), { cause: e });
    }
  }

  /**
   * Runs `op` on the session. A failure that is not an SFTP status (the connection broke) drops the
   * session, so the next operation connects again; errors name `what` was being done.
   */
  private async use<T>(what: string, op: (s: Session) => Promise<T>): Promise<T> {
    const s = await this.session();
    try {
      return await op(s);
    } catch (e) {
      if (e instanceof SourceError) throw e;
      if (!isStatusError(e)) this.link.drop(s, e as Error);
      throw new SourceError(`sftp: ${what}: ${isStatusError(e) ? statusText(e) : `connection to ${serverName(this.c)} lost: ${errorMessage(e)}`}`, {
        cause: e,
      });
    }
  }

  async list(): Promise<RemoteFile[]> {
    const root = this.c.remote_path;
    return this.use(`listing ${root}`, async (s) => {
      let st;
      try {
        st = await stat(s, root);
      } catch (e) {
        if (!isStatusError(e)) throw e;
        throw new SourceError(
          `sftp: cannot read remote_path ${root} on ${serverName(this.c)}: ${statusText(e)}; ${statusOf(e) === STATUS.NO_SUCH_FILE ? 'create it or correct remote_path' : 'grant the user access or correct remote_path'}`,
        );
      }
      if (!st.isDirectory()) return st.isFile() ? [{ path: root, relDir: '', name: path.posix.basename(root), size: st.size, mtimeMs: st.mtime * 1000 }] : [];
      const out: RemoteFile[] = [];
      await this.walk(s, root, '', out);
      return out;
    });
  }

  private async walk(s: Session, dir: string, relDir: string, out: RemoteFile[]): Promise<void> {
    let entries;
    try {
      entries = await call<DirEntry[]>(s, (cb) => s.sftp.readdir(dir, cb));
    } catch (e) {
      if (!isStatusError(e)) throw e;
      if (relDir === '') throw new SourceError(`sftp: cannot list remote_path ${dir} on ${serverName(this.c)}: ${statusText(e)}`);
      this.notes.push(`skipped unreadable directory ${dir}: ${statusText(e)}`);
      return;
    }
    for (const { filename, attrs } of entries) {
      const full = path.posix.join(dir, filename);
      let type = attrs.mode & S_IFMT;
      let { size, mtime } = attrs;
      if (type === S_IFLNK) {
        // A link counts as the file it points at; linked directories are not followed.
        const target = await stat(s, full).catch((e: unknown) => {
          if (isStatusError(e)) return undefined; // dangling
          throw e;
        });
        if (!target?.isFile()) continue;
        type = S_IFREG;
        ({ size, mtime } = target);
      }
      if (type === S_IFREG) out.push({ path: full, relDir, name: filename, size, mtimeMs: mtime * 1000 });
      else if (type === S_IFDIR && this.c.recursive && norm(full) !== this.moveDir) {
        await this.walk(s, full, relDir ? `${relDir}/${filename}` : filename, out);
      }
    }
  }

  restat(files: RemoteFile[]): Promise<(FileStat | undefined)[]> {
    return this.use('checking file_stability_seconds', async (s) => {
      const out: (FileStat | undefined)[] = [];
      for (const f of files) {
        const st = await stat(s, f.path).catch((e: unknown) => {
          if (statusOf(e) === STATUS.NO_SUCH_FILE) return undefined;
          throw e;
        });
        out.push(st?.isFile() ? { size: st.size, mtimeMs: st.mtime * 1000 } : undefined);
      }
      return out;
    });
  }

  async *read(f: RemoteFile, signal: AbortSignal): AsyncIterable<Buffer> {
    const s = await this.session();
    try {
      yield* readStream(s, f.path, f.size, signal);
    } catch (e) {
      if (!isStatusError(e)) this.link.drop(s, e as Error);
      throw new Error(isStatusError(e) ? `cannot read ${f.path}: ${statusText(e)}` : `connection lost while reading ${f.path}: ${errorMessage(e)}`, {
        cause: e,
      });
    }
  }

  /** Into `destDir`/relDir under the first free name (`a.csv`, `a_1.csv`...), never over an existing file. */
  async move(f: RemoteFile, destDir: string): Promise<void> {
    await this.use(`moving ${f.path} to ${destDir}`, async (s) => {
      const dir = path.posix.join(destDir, f.relDir);
      await mkdirs(s, dir);
      for (let n = 0; ; n++) {
        const dest = path.posix.join(dir, n === 0 ? f.name : numberedName(f.name, n, this.c.file_done_suffix));
        if (await lstatOrNone(s, dest)) continue;
        // The name was free a moment ago; posix-rename also works where a plain SFTP rename refuses.
        await replacingRename(s, f.path, dest);
        return;
      }
    });
  }

  remove(f: RemoteFile): Promise<void> {
    return this.use(`deleting ${f.path}`, (s) => unlink(s, f.path));
  }

  processedKey(f: RemoteFile): string {
    return `sftp://${this.c.username}@${serverName(this.c)}/${f.path}|${f.size}|${f.mtimeMs}`;
  }
}

/** Reachability: log in, then open remote_path (a directory is opened for listing). */
async function check(c: Config, log: PluginContext['log']): Promise<void> {
  const s = await connectSftp(c, { policy: hostKeyPolicy(c, undefined, false), log });
  try {
    let st;
    try {
      st = await stat(s, c.remote_path);
    } catch (e) {
      throw new Error(`remote_path ${c.remote_path} on ${serverName(c)}: ${statusText(e)}`, { cause: e });
    }
    try {
      if (st.isDirectory()) await closeFile(s, await call<Buffer>(s, (cb) => s.sftp.opendir(c.remote_path, cb)));
      else await closeFile(s, await openFile(s, c.remote_path, 'read'));
    } catch (e) {
      throw new Error(`remote_path ${c.remote_path} on ${serverName(c)} is not readable: ${statusText(e)}`, { cause: e });
    }
  } finally {
    await endSession(s);
  }
}

export default defineSource({
  key: 'sftp',
  summary: 'Read files from an SFTP server, one unit per file, streamed, with move, delete and skip-processed handling and host-key checking.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a file is moved, deleted or marked processed only after every record from it was written (and the sinks flushed) or dead-lettered; a failed run or a connection lost mid-file leaves it in place, unmarked, and the next run reads it again.',
  },
  config,
  lint,
  examples: [
    {
      title: 'PM XML files of a vendor OSS, moved to an archive directory after delivery',
      yaml: 'type: sftp\nhost: oss.example.net\nusername: pm\nprivate_key_path: /etc/svc/keys/pm_ed25519\nremote_path: /export/pm\nfile_pattern: "A*.xml"\nmove_after_read: /export/pm/archive\n',
    },
    {
      title: 'Files the producer renames to *.done, remembered instead of moved (read-only account)',
      yaml: 'type: sftp\nhost: 10.0.0.7\nusername: svc\npassword: ${SFTP_PASSWORD:-change-me}\nremote_path: /out/cdr\nfile_done_suffix: .done\nskip_processed: true\nhost_key_check: strict\nknown_hosts: /etc/svc/known_hosts\n',
    },
    {
      title: 'A slow uploader: only files older than a minute and unchanged for 10 s, deleted after delivery',
      yaml: 'type: sftp\nhost: sftp.example.net\nport: 2222\nusername: collector\npassword: ${SFTP_PASSWORD:-change-me}\nremote_path: drop\nrecursive: true\nfile_min_age_seconds: 60\nfile_stability_seconds: 10\ndelete_after_read: true\n',
    },
  ],
  test: (c, ctx) => check(c, ctx.log),
  create: (c, ctx) => new SftpSource(c, ctx),
});
