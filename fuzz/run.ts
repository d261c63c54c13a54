// npm run fuzz -- TARGET|all [--seconds N] [--seed S]    fuzz targets one after another
// npm run fuzz -- --list                                   the targets
//
// Each target runs in a child process (so an abort or a runaway heap is caught, and the input
// saved), watched by this process: before each execution the child writes the input and its start
// time to a small file, and an execution still running after HANG_MS is killed and saved as a hang.
// Findings land in test/fuzz-regressions/<target>/<hash>.bin with a .txt note; the corpus (seeds plus
// inputs whose outcome was new) is kept in $TMPDIR/svc-fuzz-corpus/<target>/ across runs.
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { echoText, errorSignature, execOnce, HANG_MS, tooMuchMemory, withoutEchoes } from './exec.js';
import { mutate, Rng } from './mutate.js';
import { masked, TARGETS, targetNamed, type Target } from './targets.js';

const ROOT = join(import.meta.dirname, '..') + '/';
const REGRESSIONS = join(ROOT, 'test', 'fuzz-regressions');
const corpusDir = (name: string) => join(tmpdir(), 'svc-fuzz-corpus', name);
const HEADER = 20; // float64 start time (ms, 0 between runs), float64 execution number, uint32 input length
const MAX_CORPUS = 5000;

const hashOf = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 12);

/** Saves a finding unless its signature is known already; true when saved. */
function saveFinding(target: string, input: Buffer, kind: string, signature: string, detail: string): boolean {
  const dir = join(REGRESSIONS, target);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.txt')))
    if (readFileSync(join(dir, f), 'utf8').includes(`signature: ${signature}\n`)) return false;
  const h = hashOf(input);
  writeFileSync(join(dir, `${h}.bin`), input);
  // Paths relative to the repository: it stands alone (test/repo/self-contained.test.ts).
  const text = `target: ${target}\nkind: ${kind}\nsignature: ${signature}\nfound: ${new Date().toISOString()}\n\n${detail}\n`.replaceAll(ROOT, '');
  writeFileSync(join(dir, `${h}.txt`), text);
  return true;
}

const describe = (e: unknown) => (e instanceof Error ? `${e.stack ?? e.message}${e.cause instanceof Error ? `\ncause: ${e.cause.stack}` : ''}` : String(e));

// ---- the child: the fuzz loop of one target -------------------------------------------------------

/**
 * A message's template, roughly: its words up to the second that ends in a colon ("XML piece 3:
 * unmatched closing tag:" of "... tag: <the input's tag>"), else up to the first, else its first
 * three. Where a parser's message still carries parts of the input after norm() and
 * withoutEchoes(), new features keep coming from one template; a family adds at most FAMILY_CAP
 * inputs to the corpus, so the corpus does not fill up with near-copies.
 */
function familyOf(feature: string): string {
  const words = feature.split(' ');
  const colons = words.flatMap((w, i) => (w.endsWith(':') ? [i] : []));
  return words.slice(0, (colons[1] ?? colons[0] ?? 2) + 1).join(' ');
}
const FAMILY_CAP = 50;

/** Of two corpus entries the shorter: small inputs run faster, so more of them run. */
const smaller = (a: Buffer, b: Buffer) => (a.length <= b.length ? a : b);

/** An input from the target's grammar; undefined when the project's encoder refuses what was drawn. */
function generated(t: Target, r: Rng): Buffer | undefined {
  try {
    return t.generate!(r);
  } catch {
    return undefined;
  }
}

async function childLoop(t: Target, seconds: number, seed: number, curFile: string): Promise<void> {
  const cur = openSync(curFile, 'w');
  const header = Buffer.alloc(HEADER);
  const r = new Rng(seed);
  const dir = corpusDir(t.name);
  mkdirSync(dir, { recursive: true });
  const seeds = await t.seeds();
  const corpus = [...seeds, ...readdirSync(dir).map((f) => readFileSync(join(dir, f)))].filter((b) => b.length > 0);
  if (!corpus.length) corpus.push(Buffer.alloc(1));
  const queue = [...corpus]; // every seed and saved input runs once as it is first
  const sigs = new Set<string>(); // features of outcomes seen so far
  const families = new Map<string, number>(); // corpus entries kept per family of features
  let execs = 0;
  let findings = 0;
  const started = Date.now();
  const deadline = started + seconds * 1000;
  const progress = () => process.send?.({ type: 'progress', execs, corpus: corpus.length, findings, seeds: seeds.length, masked: [...masked] });
  let lastProgress = started;

  const found = (input: Buffer, kind: string, signature: string, detail: string) => {
    if (saveFinding(t.name, input, kind, signature, detail)) {
      findings++;
      process.stderr.write(`[${t.name}] finding (${kind}): ${signature}\n`);
    }
  };

  while (Date.now() < deadline) {
    let input =
      queue.shift() ??
      (t.generate && r.chance(0.25) ? generated(t, r) : undefined) ??
      mutate(smaller(r.pick(corpus), r.pick(corpus)), r.pick(corpus), t.style, r);
    if (t.fixup && !queue.length && r.chance(0.9)) input = t.fixup(input);
    header.writeDoubleLE(Date.now(), 0);
    header.writeDoubleLE(++execs, 8);
    header.writeUInt32LE(input.length, 16);
    writeSync(cur, header, 0, HEADER, 0);
    writeSync(cur, input, 0, input.length, HEADER);
    const res = await execOnce(t, input);
    if (res.kind === 'finding') found(input, 'error', errorSignature(res.error), describe(res.error));
    else if (res.ms > HANG_MS) {
      // Confirmed on a second run: a busy machine can stall one execution.
      const again = await execOnce(t, input);
      if (again.ms > HANG_MS)
        found(
          input,
          'hang',
          `hang: ${t.name} took ${Math.round(again.ms)} ms`,
          `${input.length} bytes took ${Math.round(res.ms)} ms, then ${Math.round(again.ms)} ms`,
        );
    } else if (tooMuchMemory(res.rssGrowth, input.length)) {
      const again = await execOnce(t, input);
      if (tooMuchMemory(again.rssGrowth, input.length))
        found(
          input,
          'memory',
          `memory: ${t.name} grew RSS by ${again.rssGrowth >> 20} MB`,
          `${input.length} bytes grew RSS by ${res.rssGrowth} then ${again.rssGrowth} bytes`,
        );
    }
    let fresh: string | undefined;
    if (res.kind === 'ok') {
      const text = echoText(input);
      for (const f of res.sig.split('|').map((x) => withoutEchoes(x, text)))
        if (!sigs.has(f)) {
          sigs.add(f);
          fresh ??= familyOf(f);
        }
    }
    if (fresh !== undefined && (families.get(fresh) ?? 0) < FAMILY_CAP) {
      families.set(fresh, (families.get(fresh) ?? 0) + 1);
      if (corpus.length < MAX_CORPUS && !corpus.includes(input)) {
        corpus.push(input);
        writeFileSync(join(dir, hashOf(input)), input);
      }
    }
    if (Date.now() - lastProgress > 2000) {
      lastProgress = Date.now();
      progress();
    }
  }
  header.fill(0);
  writeSync(cur, header, 0, HEADER, 0);
  closeSync(cur);
  progress();
  process.send?.({ type: 'done' });
}

// ---- the parent: a child per target, watched --------------------------------------------------------

interface Summary {
  target: string;
  seconds: number;
  execs: number;
  execs_per_sec: number;
  seeds: number;
  corpus: number;
  findings: number;
  restarts: number;
  /** Parse errors that carry a JavaScript engine error (handled, but worth a better message). */
  masked: string[];
}

function readCurrent(curFile: string): { start: number; n: number; input: Buffer } | undefined {
  if (!existsSync(curFile)) return undefined;
  const fd = openSync(curFile, 'r');
  try {
    const h = Buffer.alloc(HEADER);
    if (readSync(fd, h, 0, HEADER, 0) < HEADER) return undefined;
    const len = h.readUInt32LE(16);
    const input = Buffer.alloc(len);
    readSync(fd, input, 0, len, HEADER);
    return { start: h.readDoubleLE(0), n: h.readDoubleLE(8), input };
  } finally {
    closeSync(fd);
  }
}

async function fuzzTarget(t: Target, seconds: number, seed: number): Promise<Summary> {
  const curFile = join(tmpdir(), `svc-fuzz-${t.name}-${process.pid}.cur`);
  const started = Date.now();
  const deadline = started + seconds * 1000;
  const sum: Summary = { target: t.name, seconds, execs: 0, execs_per_sec: 0, seeds: 0, corpus: 0, findings: 0, restarts: 0, masked: [] };
  for (let attempt = 0; Date.now() < deadline - 1000; attempt++) {
    writeFileSync(curFile, Buffer.alloc(HEADER));
    const left = (deadline - Date.now()) / 1000;
    const child = fork(import.meta.filename, ['--child', t.name, '--seconds', left.toFixed(1), '--seed', String(seed + attempt), '--cur', curFile], {
      execArgv: [...process.execArgv, '--max-old-space-size=1024', '--stack-size=984'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let last = { execs: 0, corpus: 0, findings: 0, seeds: 0, masked: [] as string[] };
    let done = false;
    child.on('message', (m: { type: string } & typeof last) => {
      if (m.type === 'progress') last = m;
      if (m.type === 'done') done = true;
    });
    let hung: Buffer | undefined;
    let seen = -1;
    const watch = setInterval(() => {
      const c = readCurrent(curFile);
      if (!c || c.start === 0) return;
      // The same execution as at the last look, and started more than HANG_MS ago.
      if (c.n === seen && Date.now() - c.start > HANG_MS + 250) {
        hung = c.input;
        child.kill('SIGKILL');
      }
      seen = c.n;
    }, 400);
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    clearInterval(watch);
    sum.execs += last.execs;
    sum.corpus = last.corpus;
    sum.seeds = last.seeds;
    sum.findings += last.findings;
    sum.masked = [...new Set([...sum.masked, ...last.masked])];
    if (done && code === 0) break;
    const now = readCurrent(curFile);
    if (!hung && !now?.n) {
      // Ended before its first execution: the harness itself failed (seeds), not the parser.
      process.stderr.write(`[${t.name}] the fuzz process ended before running an input (code ${code} signal ${signal})\n`);
      sum.restarts++;
      break;
    }
    // Killed by the watchdog, or died by itself (abort, out of memory): the input it was on is the finding.
    const input = hung ?? now!.input;
    const kind = hung ? 'hang' : 'abort';
    const why = hung ? `still running after ${HANG_MS} ms: killed` : `the process ended with code ${code} signal ${signal}`;
    if (saveFinding(t.name, input, kind, `${kind}: ${t.name} ${hashOf(input)}`, why)) {
      sum.findings++;
      process.stderr.write(`[${t.name}] finding (${kind}): ${why}\n`);
    }
    sum.restarts++;
  }
  sum.execs_per_sec = Math.round(sum.execs / ((Date.now() - started) / 1000));
  return sum;
}

// ---- command line ---------------------------------------------------------------------------------

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(args: string[]): Promise<number> {
  if (args[0] === '--child') {
    await childLoop(targetNamed(args[1]!)!, Number(option(args, '--seconds')), Number(option(args, '--seed')), option(args, '--cur')!);
    return 0;
  }
  if (args[0] === '--replay') {
    // npm run fuzz -- --replay TARGET [FILE...]: the saved findings (or these files) run once each.
    const t = targetNamed(args[1] ?? '');
    if (!t) return 2;
    const dir = join(REGRESSIONS, t.name);
    const files =
      args.length > 2
        ? args.slice(2)
        : existsSync(dir)
          ? readdirSync(dir)
              .filter((f) => f.endsWith('.bin'))
              .map((f) => join(dir, f))
          : [];
    let bad = 0;
    for (const f of files) {
      const res = await execOnce(t, readFileSync(f));
      const what = res.kind === 'finding' ? describe(res.error).split('\n').slice(0, 4).join('\n  ') : res.sig;
      if (res.kind === 'finding' || res.ms > HANG_MS) bad++;
      console.log(`${f}: ${res.kind} in ${Math.round(res.ms)} ms: ${what}`);
    }
    return bad ? 1 : 0;
  }
  if (args.includes('--list') || !args.length) {
    for (const t of TARGETS) console.log(`${t.name.padEnd(16)} ${t.about}`);
    if (!args.length) console.log('\nusage: npm run fuzz -- TARGET|all [--seconds N] [--seed S]\n       npm run fuzz -- --replay TARGET [FILE...]');
    return 0;
  }
  const seconds = Number(option(args, '--seconds') ?? 60);
  const seed = Number(option(args, '--seed') ?? Date.now() % 1e9);
  const names = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  const chosen = names.includes('all') ? TARGETS : names.map((n) => targetNamed(n) ?? n);
  const unknown = chosen.filter((t) => typeof t === 'string');
  if (unknown.length || !chosen.length) {
    console.error(`unknown target(s): ${unknown.join(', ')}; npm run fuzz -- --list`);
    return 2;
  }
  let findings = 0;
  for (const t of chosen as Target[]) {
    const s = await fuzzTarget(t, seconds, seed);
    findings += s.findings;
    console.log(JSON.stringify(s));
  }
  return findings ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
