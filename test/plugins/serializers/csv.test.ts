import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { chunksOf } from '../../../src/engine/chunker.js';
import { buildPlan } from '../../../src/engine/plan.js';
import { registry } from '../../../src/plugins/registry.js';
import { processChunk } from '../../../src/engine/process-chunk.js';
import csv from '../../../src/plugins/serializers/csv/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeUnit, decoderOf, encoderOf, loadedSerializers, once, pipelineWith, pyJson, randInt, randomStream, rng } from './helpers.js';

/** Decodes a whole CSV unit with the real chunker (one big chunk unless told otherwise). */
const decodeCsv = (text: string | Buffer, partial: Record<string, unknown> = {}, targetBytes?: number) =>
  decodeUnit(decoderOf(csv, partial), Buffer.from(text), { targetBytes });

/** The raw bytes of a parse error, as text: the row without its line end. */
const rawText = (raw: Buffer) => raw.toString('utf8');

interface PyCsv {
  text: string;
  header: string[];
  rows: string[][];
}

/**
 * Python's csv.writer writes a tricky table (quotes, both quote chars, embedded CR/LF/CRLF, the
 * delimiter, unicode, emoji, empty fields); we get the bytes and the rows it wrote.
 */
function pythonCsv(seed: number, opts: { delimiter?: string; quotechar?: string; lineterminator?: string; rows?: number } = {}): PyCsv {
  const code = `
import csv, io, json, random, sys
a = json.loads(sys.stdin.read())
r = random.Random(a["seed"])
alphabet = ["a", "b", "Z", "7", " ", "ü", "é", "東", "😀", ",", ";", "\\t", "|", '"', "'", "\\n", "\\r\\n", "x y", "Zürich"]
header = ["id", "naïve", "col,x", 'q"uote', "semi;colon", "tab\\there"]
rows = [[str(i)] + ["".join(r.choice(alphabet) for _ in range(r.randint(0, 6))) for _ in range(len(header) - 1)] for i in range(a["rows"])]
buf = io.StringIO(newline="")
w = csv.writer(buf, delimiter=a["delimiter"], quotechar=a["quotechar"], lineterminator=a["lineterminator"], quoting=csv.QUOTE_MINIMAL)
w.writerow(header)
w.writerows(rows)
print(json.dumps({"text": buf.getvalue(), "header": header, "rows": rows}))
`;
  return pyJson<PyCsv>(
    code,
    JSON.stringify({
      seed,
      delimiter: opts.delimiter ?? ',',
      quotechar: opts.quotechar ?? '"',
      lineterminator: opts.lineterminator ?? '\r\n',
      rows: opts.rows ?? 40,
    }),
  );
}

/** Python's csv.reader reads what we wrote. */
const pyRead = (text: string | Buffer, delimiter = ',', quotechar = '"') =>
  pyJson<string[][]>(
    `import csv, io, json, sys
print(json.dumps(list(csv.reader(io.StringIO(sys.stdin.buffer.read().decode("utf-8"), newline=""), delimiter=${JSON.stringify(delimiter)}, quotechar=${JSON.stringify(quotechar)}))))`,
    Buffer.from(text),
  );

const zip = (header: string[], row: string[]): Rec => Object.fromEntries(header.map((h, i) => [h, row[i]]));

describe('csv serializer: configuration', () => {
  it('defaults: delimiter ",", has_header true, quotechar \'"\'', () => {
    expect(cfgOf(csv)).toEqual({ delimiter: ',', has_header: true, quotechar: '"' });
    expect(loadedSerializers('{type: csv}').input).toEqual({ type: 'csv', delimiter: ',', has_header: true, quotechar: '"' });
  });

  it('delimiter and quotechar are exactly one character', () => {
    for (const bad of [{ delimiter: '' }, { delimiter: ';;' }, { quotechar: '' }, { quotechar: '""' }]) {
      expect(Value.Check(csv.config, { ...cfgOf(csv), ...bad }), JSON.stringify(bad)).toBe(false);
    }
  });

  it('framing: lines with one header line and quote-aware cuts; no header line without has_header', () => {
    expect(decoderOf(csv).framing).toEqual({ kind: 'lines', headerLines: 1, quote: '"' });
    expect(decoderOf(csv, { has_header: false, quotechar: "'" }).framing).toEqual({ kind: 'lines', headerLines: 0, quote: "'" });
    expect(encoderOf(csv).extension).toBe('csv');
  });
});

describe('csv serializer: decode', () => {
  it('names columns from the header; values stay strings', async () => {
    const { records, errors } = await decodeCsv('ne,ifIndex,up\ncore-1,1,true\ncore-2,2,false\n');
    expect(errors).toEqual([]);
    expect(records).toEqual([
      { ne: 'core-1', ifIndex: '1', up: 'true' },
      { ne: 'core-2', ifIndex: '2', up: 'false' },
    ]);
  });

  it('has_header false names columns column_1, column_2, ... and keeps the first line as data', async () => {
    const { records } = await decodeCsv('a,b,c\n1,2,3\n', { has_header: false });
    expect(records).toEqual([
      { column_1: 'a', column_2: 'b', column_3: 'c' },
      { column_1: '1', column_2: '2', column_3: '3' },
    ]);
  });

  it('delimiter: semicolon, tab and pipe', async () => {
    for (const d of [';', '\t', '|']) {
      const { records, errors } = await decodeCsv(`a${d}b\n1,5${d}x y\n`, { delimiter: d });
      expect(errors, JSON.stringify(d)).toEqual([]);
      expect(records).toEqual([{ a: '1,5', b: 'x y' }]);
    }
  });

  it('quotechar: fields quoted with another character; the default quote is then plain text', async () => {
    const { records, errors } = await decodeCsv("a;b\n'x;y';'it''s \"fine\"'\n", { delimiter: ';', quotechar: "'" });
    expect(errors).toEqual([]);
    expect(records).toEqual([{ a: 'x;y', b: 'it\'s "fine"' }]);
  });

  it('RFC 4180 quoting: embedded newlines, delimiters and doubled quotes, CRLF rows', async () => {
    const text = 'id,text,n\r\n1,"line one\nline two",a\r\n2,"a,b,c",b\r\n3,"say ""hi""",c\r\n4,"",d\r\n5,"x\r\ny",e\r\n';
    const { records, errors } = await decodeCsv(text);
    expect(errors).toEqual([]);
    expect(records).toEqual([
      { id: '1', text: 'line one\nline two', n: 'a' },
      { id: '2', text: 'a,b,c', n: 'b' },
      { id: '3', text: 'say "hi"', n: 'c' },
      { id: '4', text: '', n: 'd' },
      { id: '5', text: 'x\r\ny', n: 'e' },
    ]);
  });

  it('a UTF-8 byte-order mark is not part of the first column name', async () => {
    const { records } = await decodeCsv('\ufeffne,v\nZürich,1\n');
    expect(Object.keys(records[0]!)).toEqual(['ne', 'v']);
    expect(records).toEqual([{ ne: 'Zürich', v: '1' }]);
  });

  it('a UTF-8 byte-order mark is not part of the first value without a header', async () => {
    const { records } = await decodeCsv('\ufeffZürich,1\nBern,2\n', { has_header: false });
    expect(records).toEqual([
      { column_1: 'Zürich', column_2: '1' },
      { column_1: 'Bern', column_2: '2' },
    ]);
  });

  it('skips empty lines', async () => {
    const { records, errors } = await decodeCsv('a,b\n\n1,2\n\n\n3,4\n');
    expect(errors).toEqual([]);
    expect(records).toEqual([
      { a: '1', b: '2' },
      { a: '3', b: '4' },
    ]);
  });

  it('a row with the wrong column count is one error with its raw line and line number; other rows flow', async () => {
    const lines = ['a,b', '1,2', '3,4,5', '6,7', '8', '9,10'];
    const { records, errors } = await decodeCsv(lines.join('\n') + '\n');
    expect(records).toEqual([
      { a: '1', b: '2' },
      { a: '6', b: '7' },
      { a: '9', b: '10' },
    ]);
    expect(errors.map((e) => rawText(e.raw))).toEqual(['3,4,5', '8']);
    expect(errors[0]!.message).toMatch(/^CSV line 3: /);
    expect(errors[1]!.message).toMatch(/^CSV line 5: /);
  });

  it('error line numbers count from the start of the unit when the bad row is in a later chunk', async () => {
    const lines = ['h1,h2'];
    for (let i = 2; i <= 200; i++) lines.push(i === 137 ? `bad,row,${i}` : i === 171 ? 'lonely' : `v${i},"q""${i}"`);
    const text = lines.join('\r\n') + '\r\n';
    for (const targetBytes of [16, 64, 333]) {
      const out = await decodeCsv(text, {}, targetBytes);
      expect(out.chunks.length).toBeGreaterThan(3);
      expect(out.records).toHaveLength(197);
      expect(out.errors.map((e) => e.message.slice(0, e.message.indexOf(':')))).toEqual(['CSV line 137', 'CSV line 171']);
      expect(out.errors.map((e) => rawText(e.raw))).toEqual(['bad,row,137', 'lonely']);
    }
  });

  it('an unterminated quote at the end is an error, not a silent record', async () => {
    const { records, errors } = await decodeCsv('a,b\n1,2\n3,"open\n');
    expect(records).toEqual([{ a: '1', b: '2' }]);
    expect(errors).toHaveLength(1);
    expect(rawText(errors[0]!.raw)).toBe('3,"open');
  });

  it('a file that is only a header yields no records and no errors', async () => {
    for (const text of ['a,b\n', 'a,b', '\ufeffa,b\r\n']) {
      const out = await decodeCsv(text);
      expect(out.records).toEqual([]);
      expect(out.errors).toEqual([]);
    }
  });

  it('decodes exactly what Python csv.writer wrote, over many chunk sizes and random read splits', async () => {
    const variants = [
      { partial: {}, py: {} },
      { partial: {}, py: { lineterminator: '\n' } },
      { partial: { delimiter: ';', quotechar: "'" }, py: { delimiter: ';', quotechar: "'" } },
      { partial: { delimiter: '\t' }, py: { delimiter: '\t' } },
    ];
    for (const [vi, v] of variants.entries()) {
      const made = pythonCsv(100 + vi, v.py);
      const bytes = Buffer.from(made.text, 'utf8');
      const expected = made.rows.map((row) => zip(made.header, row));
      const r = rng(vi + 1);
      for (let round = 0; round < 15; round++) {
        const targetBytes = randInt(r, 1, 400);
        const stream = randomStream(bytes, r, randInt(r, 1, 40));
        const out = await decodeUnit(decoderOf(csv, v.partial), stream, { targetBytes });
        const where = `variant ${vi} round ${round} targetBytes ${targetBytes}`;
        expect(out.errors, where).toEqual([]);
        expect(out.records, where).toEqual(expected);
      }
      // And without a header: the header row is the first record.
      const noHeader = await decodeUnit(decoderOf(csv, { ...v.partial, has_header: false }), randomStream(bytes, r, 9), { targetBytes: 50 });
      expect(noHeader.records).toEqual([made.header, ...made.rows].map((row) => Object.fromEntries(row.map((x, i) => [`column_${i + 1}`, x]))));
    }
  });

  it('runs through the engine: chunker, process-chunk, CSV in and CSV out of a loaded pipeline', async () => {
    const config = pipelineWith(`{type: csv, delimiter: ';'}`, '{type: csv}', '  record_chunk_size: 2\n');
    const plan = buildPlan(config, { registry });
    const text = 'ne;note\ncore-1;"a;b"\ncore-2;x\nbroken\ncore-3;"multi\nline"\n';
    let payload = '';
    let head = '';
    const errors: string[] = [];
    for await (const c of chunksOf(once(Buffer.from(text)), plan.decoder.framing, { targetBytes: 1 << 20, maxLines: config.record_chunk_size })) {
      const out = processChunk(plan, { ...c, meta: {} }, { keepRecords: false });
      head ||= String(out.sinks[0]!.head);
      payload += Buffer.from(out.sinks[0]!.payload).toString('utf8');
      for (const e of out.parseErrors) errors.push(`${e.message.slice(0, e.message.indexOf(':'))} ${rawText(Buffer.from(e.raw!))}`);
    }
    expect(errors).toEqual(['CSV line 4 broken']);
    expect(head + payload).toBe('ne,note\ncore-1,a;b\ncore-2,x\ncore-3,"multi\nline"\n');
  });
});

describe('csv serializer: encode', () => {
  it('head is the header line (has_header true) and body the rows without it', () => {
    const e = encoderOf(csv);
    const rs: Rec[] = [
      { a: '1', b: 'x' },
      { a: '2', b: 'y' },
    ];
    expect(e.head(rs)).toBe('a,b\n');
    expect(e.body(rs).toString()).toBe('1,x\n2,y\n');
    expect([e.separator, e.tail]).toEqual(['', '']);
    expect(encoderOf(csv, { has_header: false }).head(rs)).toBe('');
    expect(encoderOf(csv, { has_header: false }).body(rs).toString()).toBe('1,x\n2,y\n');
  });

  it('quotes values that hold the delimiter, a newline or the quote; doubles quotes', () => {
    const e = encoderOf(csv);
    const out = e.body([{ a: 'x,y', b: 'l1\nl2', c: 'say "hi"', d: 'cr\rhere', e: 'plain' }]).toString();
    expect(out).toBe('"x,y","l1\nl2","say ""hi""","cr\rhere",plain\n');
  });

  it('booleans as true/false, objects and arrays as JSON, numbers as text, null/undefined empty', () => {
    const e = encoderOf(csv);
    const out = e.body([{ t: true, f: false, o: { k: 'v', n: [1, 2] }, l: [1, 'a'], n: 42, x: 1.5, z: null, u: undefined }]).toString();
    expect(out).toBe('true,false,"{""k"":""v"",""n"":[1,2]}","[1,""a""]",42,1.5,,\n');
    expect(pyRead(out)).toEqual([['true', 'false', '{"k":"v","n":[1,2]}', '[1,"a"]', '42', '1.5', '', '']]);
  });

  it('columns are the union of the keys in first-seen order; missing values are empty', () => {
    const e = encoderOf(csv);
    const rs: Rec[] = [{ a: 1, b: 2 }, { c: 3, a: 4 }, { d: 5 }];
    expect(e.head(rs)).toBe('a,b,c,d\n');
    expect(e.body(rs).toString()).toBe('1,2,,\n4,,3,\n,,,5\n');
  });

  it('delimiter and quotechar are used when writing', () => {
    const e = encoderOf(csv, { delimiter: ';', quotechar: "'" });
    const rs: Rec[] = [{ 'k;1': 'a;b', k2: "it's", k3: 'say "x"', k4: 'a,b' }];
    const text = e.head(rs) + e.body(rs).toString();
    expect(text).toBe("'k;1';k2;k3;k4\n'a;b';'it''s';say \"x\";a,b\n");
    expect(pyRead(text, ';', "'")).toEqual([
      ['k;1', 'k2', 'k3', 'k4'],
      ['a;b', "it's", 'say "x"', 'a,b'],
    ]);
  });

  it('one() writes a single row with no header and no line end', () => {
    const e = encoderOf(csv);
    expect(e.one({ a: 'x,y', b: true, c: 3 }).toString()).toBe('"x,y",true,3');
  });

  it('what we write, Python csv.reader reads back to the same values (and so does our decoder)', async () => {
    const made = pythonCsv(7, { rows: 60 });
    const records = made.rows.map((row) => zip(made.header, row));
    for (const partial of [{}, { delimiter: ';' }, { delimiter: '\t', quotechar: "'" }, { delimiter: '|' }]) {
      const e = encoderOf(csv, partial);
      const half = records.length / 2;
      // A file: head, then two batches.
      const text = e.head(records) + e.body(records.slice(0, half)).toString() + e.separator + e.body(records.slice(half)).toString();
      const p = partial as { delimiter?: string; quotechar?: string };
      expect(pyRead(text, p.delimiter, p.quotechar), JSON.stringify(partial)).toEqual([made.header, ...made.rows]);
      const back = await decodeUnit(decoderOf(csv, partial), randomStream(Buffer.from(text), rng(3), 11), { targetBytes: 97 });
      expect(back.errors).toEqual([]);
      expect(back.records).toEqual(records);
    }
  });

  it('the Python-written table re-encoded by us is byte-identical to Python with lineterminator "\\n"', () => {
    const made = pythonCsv(11, { lineterminator: '\n' });
    const e = encoderOf(csv);
    const records = made.rows.map((row) => zip(made.header, row));
    expect(e.head(records) + e.body(records).toString()).toBe(made.text);
  });
});
