// Poison inputs (issue 28): an input whose decoding stops the process (a decoder bug that runs the
// heap out, a loop that never ends) must not stop it again at every restart, when a spool, a file
// source or a broker hands the same input back.
//
// While a chunk is processed on this thread, its bytes sit in shared memory, and a watchdog thread
// looks at them. A chunk still in work after SVC_DECODE_WATCH_MS is written down as a suspect
// (`<stateDir>/quarantine/<pipeline>/`: the length and SHA-1 of each message, or of the chunk);
// once it finishes, the note is removed. A note left behind means the process died while the chunk
// was in work: at the pipeline's next run the same input is not processed again but dead-lettered,
// with the reason `crashed the decoder`. A chunk in work longer than SVC_DECODE_TIMEOUT_MS is
// noted as `timed out` and the watchdog ends the process (the event loop is stuck: no API, no
// drain, and SIGTERM cannot be handled), so that the orchestrator's restart comes up without it.
//
// For a message chunk the watchdog knows which message was being decoded: only that one is the
// suspect. Once decoding is over (transforms, encoding), the whole chunk is.
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

export interface DecodeWatchOptions {
  /** `<stateDir>/quarantine`: one folder per pipeline below it. */
  dir: string;
  /** A chunk in work this long is written down as a suspect. */
  watchMs: number;
  /** A chunk in work this long ends the process (`timed out`). */
  timeoutMs: number;
}

/** The watch of a daemon, worker or `svc run`: notes under `<stateDir>/quarantine`. */
export function decodeWatchOptions(stateDir: string, s: { DECODE_WATCH_MS: number; DECODE_TIMEOUT_MS: number }): DecodeWatchOptions {
  return { dir: join(stateDir, 'quarantine'), watchMs: s.DECODE_WATCH_MS, timeoutMs: Math.max(s.DECODE_TIMEOUT_MS, s.DECODE_WATCH_MS) };
}

export type QuarantineReason = 'crashed the decoder' | 'timed out';

/** One input noted by the watchdog: what it was, and the identity of its bytes. */
export interface Suspect {
  file: string;
  pipeline: string;
  unit: string;
  since: string;
  reason: QuarantineReason;
  /** Each message (or the one chunk): its length and the SHA-1 of its first DATA_CAP bytes. */
  items: { length: number; sha1: string }[];
}

// Shared memory layout: a header of Int32 fields, the pipeline's folder and the unit's name as
// UTF-8, each message's length, then the bytes (the first DATA_CAP of them).
const H = { seq: 0, busy: 1, count: 2, index: 3, folderLen: 4, unitLen: 5, copied: 6, watchMs: 7, timeoutMs: 8 } as const;
const HEADER_INTS = 16;
/** The header's last 8 bytes, as a Float64: when the chunk in work began (Date.now()). */
const BEGAN = HEADER_INTS / 2 - 1;
const FOLDER_BYTES = 4096;
const UNIT_BYTES = 1024;
const MAX_MESSAGES = 8192;
/** Bytes of a chunk kept for its identity: a longer chunk is known by its length and this prefix. */
export const DATA_CAP = 16 << 20;
const FOLDER_AT = HEADER_INTS * 4;
const UNIT_AT = FOLDER_AT + FOLDER_BYTES;
const LENGTHS_AT = UNIT_AT + UNIT_BYTES;
const DATA_AT = LENGTHS_AT + MAX_MESSAGES * 4;

/** SHA-1 of the bytes a suspect is known by (at most DATA_CAP of them). */
export const identity = (b: Uint8Array) =>
  createHash('sha1')
    .update(b.subarray(0, Math.min(b.length, DATA_CAP)))
    .digest('hex');

// The watchdog runs as plain JavaScript (no module loading, no tsx in the thread): it only polls the
// header, hashes what is there, and writes or removes one small file.
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const L = workerData.layout;
const sab = workerData.sab;
const h = new Int32Array(sab, 0, ${HEADER_INTS});
const began = new Float64Array(sab, 0, ${HEADER_INTS / 2});
const bytes = new Uint8Array(sab);
const text = (at, len) => Buffer.from(bytes.subarray(at, at + len)).toString('utf8');
let seen = -1, since = 0, noted = null, timedOut = false;
const hash = (b) => createHash('sha1').update(b).digest('hex');
function note(reason) {
  const count = h[L.count], index = h[L.index], copied = h[L.copied];
  const lengths = new Int32Array(sab, L.lengthsAt, L.maxMessages);
  const items = [];
  if (count === 0) items.push({ length: Atomics.load(lengths, 0), sha1: hash(bytes.subarray(L.dataAt, L.dataAt + copied)) });
  else {
    let at = L.dataAt;
    for (let i = 0; i < count && i < L.maxMessages; i++) {
      const len = lengths[i], kept = Math.max(0, Math.min(len, L.dataAt + L.dataCap - at));
      if (index < 0 || index === i) items.push({ length: len, sha1: hash(bytes.subarray(at, at + Math.min(kept, L.dataCap))) });
      at += kept;
    }
  }
  const folder = text(L.folderAt, h[L.folderLen]);
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(folder, workerData.token + '-' + h[L.seq] + '.json');
  const body = { pipeline: path.basename(folder), unit: text(L.unitAt, h[L.unitLen]), since: new Date(since).toISOString(), reason, items };
  fs.writeFileSync(file + '.tmp', JSON.stringify(body));
  fs.renameSync(file + '.tmp', file);
  return file;
}
setInterval(() => {
  const seq = Atomics.load(h, L.seq), busy = Atomics.load(h, L.busy);
  if (!busy || seq !== seen) {
    if (noted) { try { fs.rmSync(noted, { force: true }); } catch {} noted = null; }
    // From when the chunk began, not when this thread first saw it: a watchdog that started late
    // (its thread boots while the first chunks are processed) still notes a long one at once.
    seen = busy ? seq : -1; since = busy ? began[${BEGAN}] : Date.now(); timedOut = false;
    return;
  }
  const ms = Date.now() - since;
  try {
    if (!noted && ms >= h[L.watchMs]) noted = note('crashed the decoder');
    if (noted && !timedOut && ms >= h[L.timeoutMs]) {
      timedOut = true;
      fs.rmSync(noted, { force: true });
      noted = note('timed out');
      // Straight to the descriptor: a worker's process.stderr goes through the main thread, which is stuck.
      fs.writeSync(2, 'svc: processing ' + text(L.unitAt, h[L.unitLen]) + ' has taken ' + ms + ' ms (SVC_DECODE_TIMEOUT_MS=' + h[L.timeoutMs] + '); the process ends so that it restarts without it (it is dead-lettered as timed out)\\n');
      process.kill(process.pid, 'SIGKILL');
    }
  } catch (e) { fs.writeSync(2, 'svc: decode watchdog: ' + e.message + '\\n'); }
}, Math.max(10, Math.min(250, workerData.pollMs)));
`;

/** Names this process's notes: a PID is no identity across restarts (a container's daemon is always PID 1). */
const TOKEN = randomUUID();

let shared: { sab: SharedArrayBuffer; header: Int32Array; bytes: Uint8Array; worker: Worker } | undefined;

function start(pollMs: number) {
  if (shared) return shared;
  const sab = new SharedArrayBuffer(DATA_AT + DATA_CAP);
  const layout = { ...H, folderAt: FOLDER_AT, unitAt: UNIT_AT, lengthsAt: LENGTHS_AT, dataAt: DATA_AT, dataCap: DATA_CAP, maxMessages: MAX_MESSAGES };
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { sab, layout, pollMs, token: TOKEN }, resourceLimits: { maxOldGenerationSizeMb: 64 } });
  worker.unref();
  worker.on('error', () => (shared = undefined)); // a new one is started at the next use
  shared = { sab, header: new Int32Array(sab, 0, HEADER_INTS), bytes: new Uint8Array(sab), worker };
  return shared;
}

/**
 * The watch of one pipeline's runs on this thread. begin() before a chunk is processed, at() as
 * each message's decoding starts (-1 once decoding is over), end() when it is done. One chunk at a
 * time: processing is synchronous, so chunks of different pipelines never overlap here.
 */
export class DecodeWatch {
  private readonly folder: Buffer;

  constructor(
    readonly opts: DecodeWatchOptions,
    readonly pipeline: string,
  ) {
    this.folder = Buffer.from(join(opts.dir, pipelineFolder(pipeline)));
    start(Math.floor(opts.watchMs / 4));
  }

  begin(unit: string, data: Uint8Array, messages?: Uint8Array[]) {
    const s = start(Math.floor(this.opts.watchMs / 4));
    const h = s.header;
    const lengths = new Int32Array(s.sab, LENGTHS_AT, MAX_MESSAGES);
    let at = DATA_AT;
    const end = DATA_AT + DATA_CAP;
    if (messages) {
      const n = Math.min(messages.length, MAX_MESSAGES);
      for (let i = 0; i < n; i++) {
        const m = messages[i]!;
        lengths[i] = m.length;
        const kept = Math.min(m.length, end - at);
        if (kept > 0) s.bytes.set(kept === m.length ? m : m.subarray(0, kept), at);
        at += Math.max(0, kept);
      }
      h[H.count] = n;
    } else {
      lengths[0] = data.length;
      const kept = Math.min(data.length, DATA_CAP);
      s.bytes.set(kept === data.length ? data : data.subarray(0, kept), at);
      at += kept;
      h[H.count] = 0;
    }
    h[H.copied] = at - DATA_AT;
    h[H.folderLen] = this.folder.copy(s.bytes, FOLDER_AT, 0, Math.min(this.folder.length, FOLDER_BYTES));
    const name = Buffer.from(unit).subarray(0, UNIT_BYTES);
    s.bytes.set(name, UNIT_AT);
    h[H.unitLen] = name.length;
    h[H.index] = messages ? 0 : -1;
    h[H.watchMs] = this.opts.watchMs;
    h[H.timeoutMs] = this.opts.timeoutMs;
    new Float64Array(s.sab, 0, HEADER_INTS / 2)[BEGAN] = Date.now();
    Atomics.add(h, H.seq, 1);
    Atomics.store(h, H.busy, 1);
  }

  /** The message being decoded (its index in the chunk), or -1 once decoding is over. */
  at(index: number) {
    if (shared) Atomics.store(shared.header, H.index, index);
  }

  end() {
    if (shared) Atomics.store(shared.header, H.busy, 0);
  }
}

const pipelineFolder = (pipeline: string) => pipeline.replace(/[^\w.-]/g, '_');

/** The suspects left by earlier processes for a pipeline (none when there is no folder). */
export function readSuspects(dir: string, pipeline: string): Suspect[] {
  const folder = join(dir, pipelineFolder(pipeline));
  let names: string[];
  try {
    names = readdirSync(folder).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const out: Suspect[] = [];
  for (const n of names) {
    const file = join(folder, n);
    try {
      const s = JSON.parse(readFileSync(file, 'utf8')) as Omit<Suspect, 'file'>;
      // A note of this very process is a chunk in work right now, not one left behind.
      if (n.startsWith(`${TOKEN}-`)) continue;
      if (Array.isArray(s.items)) out.push({ ...s, file });
    } catch {
      rmSync(file, { force: true }); // torn: the watchdog writes a temporary file and renames it
    }
  }
  return out;
}

/** Matches chunks and messages against the suspects of a pipeline, by length first (cheap), then SHA-1. */
export class SuspectMatcher {
  private readonly byLength = new Map<number, { sha1: string; suspect: Suspect }[]>();

  constructor(readonly suspects: Suspect[]) {
    for (const s of suspects)
      for (const it of s.items) {
        const list = this.byLength.get(it.length) ?? [];
        list.push({ sha1: it.sha1, suspect: s });
        this.byLength.set(it.length, list);
      }
  }

  get empty() {
    return this.byLength.size === 0;
  }

  /** The suspect these bytes are, if any. */
  match(b: Uint8Array): Suspect | undefined {
    const list = this.byLength.get(b.length);
    if (!list) return undefined;
    const sha1 = identity(b);
    return list.find((e) => e.sha1 === sha1)?.suspect;
  }
}

/** The DLQ reason of a quarantined input. */
export function quarantineReason(s: Suspect, timeoutMs: number): string {
  return s.reason === 'timed out'
    ? `timed out: processing this input took more than ${timeoutMs} ms (SVC_DECODE_TIMEOUT_MS) on ${s.since}, and the process was ended; set aside so that it cannot stop the process again`
    : `crashed the decoder: the process stopped while this input was being processed (${s.since}); set aside so that it cannot stop the process again`;
}

/**
 * The watch of MIB sources (src/mib/store.ts MibSourceWatch): a source is known by its path and
 * the SHA-1 of its text, so a source replaced by a fixed one is compiled again.
 */
export function mibSourceWatch(opts: DecodeWatchOptions) {
  const scope = 'mib-sources';
  const watch = new DecodeWatch(opts, scope);
  const ids = new Map<string, { text: string; id: Buffer }>();
  const idOf = (file: string, text: string) => {
    const known = ids.get(file);
    if (known?.text === text) return known.id;
    const id = Buffer.from(`${file}\n${createHash('sha1').update(text).digest('hex')}`);
    ids.set(file, { text, id });
    return id;
  };
  let suspects = readSuspects(opts.dir, scope);
  let matcher = new SuspectMatcher(suspects);
  return {
    setAside(file: string, text: string) {
      if (matcher.empty) return undefined;
      const s = matcher.match(idOf(file, text));
      return (
        s &&
        `${s.reason === 'timed out' ? 'timed out' : 'crashed the compiler'}: the process stopped while compiling this source (${s.since}); it is set aside so that it cannot stop every start: fix or replace the file (or remove it), and it is compiled again`
      );
    },
    inWork(file: string | undefined, text?: string) {
      if (file === undefined || text === undefined) watch.end();
      else watch.begin(file, idOf(file, text));
    },
    keepOnly(sources: { file: string; text: string }[]) {
      if (!suspects.length) return;
      const present = new Set(sources.map((s) => identity(idOf(s.file, s.text))));
      const gone = suspects.filter((s) => !s.items.some((it) => present.has(it.sha1)));
      forget(gone);
      suspects = suspects.filter((s) => !gone.includes(s));
      matcher = new SuspectMatcher(suspects);
    },
  };
}

/** Removes the notes of suspects whose input has been dead-lettered. */
export function forget(suspects: Iterable<Suspect>) {
  for (const s of suspects) rmSync(s.file, { force: true });
}
