import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { bodyChunksOf, chunksOf, messageChunksOf, type Chunk, type ChunkOptions } from '../../src/engine/chunker.js';
import type { Framing } from '../../src/plugins/types.js';
import { once, piecesOf, pyJson, randInt, rng } from '../plugins/serializers/helpers.js';

async function* streamOf(pieces: Buffer[]): AsyncGenerator<Buffer> {
  for (const p of pieces) {
    await Promise.resolve();
    yield p;
  }
}

async function collect(input: Buffer | Buffer[], framing: Framing, opts: ChunkOptions): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const c of chunksOf(Array.isArray(input) ? streamOf(input) : once(input), framing, opts)) out.push(c);
  return out;
}

const texts = (chunks: Chunk[]) => chunks.map((c) => c.data.toString('utf8'));
const lineCount = (b: Buffer) => b.toString('latin1').split('\n').length - 1;
const LINES: Framing = { kind: 'lines' };
const CSV: Framing = { kind: 'lines', headerLines: 1, quote: '"' };

/** Chunks as comparable plain data. */
const plain = (chunks: Chunk[]) => chunks.map((c) => ({ data: c.data.toString('latin1'), header: c.header?.toString('latin1'), firstLine: c.firstLine }));

/** The checks every `lines` chunking must pass: nothing lost or reordered, numbering right. */
function checkCover(input: Buffer, chunks: Chunk[], headerLines = 0) {
  const header = chunks[0]?.header ?? Buffer.alloc(0);
  expect(Buffer.concat([header, ...chunks.map((c) => c.data)]).equals(input)).toBe(true);
  let line = 1 + lineCount(header);
  for (const [i, c] of chunks.entries()) {
    expect(c.firstLine, `chunk ${i}`).toBe(line);
    expect(c.data.length, `chunk ${i} is empty`).toBeGreaterThan(0);
    if (headerLines > 0) expect(c.header?.equals(header), `chunk ${i} header`).toBe(true);
    else expect(c.header).toBeUndefined();
    if (i < chunks.length - 1) expect(c.data[c.data.length - 1], `chunk ${i} ends inside a line`).toBe(0x0a);
    line += lineCount(c.data);
  }
}

/** Lines of random lengths (some multi-byte UTF-8, some empty). */
function randomLines(r: () => number, n: number, maxLen = 40): string {
  const alphabet = ['a', 'b', ' ', 'ü', '€', '東', '😀', ',', 'x'];
  let s = '';
  for (let i = 0; i < n; i++) {
    const len = randInt(r, 0, maxLen);
    for (let j = 0; j < len; j++) s += alphabet[randInt(r, 0, alphabet.length - 1)];
    s += '\n';
  }
  return s;
}

describe('chunker: lines framing', () => {
  it('cuts at the last line end before targetBytes', async () => {
    const chunks = await collect(Buffer.from('a\nbb\nccc\ndddd\nee\n'), LINES, { targetBytes: 6 });
    expect(texts(chunks)).toEqual(['a\nbb\n', 'ccc\n', 'dddd\n', 'ee\n']);
    expect(chunks.map((c) => c.firstLine)).toEqual([1, 3, 4, 5]);
  });

  it('chunks are as full as targetBytes allows, identical however the stream is split', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const r = rng(seed);
      const input = Buffer.from(randomLines(r, randInt(r, 1, 80)), 'utf8');
      const targetBytes = randInt(r, 1, 120);
      const whole = await collect(input, LINES, { targetBytes });
      checkCover(input, whole);
      for (const [i, c] of whole.entries()) {
        const lines = lineCount(c.data);
        if (i === whole.length - 1) continue;
        const next = whole[i + 1]!.data;
        const nextLine = next.subarray(0, next.indexOf(0x0a) + 1 || next.length);
        if (lines > 1) expect(c.data.length, `seed ${seed} chunk ${i}`).toBeLessThanOrEqual(targetBytes);
        else if (c.data.length > targetBytes) expect(lines).toBe(1); // one long line, whole
        // Maximal: the next line would not have fitted.
        expect(c.data.length + nextLine.length, `seed ${seed} chunk ${i}`).toBeGreaterThan(targetBytes);
      }
      const split = await collect(piecesOf(input, r, randInt(r, 1, 30)), LINES, { targetBytes });
      expect(plain(split), `seed ${seed}`).toEqual(plain(whole));
    }
  });

  it('multi-byte UTF-8 characters survive reads that split them: every chunk is valid UTF-8', async () => {
    let splitsInside = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const r = rng(1000 + seed);
      const text = randomLines(r, 60, 25);
      const input = Buffer.from(text, 'utf8');
      const pieces = piecesOf(input, r, 5);
      let off = 0;
      for (const p of pieces.slice(0, -1)) {
        off += p.length;
        if ((input[off]! & 0xc0) === 0x80) splitsInside++; // the next piece starts with a continuation byte
      }
      const chunks = await collect(pieces, LINES, { targetBytes: randInt(r, 1, 90) });
      checkCover(input, chunks);
      for (const c of chunks) expect(Buffer.from(c.data.toString('utf8'), 'utf8').equals(c.data)).toBe(true);
      expect(chunks.map((c) => c.data.toString('utf8')).join('')).toBe(text);
    }
    expect(splitsInside).toBeGreaterThan(50);
  });

  it('keeps a final line without a newline', async () => {
    const chunks = await collect(Buffer.from('one\ntwo\nthree'), LINES, { targetBytes: 5 });
    expect(texts(chunks)).toEqual(['one\n', 'two\n', 'three']);
    expect(chunks.map((c) => c.firstLine)).toEqual([1, 2, 3]);
    expect(texts(await collect(Buffer.from('lonely'), LINES, { targetBytes: 100 }))).toEqual(['lonely']);
  });

  it('keeps a line longer than targetBytes whole, even when it arrives in small pieces', async () => {
    const long = 'L'.repeat(100) + '€'.repeat(20);
    const input = Buffer.from(`s1\n${long}\ns2\ns3\n`, 'utf8');
    for (const pieces of [[input], piecesOf(input, rng(3), 4)]) {
      const chunks = await collect(pieces, LINES, { targetBytes: 10 });
      expect(texts(chunks)).toEqual(['s1\n', `${long}\n`, 's2\ns3\n']);
      expect(chunks.map((c) => c.firstLine)).toEqual([1, 2, 3]);
    }
  });

  it('a line past maxLineBytes goes on in pieces marked as errors, up to its end; the lines after it are chunked as usual', async () => {
    const long = 'L'.repeat(250);
    const input = Buffer.from(`s1\n${long}\ns2\ns3\n`, 'utf8');
    for (const pieces of [[input], piecesOf(input, rng(5), 8)]) {
      const chunks = await collect(pieces, LINES, { targetBytes: 10, maxLineBytes: 100 });
      // Every byte is in a chunk, in order, and only pieces of the long line carry an error.
      expect(Buffer.concat(chunks.map((c) => c.data)).equals(input)).toBe(true);
      const cut = chunks.filter((c) => c.error);
      expect(cut.length).toBeGreaterThan(0);
      expect(Buffer.concat(cut.map((c) => c.data)).toString()).toBe(`${long}\n`);
      for (const c of cut) expect(c.error).toMatch(/a line longer than 100 bytes/);
      expect(texts(chunks.filter((c) => !c.error))).toEqual(['s1\n', 's2\ns3\n']);
    }
  });

  it('an unterminated CSV quote is read part by part, not rescanned: it ends as error pieces at the end of the input', async () => {
    const input = Buffer.from(`a,b\n1,2\n3,"${'x'.repeat(300)}`, 'utf8');
    const chunks = await collect(piecesOf(input, rng(9), 16), CSV, { targetBytes: 8, maxLineBytes: 64 });
    expect(texts(chunks.filter((c) => !c.error))).toEqual(['1,2\n']);
    expect(Buffer.concat(chunks.filter((c) => c.error).map((c) => c.data)).toString()).toBe(`3,"${'x'.repeat(300)}`);
  });

  it('yields nothing for an empty stream', async () => {
    expect(await collect([], LINES, { targetBytes: 10 })).toEqual([]);
  });
});

describe('chunker: header lines', () => {
  it('hands the header lines to every chunk and numbers data lines after them', async () => {
    const input = Buffer.from('h1,h2\n1,a\n2,b\n3,c\n4,d\n5,e\n', 'utf8');
    for (const pieces of [[input], piecesOf(input, rng(9), 2)]) {
      const chunks = await collect(pieces, CSV, { targetBytes: 8 });
      expect(chunks.length).toBeGreaterThan(2);
      checkCover(input, chunks, 1);
      expect(chunks[0]!.header!.toString()).toBe('h1,h2\n');
      expect(chunks[0]!.firstLine).toBe(2);
      for (const c of chunks) expect(c.data.toString()).not.toContain('h1');
    }
  });

  it('takes several header lines when asked', async () => {
    const chunks = await collect(Buffer.from('# meta\nh1,h2\n1,2\n3,4\n'), { kind: 'lines', headerLines: 2 }, { targetBytes: 4 });
    expect(chunks.map((c) => [c.header!.toString(), c.data.toString(), c.firstLine])).toEqual([
      ['# meta\nh1,h2\n', '1,2\n', 3],
      ['# meta\nh1,h2\n', '3,4\n', 4],
    ]);
  });

  it('a header with a quoted newline is one header record; data lines are numbered after both its lines', async () => {
    const chunks = await collect(Buffer.from('"multi\nline",b\n1,2\n3,4\n'), CSV, { targetBytes: 4 });
    expect(chunks.map((c) => [c.header!.toString(), c.data.toString(), c.firstLine])).toEqual([
      ['"multi\nline",b\n', '1,2\n', 3],
      ['"multi\nline",b\n', '3,4\n', 4],
    ]);
  });

  it('a unit that is only a header (or less) yields nothing', async () => {
    for (const text of ['h1,h2\n', 'h1,h2', '', '"h1\n",h2\n']) {
      expect(await collect(Buffer.from(text), CSV, { targetBytes: 2 }), JSON.stringify(text)).toEqual([]);
      expect(await collect(piecesOf(Buffer.from(text), rng(1), 1), CSV, { targetBytes: 2, maxLines: 1 })).toEqual([]);
    }
    expect(await collect(Buffer.from('only one\n'), { kind: 'lines', headerLines: 2 }, { targetBytes: 2 })).toEqual([]);
  });
});

describe('chunker: quote framing (CSV)', () => {
  // Python's csv.writer makes the input: quoted fields with embedded LF/CRLF, doubled quotes, unicode.
  const made = pyJson<{ text: string; rows: string[][] }>(`
import csv, io, json, random
r = random.Random(42)
alphabet = ["a", "b", " ", "ü", "東", "😀", ",", '"', "\\n", "\\r\\n", "x"]
rows = [["h1", "h2", "h3"]] + [[str(i)] + ["".join(r.choice(alphabet) for _ in range(r.randint(0, 12))) for _ in range(2)] for i in range(150)]
buf = io.StringIO(newline="")
csv.writer(buf).writerows(rows)
print(json.dumps({"text": buf.getvalue(), "rows": rows}))
`);
  const input = Buffer.from(made.text, 'utf8');
  const quotes = (b: Buffer) => b.toString('latin1').split('"').length - 1;

  it('the generated CSV really has newlines inside quotes (cutting at any newline would break it)', async () => {
    expect(made.rows.flat().some((f) => f.includes('\n'))).toBe(true);
    const naive = await collect(input, { kind: 'lines', headerLines: 1 }, { targetBytes: 20 });
    expect(naive.some((c) => quotes(c.data) % 2 === 1)).toBe(true);
  });

  it('never cuts inside a quoted field, for many chunk sizes and random read splits', async () => {
    const r = rng(77);
    for (let round = 0; round < 60; round++) {
      const targetBytes = randInt(r, 1, 300);
      const maxLines = round % 3 === 0 ? randInt(r, 1, 7) : undefined;
      const chunks = await collect(piecesOf(input, r, randInt(r, 1, 50)), CSV, { targetBytes, maxLines });
      const where = `round ${round} targetBytes ${targetBytes} maxLines ${maxLines}`;
      checkCover(input, chunks, 1);
      const rows: string[][] = [parse(chunks[0]!.header!) as string[][]][0]!;
      for (const c of chunks) {
        expect(quotes(c.data) % 2, where).toBe(0);
        const part = parse(c.data, { relax_column_count: false }) as string[][];
        if (maxLines !== undefined) expect(part.length, where).toBeLessThanOrEqual(maxLines);
        rows.push(...part);
      }
      expect(rows, where).toEqual(made.rows);
    }
  });

  it('keeps a quoted field longer than targetBytes whole', async () => {
    const big = `"${'q\n'.repeat(50)}",end\n`;
    const chunks = await collect(Buffer.from(`h\na\n${big}b\n`), CSV, { targetBytes: 5 });
    expect(texts(chunks)).toEqual(['a\n', big, 'b\n']);
    expect(chunks.map((c) => c.firstLine)).toEqual([2, 3, 54]);
  });
});

describe('chunker: maxLines windows', () => {
  const ten = Buffer.from(Array.from({ length: 10 }, (_, i) => `line${i + 1}\n`).join(''));

  it('windows of exactly maxLines lines (the last one shorter), however the stream is split', async () => {
    for (const pieces of [[ten], piecesOf(ten, rng(4), 3), piecesOf(ten, rng(5), 1)]) {
      const chunks = await collect(pieces, LINES, { targetBytes: 1 << 20, maxLines: 3 });
      expect(chunks.map((c) => lineCount(c.data))).toEqual([3, 3, 3, 1]);
      expect(chunks.map((c) => c.firstLine)).toEqual([1, 4, 7, 10]);
      checkCover(ten, chunks);
    }
  });

  it('random lines, targets and windows: the same chunks however the stream is split', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(seed);
      const input = Buffer.from(randomLines(r, randInt(r, 1, 120)), 'utf8');
      const opts = { targetBytes: randInt(r, 1, 200), maxLines: randInt(r, 1, 12) };
      const whole = await collect(input, LINES, opts);
      checkCover(input, whole);
      const split = await collect(piecesOf(input, r, randInt(r, 1, 30)), LINES, opts);
      expect(plain(split), `seed ${seed}`).toEqual(plain(whole));
    }
  });

  it('a read that follows an incomplete window is copied only as far as that window reaches: the later windows are views of the read', async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `{"n":${i}}\n`).join('');
    const first = Buffer.from(lines.slice(0, 55)); // ends inside a line, short of a window
    const rest = lines.slice(55);
    const read = Buffer.alloc(rest.length, rest); // memory of its own (Buffer.from may share a pool)
    const chunks = await collect([first, read], LINES, { targetBytes: 1 << 20, maxLines: 10 });
    checkCover(Buffer.from(lines), chunks);
    expect(chunks.map((c) => lineCount(c.data))).toEqual(Array(40).fill(10));
    expect(chunks[0]!.data.buffer).not.toBe(read.buffer); // the window across both reads: joined
    for (const c of chunks.slice(1)) expect(c.data.buffer).toBe(read.buffer);
  });

  it('the byte target still bounds a window', async () => {
    const chunks = await collect(ten, LINES, { targetBytes: 14, maxLines: 5 });
    checkCover(ten, chunks);
    for (const c of chunks) {
      expect(c.data.length).toBeLessThanOrEqual(14);
      expect(lineCount(c.data)).toBeLessThanOrEqual(5);
    }
    expect(chunks.map((c) => lineCount(c.data))).toEqual([2, 2, 2, 2, 2]);
  });

  it('counts lines after the header, and keeps a final line without newline', async () => {
    const chunks = await collect(Buffer.from('h\n1\n2\n3\n4\n5'), { kind: 'lines', headerLines: 1 }, { targetBytes: 1000, maxLines: 2 });
    expect(chunks.map((c) => [c.data.toString(), c.header!.toString(), c.firstLine])).toEqual([
      ['1\n2\n', 'h\n', 2],
      ['3\n4\n', 'h\n', 4],
      ['5', 'h\n', 6],
    ]);
  });
});

describe('chunker: whole framing', () => {
  it('concatenates every piece into one chunk starting at line 1', async () => {
    const input = Buffer.from('[{"a":"Zürich"},\n{"b":"😀"}]\n', 'utf8');
    for (const pieces of [[input], piecesOf(input, rng(8), 2)]) {
      const chunks = await collect(pieces, { kind: 'whole' }, { targetBytes: 1, maxLines: 1 });
      expect(chunks).toHaveLength(1);
      expect(chunks[0]!.data.equals(input)).toBe(true);
      expect(chunks[0]!.firstLine).toBe(1);
      expect(chunks[0]!.header).toBeUndefined();
    }
  });

  it('takes pieces that lie one after the other in one buffer (a file read into one buffer) as one view, without a copy', async () => {
    const file = Buffer.from('<measCollecFile>0123456789</measCollecFile>\n');
    const [chunk] = await collect([file.subarray(0, 10), file.subarray(10, 30), file.subarray(30)], { kind: 'whole' }, { targetBytes: 1 });
    expect(chunk!.data.equals(file)).toBe(true);
    expect(chunk!.data.buffer).toBe(file.buffer);
    file[0] = 0x20; // the same memory
    expect(chunk!.data[0]).toBe(0x20);
  });

  it('copies pieces that are not adjacent: a gap, another buffer, or out of order', async () => {
    const file = Buffer.alloc(10, 'abcdefghij'); // not from the shared pool, where a copy may also land
    const cases: [Buffer[], string][] = [
      [[file.subarray(0, 3), file.subarray(4)], 'abcefghij'],
      [[file.subarray(0, 3), Buffer.from('XYZ')], 'abcXYZ'],
      [[file.subarray(5), file.subarray(0, 5)], 'fghijabcde'],
    ];
    for (const [pieces, text] of cases) {
      const [chunk] = await collect(pieces, { kind: 'whole' }, { targetBytes: 1 });
      expect(chunk!.data.toString()).toBe(text);
      expect(chunk!.data.buffer).not.toBe(file.buffer);
    }
  });
});

describe('chunker: message units', () => {
  async function* streamed(msgs: Buffer[]) {
    for (const m of msgs) yield m;
  }
  const sizes = (cs: Chunk[]) => cs.map((c) => c.messages!.map((m) => m.toString()));

  it('messages are never cut or joined; a chunk ends at targetBytes or maxMessages; an array gives what the stream gives', async () => {
    const msgs = Array.from({ length: 10 }, (_, i) => Buffer.from('x'.repeat(i + 1)));
    for (const opts of [{ targetBytes: 12 }, { targetBytes: 1000, maxMessages: 4 }, { targetBytes: 1 }, { targetBytes: 1000 }]) {
      const fromStream: Chunk[] = [];
      for await (const c of messageChunksOf(streamed(msgs), opts)) fromStream.push(c);
      const fromArray = [...bodyChunksOf(msgs, opts)];
      expect(sizes(fromArray)).toEqual(sizes(fromStream));
      expect(sizes(fromArray).flat()).toEqual(msgs.map((m) => m.toString()));
      expect(fromArray.every((c) => c.data.length === 0 && c.firstLine === 1)).toBe(true);
    }
    expect(sizes([...bodyChunksOf(msgs, { targetBytes: 12 })]).map((c) => c.length)).toEqual([5, 2, 2, 1]);
    expect(sizes([...bodyChunksOf(msgs, { targetBytes: 1000, maxMessages: 4 })]).map((c) => c.length)).toEqual([4, 4, 2]);
    expect([...bodyChunksOf([], { targetBytes: 10 })]).toEqual([]);
  });
});
