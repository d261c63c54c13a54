// Sink `ftp`: writes encoded batches into files on an FTP (or explicit FTPS) server. Naming, parts
// and the serializer's framing are the shared RollingFileSink's (connector-runtime/file-sink.ts), in `flush`
// mode: every output is published whenever the runtime flushes (before the source finalizes its
// input), and a name written again later in the run takes the next part. Each output is uploaded
// as it grows into a hidden temporary beside its final name (STOR, then APPE per batch, so nothing
// is held whole) and published by RNFR/RNTO: a reader never sees half a file.
//
// FTP can append but not truncate in place, so a batch cut short by a lost connection is cut back
// when the connection is back (REST <size> + an empty STOR, checked with SIZE) before the batch is
// written again; a server that cannot cut fails that output for good instead of doubling data.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { lintTemplateField, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { defineSink, type Encoder, type LintIssue, type PluginContext, type Sink } from '../../types.js';
import { checkFtp, oneLine, FtpLink, isReply, lintServer, serverAddress, serverFields, transportFields, type FtpServer, type FtpSession } from './client.js';

export const config = Type.Object(
  {
    host: serverFields.host,
    port: serverFields.port,
    username: serverFields.username,
    password: serverFields.password,
    remote_path: Type.String({
      minLength: 1,
      default: '/',
      description: 'Directory the files are written to (absolute, or relative to the login directory); created if missing.',
    }),
    filename_template: Type.String({
      minLength: 1,
      default: '{pipeline}_{timestamp}',
      description:
        'File name under remote_path (may contain / for subdirectories); tokens such as {pipeline}, {timestamp}, {part}, {source_stem}, {field.<name>}. An existing file of the same name is replaced.',
    }),
    ...transportFields,
  },
  { additionalProperties: false },
);

export type FtpSinkConfig = Static<typeof config>;

const lint = (c: FtpSinkConfig): LintIssue[] => [...lintServer(c), ...lintTemplateField(c.filename_template, 'filename_template')];

/** Files under remote_path on one connection; temporaries that could not be removed are retried later. */
class FtpFiles implements FileTarget {
  readonly label = 'ftp sink';
  readonly link: FtpLink;
  private readonly at: string;
  private readonly madeDirs = new Set<string>();
  /** Temporaries of abandoned outputs whose removal failed (the connection was down): removed at the next chance. */
  private readonly orphans = new Set<string>();

  constructor(
    private readonly c: FtpSinkConfig,
    ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>,
  ) {
    this.link = new FtpLink(c, ctx);
    this.at = serverAddress(c);
  }

  where(rel: string): string {
    return `${path.posix.join(this.c.remote_path, rel)} at ${this.at}`;
  }

  /** Runs `op` on the connection, first removing leftover temporaries (best effort). */
  async use<R>(op: (s: FtpSession) => Promise<R>): Promise<R> {
    return this.link.use(async (s) => {
      await this.sweep(s);
      return op(s);
    });
  }

  /** The directory of `file` exists (made once per run). */
  async dirFor(s: FtpSession, file: string): Promise<void> {
    const dir = path.posix.dirname(file);
    if (this.madeDirs.has(dir)) return;
    await s.mkdirs(dir);
    this.madeDirs.add(dir);
  }

  async openNew(rel: string): Promise<OutFile> {
    // No I/O until the first write: the temporary is created by it.
    const final = path.posix.join(this.c.remote_path, rel);
    const temp = path.posix.join(path.posix.dirname(final), `.${path.posix.basename(final)}.${randomBytes(6).toString('hex')}.tmp`);
    return new FtpFile(this, final, temp, this.where(rel));
  }

  orphan(temp: string): void {
    this.orphans.add(temp);
  }

  private async sweep(s: FtpSession): Promise<void> {
    for (const temp of [...this.orphans]) {
      try {
        await s.client.remove(s.abs(temp));
        this.orphans.delete(temp);
      } catch (e) {
        if (!isReply(e)) throw e; // connection trouble: the operation fails and is retried
        this.orphans.delete(temp); // 550: already gone
      }
    }
  }

  async end(): Promise<void> {
    try {
      if (this.orphans.size > 0) await this.use(async () => undefined);
    } catch {
      // the server is unreachable: the hidden temporaries stay (named .<file>.<hex>.tmp)
    } finally {
      await this.link.end();
    }
  }
}

/** One output: a temporary uploaded batch by batch, renamed to its final name by finish(). */
class FtpFile implements OutFile {
  size = 0;
  /** A STOR of the temporary was sent: it may exist, even if that STOR failed. */
  private touched = false;
  /** The temporary exists at the server (its first STOR completed). */
  private created = false;
  /** Length the temporary must be cut back to before the next write (a failed append left more). */
  private cutTo?: number;

  constructor(
    private readonly files: FtpFiles,
    private readonly final: string,
    private readonly temp: string,
    private readonly where: string,
  ) {}

  async write(buf: Buffer): Promise<void> {
    await this.files.use(async (s) => {
      await this.cutBack(s);
      if (!this.created) {
        await this.files.dirFor(s, s.abs(this.final));
        this.touched = true;
        await s.put(this.temp, buf); // STOR replaces what an earlier failed first write left
        this.created = true;
      } else await s.put(this.temp, buf, true);
    });
    this.size += buf.length;
  }

  /**
   * Remembers the length to cut back to; the cut happens before the next write or the publish,
   * on a connection that works again (the failure that asked for it usually broke this one).
   */
  async truncate(size: number): Promise<void> {
    this.cutTo = size;
    this.size = size;
  }

  async finish(): Promise<void> {
    if (this.size === 0) return this.abort(); // nothing was written: publish nothing
    await this.files.use(async (s) => {
      await this.cutBack(s);
      await s.client.rename(s.abs(this.temp), s.abs(this.final));
    });
  }

  async abort(): Promise<void> {
    if (!this.touched) return;
    try {
      await this.files.use((s) =>
        s.client.remove(s.abs(this.temp)).catch((e: unknown) => {
          if (!isReply(e)) throw e; // 550: the failed first STOR never created it
        }),
      );
    } catch {
      this.files.orphan(this.temp);
    }
  }

  private async cutBack(s: FtpSession): Promise<void> {
    const want = this.cutTo;
    if (want === undefined) return;
    if (!this.created) {
      this.cutTo = undefined; // the next STOR starts the file over
      return;
    }
    const file = s.abs(this.temp);
    let have = await s.client.size(file);
    if (have > want) {
      await s.client.send(`REST ${want}`);
      await s.put(this.temp, Buffer.alloc(0));
      have = await s.client.size(file);
    }
    if (have !== want) {
      throw new WriteError(
        `ftp sink: cannot write ${this.where}: a failed append left ${this.temp} at ${have} bytes and the server does not cut it back to ${want} (REST + STOR), so this output cannot be written further`,
        false,
      );
    }
    this.cutTo = undefined;
  }
}

/** Publishes into a hidden probe file and removes it: remote_path exists (or can be made) and is writable. */
async function probe(c: FtpServer & { remote_path: string }, s: FtpSession): Promise<void> {
  const at = serverAddress(c);
  try {
    await s.mkdirs(c.remote_path);
  } catch (e) {
    throw new Error(`${at}: remote_path ${c.remote_path} is not a directory '${c.username}' can enter or create: ${oneLine(e)}`, { cause: e });
  }
  const file = path.posix.join(s.abs(c.remote_path), `.svc-test-${randomUUID()}`);
  try {
    await s.put(file, Buffer.alloc(0));
    await s.client.remove(file);
  } catch (e) {
    throw new Error(`${at}: '${c.username}' cannot write into ${c.remote_path}: ${oneLine(e)}`, { cause: e });
  }
}

export default defineSink({
  key: 'ftp',
  summary:
    'Write serialized batches to files on an FTP (or explicit FTPS) server, each published atomically (temporary name, then rename) when the runtime flushes.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: 'every output is renamed into place, complete, at each flush and before the source finalizes its input; a batch cut short by a lost connection is cut back and written again, and a failure before the rename leaves the input for another run, which writes those records again.',
  },
  config,
  lint,
  test: (c, { signal }) => checkFtp(c, signal, (s) => probe(c, s)),
  examples: [
    {
      title: 'One JSON file per run into /incoming',
      yaml: 'type: ftp\nhost: ftp.example.net\nusername: svc\npassword: ${FTP_PASSWORD:-change-me}\nremote_path: /incoming\nfilename_template: "{pipeline}_{timestamp}.json"\n',
    },
    {
      title: 'CSV per input file, mirroring the input names, over FTPS',
      yaml: 'type: ftp\nhost: 10.1.2.3\nport: 2121\nusername: export\npassword: ${EXPORT_PASSWORD:-change-me}\nsecure: true\ntls_ca_certs: /etc/svc/ftp-ca.pem\nremote_path: export\nfilename_template: "{source_stem}.csv"\n',
    },
  ],
  create(c, ctx: PluginContext & { encoder: Encoder }): Sink {
    return new RollingFileSink(new FtpFiles(c, ctx), { template: c.filename_template, mode: 'flush', overwrite: true }, ctx);
  },
});
