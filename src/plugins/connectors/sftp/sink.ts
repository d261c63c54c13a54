// Sink `sftp`: encoded batches written to files on an SFTP server. Naming, parts, rolling and the
// serializer's framing are the shared RollingFileSink's (connector-runtime/file-sink.ts); this module does the
// SFTP I/O. `append` writes into the final name (a JSON array's closing `]` is cut off and written
// again when a later run appends: read at an offset, SETSTAT size); `single` writes a hidden
// `.<name>.<random>.tmp` beside the final name and renames it into place when the unit ends
// (posix-rename@openssh.com, atomic), so a reader never sees half a file. An open file survives a
// lost connection: the next write reconnects, reopens it and cuts it back to the bytes the server
// had acknowledged, so a retried batch is not doubled.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { WriteError, errorMessage } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { fileModeField, lintTemplateField, rollingFields, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { defineSink, type LintIssue, type PluginContext } from '../../types.js';
import {
  closeFile,
  connectSftp,
  endSession,
  fstat,
  fsyncFile,
  ftruncate,
  hostKeyPolicy,
  isStatusError,
  lintServer,
  lstatOrNone,
  mkdirs,
  openFile,
  plainRename,
  readAt,
  replacingRename,
  serverFields,
  serverName,
  statusOf,
  statusText,
  STATUS,
  unlink,
  writeAt,
  type Session,
  type SftpServer,
} from './client.js';
import { sftpDlqReader } from './dlq-reader.js';

const config = Type.Object(
  {
    ...serverFields,
    remote_path: Type.String({
      minLength: 1,
      description: 'Remote directory the files are written to (created if missing); relative paths start at the login directory.',
    }),
    filename_template: Type.String({
      minLength: 1,
      default: '{pipeline}_{timestamp}.bin',
      description:
        'File name under remote_path (may contain / for subdirectories); tokens such as {pipeline}, {timestamp}, {part}, {source_stem}, {field.<name>}.',
    }),
    file_mode: fileModeField,
    overwrite: Type.Boolean({
      default: true,
      description: 'single mode: replace an existing file of the same name (atomically); false fails the write instead. Our extension of doc 3.',
    }),
    ...rollingFields,
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const issues = [...lintServer(c), ...lintTemplateField(c.filename_template, 'filename_template')];
  if (c.overwrite === false && c.file_mode !== 'single')
    issues.push({ path: 'overwrite', message: 'overwrite applies to file_mode: single only; remove it or set file_mode: single' });
  return issues;
}

/** The server answered an operation with an error status: the connection itself is fine. */
class ServerRefusal extends Error {}

/** SFTP statuses that retrying the same write cannot change. */
const PERMANENT = new Set<number>([STATUS.PERMISSION_DENIED, STATUS.OP_UNSUPPORTED]);

class SftpFiles implements FileTarget {
  readonly label = 'sftp sink';
  private readonly madeDirs = new Set<string>();

  constructor(
    readonly link: Connection<Session>,
    private readonly c: Config,
  ) {}

  end(): Promise<void> {
    return this.link.end();
  }

  where(rel: string): string {
    return `sftp://${this.c.username}@${serverName(this.c)}/${this.path(rel).replace(/^\//, '')}`;
  }

  path(rel: string): string {
    return path.posix.join(this.c.remote_path, rel);
  }

  /**
   * Runs `op` on the connection. An SFTP status that retrying cannot change fails the write for
   * good; any other failure is retried by the sink policy, and one that is not an SFTP status (the
   * connection broke) drops the connection so the next attempt connects again.
   */
  use<T>(what: string, op: (s: Session) => Promise<T>): Promise<T> {
    return this.link.use(
      async (s) => {
        try {
          return await op(s);
        } catch (e) {
          if (e instanceof WriteError) throw e;
          if (!isStatusError(e)) throw new Error(`${what}: connection to ${serverName(this.c)} lost: ${errorMessage(e)}`, { cause: e });
          if (PERMANENT.has(statusOf(e)!)) throw new WriteError(`sftp: ${what}: ${statusText(e)}`, false, { cause: e });
          throw new ServerRefusal(`${what}: ${statusText(e)}`, { cause: e });
        }
      },
      (e) => !(e instanceof ServerRefusal),
    );
  }

  async dirFor(s: Session, file: string): Promise<void> {
    const dir = path.posix.dirname(file);
    if (this.madeDirs.has(dir)) return;
    await mkdirs(s, dir);
    this.madeDirs.add(dir);
  }

  openAppend(rel: string): Promise<OutFile> {
    const file = this.path(rel);
    return this.use(`cannot open ${this.where(rel)}`, async (s) => {
      await this.dirFor(s, file);
      const h = await openFile(s, file, 'append');
      const size = await fstat(s, h).then(
        (st) => st.size,
        async (e: unknown) => {
          await closeFile(s, h).catch(() => undefined);
          throw e;
        },
      );
      return new SftpOutFile(this, s, h, file, undefined, size);
    });
  }

  openNew(rel: string, overwrite: boolean): Promise<OutFile> {
    const file = this.path(rel);
    return this.use(`cannot create ${this.where(rel)}`, async (s) => {
      await this.dirFor(s, file);
      if (!overwrite && (await lstatOrNone(s, file))) throw new WriteError(`sftp: ${this.where(rel)} already exists and overwrite is false`, false);
      const temp = path.posix.join(path.posix.dirname(file), `.${path.posix.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
      return new SftpOutFile(this, s, await openFile(s, temp, 'new'), temp, { file, overwrite }, 0);
    });
  }
}

/**
 * One open remote file. `committed` counts the bytes the server acknowledged; when the session the
 * handle belongs to is gone, the next operation reopens the file on a new one and cuts it back to
 * `committed` (bytes of a write that was in flight when the connection broke).
 */
class SftpOutFile implements OutFile {
  private committed: number;

  constructor(
    private readonly target: SftpFiles,
    private session: Session | undefined,
    private handle: Buffer | undefined,
    /** Where bytes go: the final path (append) or a hidden temporary beside it (new). */
    private readonly writePath: string,
    /** New files: the name to publish under. */
    private readonly publishAs: { file: string; overwrite: boolean } | undefined,
    public size: number,
  ) {
    this.committed = size;
  }

  private get label() {
    return this.target.where(path.posix.relative(this.target.path(''), this.publishAs?.file ?? this.writePath));
  }

  /** The handle, reopened on the current session when the one it was opened on is gone. */
  private async ready(s: Session): Promise<Buffer> {
    if (this.session === s && this.handle) return this.handle;
    this.session = undefined;
    const h = await openFile(s, this.writePath, 'update');
    const size = (await fstat(s, h)).size;
    if (size < this.committed) {
      await closeFile(s, h).catch(() => undefined);
      throw new WriteError(
        `sftp: ${this.label} holds ${size} bytes, fewer than the ${this.committed} written to it: it was changed by something else while open`,
        false,
      );
    }
    if (size > this.committed) await ftruncate(s, h, this.committed);
    this.session = s;
    this.handle = h;
    return h;
  }

  write(buf: Buffer): Promise<void> {
    return this.target.use(`cannot write ${this.label}`, async (s) => {
      const h = await this.ready(s);
      await writeAt(s, h, buf, this.committed);
      this.committed += buf.length;
    });
  }

  readEnd(n: number): Promise<Buffer> {
    return this.target.use(`cannot read ${this.label}`, async (s) => readAt(s, await this.ready(s), Math.max(0, this.committed - n), n));
  }

  truncate(size: number): Promise<void> {
    return this.target.use(`cannot truncate ${this.label}`, async (s) => {
      await ftruncate(s, await this.ready(s), size);
      this.committed = size;
    });
  }

  sync(): Promise<void> {
    return this.target.use(`cannot sync ${this.label}`, async (s) => fsyncFile(s, await this.ready(s)));
  }

  finish(): Promise<void> {
    return this.target.use(`cannot publish ${this.label}`, async (s) => {
      const h = await this.ready(s);
      await fsyncFile(s, h);
      this.handle = undefined;
      await closeFile(s, h);
      if (this.publishAs) await this.publish(s, this.publishAs);
    });
  }

  async abort(): Promise<void> {
    const { session: s, handle: h } = this;
    this.handle = undefined;
    if (s && h) await closeFile(s, h).catch(() => undefined);
    if (!this.publishAs) return;
    // A temporary is removed on whatever connection there is; one left by a lost connection is a hidden .tmp file.
    await this.target.use('cannot remove a temporary', (cur) => unlink(cur, this.writePath)).catch(() => undefined);
  }

  private async publish(s: Session, to: { file: string; overwrite: boolean }): Promise<void> {
    if (this.committed === 0) {
      await unlink(s, this.writePath); // nothing was written: publish nothing
      return;
    }
    if (to.overwrite) {
      await replacingRename(s, this.writePath, to.file);
      return;
    }
    // A plain SFTP rename never replaces an existing file (SFTP v3), unlike posix-rename.
    try {
      await plainRename(s, this.writePath, to.file);
    } catch (e) {
      if (isStatusError(e) && (await lstatOrNone(s, to.file))) {
        throw new WriteError(`sftp: ${this.label} already exists and overwrite is false`, false);
      }
      throw e;
    }
  }
}

/** Reachability: log in, create remote_path as a run would, write and remove a hidden probe file. */
async function check(c: Config, log: PluginContext['log']): Promise<void> {
  const s = await connectSftp(c as SftpServer, { policy: hostKeyPolicy(c, undefined, false), log });
  const probe = path.posix.join(c.remote_path, `.svc-test-${randomUUID()}`);
  try {
    try {
      await mkdirs(s, c.remote_path);
      await closeFile(s, await openFile(s, probe, 'new'));
    } catch (e) {
      throw new Error(`remote_path ${c.remote_path} on ${serverName(c)} is not writable: ${isStatusError(e) ? statusText(e) : errorMessage(e)}`, { cause: e });
    }
    await unlink(s, probe).catch(() => undefined);
  } finally {
    await endSession(s);
  }
}

export default defineSink({
  key: 'sftp',
  summary: 'Write serialized batches to files on an SFTP server, appended or one file per input published atomically, with rolling parts.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a write counts once the server acknowledged every byte of it (and fsync@openssh.com where offered, before the source acknowledges its input); a connection lost mid-write cuts the file back to what was acknowledged and the runtime writes the batch again, and a run that fails after writing may write the same records again next time.',
  },
  config,
  lint,
  examples: [
    {
      title: 'NDJSON to a partner server, rolled every 100,000 records',
      yaml: 'type: sftp\nhost: sftp.partner.example\nusername: feed\nprivate_key_path: /etc/svc/keys/feed_ed25519\nremote_path: /incoming\nfilename_template: "{pipeline}_{timestamp}_{part}.ndjson"\nmax_records: 100000\n',
    },
    {
      title: 'One file per input file, each published whole (temporary name, then rename)',
      yaml: 'type: sftp\nhost: 10.0.0.9\nusername: svc\npassword: ${SFTP_PASSWORD:-change-me}\nremote_path: export/cdr\nfilename_template: "{source_stem}.csv"\nfile_mode: single\nhost_key_fingerprint: "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"\n',
    },
  ],
  test: (c, ctx) => check(c, ctx.log),
  dlqReader: sftpDlqReader,
  create(c, ctx) {
    const policy = hostKeyPolicy(c, ctx, true);
    const link = new Connection<Session>(ctx, 'sftp', (lost) => connectSftp(c, { policy, log: ctx.log, lost }), endSession);
    return new RollingFileSink(
      new SftpFiles(link, c),
      {
        template: c.filename_template,
        mode: c.file_mode,
        overwrite: c.overwrite,
        max_records: c.max_records,
        max_time: c.max_time,
        max_bytes: c.max_bytes,
        max_index: c.max_index,
      },
      ctx,
    );
  },
});
