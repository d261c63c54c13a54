// Memory of the input files a pipeline has finished with (skip_processed). The daemon keeps it in
// its database; the CLI and tests use these: in memory, or a JSON-lines file under a state dir.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ProcessedFiles } from '../types.js';
import { syncDir } from '../../util/durable.js';

/** `SVC_STATE_DIR`, else `~/.svc/state`. */
export function defaultStateDir(): string {
  return process.env.SVC_STATE_DIR || path.join(os.homedir(), '.svc', 'state');
}

/** The state file of one pipeline: `<stateDir>/<pipeline>.processed.jsonl`. */
export function processedFilesPath(pipeline: string, stateDir = defaultStateDir()): string {
  return path.join(stateDir, `${pipeline.replace(/[^\w.-]/g, '_')}.processed.jsonl`);
}

export class MemoryProcessedFiles implements ProcessedFiles {
  private keys = new Set<string>();

  async has(key: string): Promise<boolean> {
    return this.keys.has(key);
  }

  async add(key: string): Promise<void> {
    this.keys.add(key);
  }
}

/**
 * One JSON string per line, loaded on first use. `add` appends and fsyncs before it resolves, so
 * a file that was finalized is never forgotten by a crash. A line torn by a crash is ignored on
 * load and the next append starts on a fresh line.
 */
export class FileProcessedFiles implements ProcessedFiles {
  private keys?: Set<string>;
  private loading?: Promise<Set<string>>;
  /** The file does not end with a newline (torn last line): the next append starts one. */
  private needsNewline = false;
  /** Appends run one after another so lines never interleave. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly filePath: string) {}

  async has(key: string): Promise<boolean> {
    return (await this.load()).has(key);
  }

  add(key: string): Promise<void> {
    const run = this.queue.then(async () => {
      const keys = await this.load();
      if (keys.has(key)) return;
      await this.append(`${this.needsNewline ? '\n' : ''}${JSON.stringify(key)}\n`);
      this.needsNewline = false;
      keys.add(key);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private load(): Promise<Set<string>> {
    if (this.keys) return Promise.resolve(this.keys);
    this.loading ??= this.read().then((keys) => (this.keys = keys));
    return this.loading;
  }

  private async read(): Promise<Set<string>> {
    let text: string;
    try {
      text = await fs.readFile(this.filePath, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new Set();
      throw e;
    }
    this.needsNewline = text.length > 0 && !text.endsWith('\n');
    const keys = new Set<string>();
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const key: unknown = JSON.parse(line);
        if (typeof key === 'string') keys.add(key);
      } catch {
        // A line torn by a crash: its add() never resolved, so nothing was promised for it.
      }
    }
    return keys;
  }

  private async append(line: string): Promise<void> {
    const dir = path.dirname(this.filePath);
    await fs.mkdir(dir, { recursive: true });
    const fh = await fs.open(this.filePath, 'a');
    try {
      const created = (await fh.stat()).size === 0;
      await fh.appendFile(line);
      await fh.sync();
      // A new file's directory entry must be durable too.
      if (created) await syncDir(dir);
    } finally {
      await fh.close();
    }
  }
}
