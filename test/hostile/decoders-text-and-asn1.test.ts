// Hostile inputs for the decoders of issue 28 (part B): count bombs, deep nesting and expansions in
// ASN.1 BER/PER, CORBA CDR/GIOP, PM XML, XML, JSON/NDJSON, CSV, Prometheus remote write and syslog
// framing. Each goes through the real parser as the engine (the chunker, then decode) or the
// connector does it, and must end in that parser's own error with a reason, within time and memory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as snappy from 'snappyjs';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeDocument } from '../../src/asn1/documents.js';
import { loadSchema } from '../../src/asn1/load.js';
import { loadSettings } from '../../src/settings.js';
import { CdrReader, CdrWriter, decodeValue, parseType } from '../../src/plugins/connectors/corba/cdr.js';
import { GiopError, GiopFramer, MSG } from '../../src/plugins/connectors/corba/giop.js';
import { checkWriteRequest, decodeWriteRequest, RemoteWriteError, uncompress } from '../../src/plugins/connectors/prometheus_rw/decode.js';
import { DEFAULT_LIMITS, ExpositionError, parseExposition } from '../../src/plugins/connectors/prometheus_scrape/parse.js';
import { Framer } from '../../src/plugins/connectors/syslog/framing.js';
import asn1Serializer from '../../src/plugins/serializers/asn1/index.js';
import csv from '../../src/plugins/serializers/csv/index.js';
import json from '../../src/plugins/serializers/json/index.js';
import ndjson from '../../src/plugins/serializers/ndjson/index.js';
import pmXml from '../../src/plugins/serializers/pm_xml/index.js';
import xml from '../../src/plugins/serializers/xml/index.js';
import { CDR_DIR } from '../asn1/cdr-data.js';
import { decodeUnit, decoderOf } from '../plugins/serializers/helpers.js';

/** The bounds, generous: the machine's speed varies threefold. */
const SECONDS = 5;
const RSS_MB = 300;

/** Runs `f`, and checks it took under SECONDS and grew RSS by under RSS_MB. */
async function bounded<T>(f: () => T | Promise<T>): Promise<T> {
  const rss0 = process.memoryUsage.rss();
  const t0 = performance.now();
  const v = await f();
  const s = (performance.now() - t0) / 1000;
  const mb = (process.memoryUsage.rss() - rss0) / 2 ** 20;
  expect(s, 'seconds').toBeLessThan(SECONDS);
  expect(mb, 'RSS growth, MB').toBeLessThan(RSS_MB);
  return v;
}

/** A message that is the parser's own reason, not an engine error passed through. */
const ENGINE = /Maximum call stack|Invalid string length|Invalid array length|allocation failed|Cannot read propert/;

describe('ASN.1 BER', () => {
  const dec = () => decoderOf(asn1Serializer, { schema_file: CDR_DIR, message_class: 'CallEventRecord' });

  it('a length claiming 2^31 bytes with nothing behind it is a parse error', async () => {
    // smsRecord [80] with a 4-octet length of 2^31.
    const out = await bounded(() => decodeUnit(dec(), Buffer.from('bf508480000000', 'hex')));
    expect(out.records).toEqual([]);
    expect(out.errors.map((e) => e.message)).toEqual([expect.stringMatching(/invalid length 2147483648/)]);
  });

  it('a string of constructed segments nested 100k deep (indefinite lengths) is a parse error, not a stack overflow', async () => {
    const n = 100_000;
    // smsRecord { recordType 84, servedIMSI: constructed OCTET STRING, segments in segments ... }
    const bomb = Buffer.concat([
      Buffer.from('bf5080800154a180', 'hex'),
      Buffer.alloc(2 * n, Buffer.from('2480', 'hex')),
      Buffer.from('040111', 'hex'),
      Buffer.alloc(2 * n + 4),
    ]);
    for (const split of [false, true]) {
      const out = await bounded(() =>
        decodeUnit(decoderOf(asn1Serializer, { schema_file: CDR_DIR, message_class: 'CallEventRecord', split_records: split }), bomb),
      );
      expect(out.records).toEqual([]);
      expect(out.errors.length).toBeGreaterThan(0);
      for (const e of out.errors) expect(e.message).not.toMatch(ENGINE);
      expect(out.errors[0]!.message).toMatch(/nested more than 64 deep/);
    }
  });
});

describe('ASN.1 PER', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-hostile-per-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'Bomb.asn'),
    'Bomb DEFINITIONS AUTOMATIC TAGS ::= BEGIN\nNulls ::= SEQUENCE OF NULL\nDeep ::= SEQUENCE OF Deep\nOnes ::= IA5String (FROM ("a"))\nEND\n',
  );
  const cls = (name: string) => [{ name, type: loadSchema(dir).type(name) }];

  it('a SEQUENCE OF NULL whose length claims more zero-width elements than the input has octets is a parse error', async () => {
    // 400 fragments of 4 x 16K elements (one octet each), then a final empty one: 26 million NULLs;
    // and one length of 16,000 NULLs with 2,100 octets behind it (each NULL counts as one).
    const fragments = Buffer.concat([Buffer.alloc(400, 0xc4), Buffer.from([0])]);
    const counted = Buffer.concat([Buffer.from([0xbe, 0x80]), Buffer.alloc(2100)]);
    for (const enc of ['uper', 'per'] as const) {
      for (const [bomb, why] of [
        [fragments, /SEQUENCE OF \/ SET OF of 65536 elements at bit 8 cannot fit in the 3200 bits left/],
        [counted, /more zero-width elements at bit 16 than the input has octets/],
      ] as const) {
        const err = await bounded(() => {
          try {
            decodeDocument(enc, cls('Nulls'), bomb);
          } catch (e) {
            return e as Error;
          }
        });
        expect(err?.message).toMatch(why);
      }
    }
  });

  it('a string of zero-width characters (an alphabet of one) is bounded the same way', async () => {
    const err = await bounded(() => {
      try {
        decodeDocument('uper', cls('Ones'), Buffer.concat([Buffer.alloc(400, 0xc4), Buffer.from([0])]));
      } catch (e) {
        return e as Error;
      }
    });
    expect(err?.message).toMatch(/zero-width elements/);
  });

  it('a recursive type nested 100k deep is a parse error, not a stack overflow', async () => {
    const bomb = Buffer.concat([Buffer.alloc(100_000, 1), Buffer.from([0])]);
    const err = await bounded(() => {
      try {
        decodeDocument('uper', cls('Deep'), bomb);
      } catch (e) {
        return e as Error;
      }
    });
    expect(err?.message).toMatch(/nested more than 64 deep/);
  });
});

describe('CORBA CDR and GIOP', () => {
  /** A GIOP 1.2 header (little-endian) with `flags` and the body size. */
  const header = (type: number, size: number, more: boolean) => {
    const b = Buffer.from([0x47, 0x49, 0x4f, 0x50, 1, 2, more ? 3 : 1, type, 0, 0, 0, 0]);
    b.writeUInt32LE(size, 8);
    return b;
  };

  it('fragments that never complete a message fail the connection once they pass the message limit', async () => {
    const framer = new GiopFramer(loadSettings().CORBA_MAX_MESSAGE_BYTES);
    const body = Buffer.alloc(1 << 20); // request id 0, then zeros
    const first = Buffer.concat([header(MSG.Reply, body.length, true), body]);
    const fragment = Buffer.concat([header(MSG.Fragment, body.length, true), body]);
    const err = await bounded(() => {
      try {
        framer.push(first);
        // Twice the default limit: with nothing in the way the framer holds it all.
        for (let i = 0; i < 128; i++) framer.push(fragment);
      } catch (e) {
        return e as Error;
      }
    });
    expect(err).toBeInstanceOf(GiopError);
    expect(err!.message).toMatch(/fragments that never complete/);
  });

  it('a header claiming 4 GB is refused before anything is buffered; a sequence claiming 2^31 elements is a CDR error', async () => {
    expect(() => new GiopFramer(loadSettings().CORBA_MAX_MESSAGE_BYTES).push(header(MSG.Reply, 0xffffffff, false))).toThrow(/larger than the 67108864 allowed/);
    const w = new CdrWriter(true);
    w.ulong(2 ** 31);
    const t = parseType({ sequence: { struct: { a: 'octet' } } });
    await bounded(() => expect(() => decodeValue(new CdrReader(w.bytes(), true), t)).toThrow(/sequence of 2147483648 elements does not fit/));
  });
});

describe('PM XML', () => {
  const head = '<?xml version="1.0"?><measCollecFile><fileHeader fileFormatVersion="32.435 V10.0"/><measData><managedElement localDn="me"/>';

  it('<r p="2000000000"> is an error for that value, no sparse array', async () => {
    const doc = `${head}<measInfo measInfoId="mi"><measType p="1">a</measType><measValue measObjLdn="x"><r p="2000000000">7</r><r p="1">1</r></measValue></measInfo></measData></measCollecFile>`;
    const out = await bounded(() => decodeUnit(decoderOf(pmXml), doc));
    expect(out.records).toEqual([expect.objectContaining({ a: 1 })]);
    expect(out.errors.map((e) => e.message)).toEqual([expect.stringMatching(/p="2000000000"> matches no measType/)]);
  });

  it('200k nested elements end in a short note, not a message naming each of them', async () => {
    const n = 200_000;
    const doc = `${head}<measInfo measInfoId="mi"><measType p="1">a</measType>${'<x>'.repeat(n)}`;
    const out = await bounded(() => decodeUnit(decoderOf(pmXml), doc));
    expect(out.records).toEqual([]);
    expect(out.notes).toEqual([
      expect.stringMatching(/200003 open elements closed automatically \(measCollecFile > measData > measInfo > \.\.\. 199997 more \.\.\. > x > x > x\)/),
    ]);
    expect(out.notes[0]!.length).toBeLessThan(1000);
  });

  it('a measInfo with long counter names and a new order of values in every measValue does not compile a record shape per measValue', async () => {
    const k = 200;
    const names = Array.from({ length: k }, (_, i) => `c${i}_${'n'.repeat(5000)}`);
    const types = names.map((nm, i) => `<measType p="${i + 1}">${nm}</measType>`).join('');
    // Each measValue rotates the order of its r elements: a record shape never seen before.
    const values = Array.from(
      { length: 300 },
      (_, v) => `<measValue measObjLdn="v${v}">${Array.from({ length: k }, (_, j) => `<r p="${((j + v) % k) + 1}">${j}</r>`).join('')}</measValue>`,
    ).join('');
    const doc = `${head}<measInfo measInfoId="mi">${types}${values}</measInfo></measData></measCollecFile>`;
    const out = await bounded(() => decodeUnit(decoderOf(pmXml), doc));
    expect(out.errors).toEqual([]);
    expect(out.records).toHaveLength(300);
    expect(Object.keys(out.records[299]!).filter((f) => /^c\d+_n/.test(f))).toHaveLength(k);
  });
});

describe('XML, JSON, NDJSON', () => {
  const deepJson = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('JSON nested 100k deep is a parse error (records later cloned or stringified would overflow the stack)', async () => {
    for (const doc of [deepJson(100_000), '['.repeat(100_000), `[{"a": ${deepJson(600)}}]`]) {
      const out = await bounded(() => decodeUnit(decoderOf(json), doc));
      expect(out.records).toEqual([]);
      expect(out.errors).toHaveLength(1);
      expect(out.errors[0]!.message).not.toMatch(ENGINE);
    }
    const out = await decodeUnit(decoderOf(json), deepJson(100_000));
    expect(out.errors[0]!.message).toMatch(/nested deeper than 512 .*SVC_DECODE_MAX_DEPTH/);
  });

  it('an NDJSON line nested 100k deep is an error for that line; the others are records', async () => {
    const text = `{"a":1}\n{"deep":${deepJson(100_000)}}\n{"s":"[[[[${'['.repeat(2000)}"}\n{"b":2}\n`;
    const out = await bounded(() => decodeUnit(decoderOf(ndjson), text));
    expect(out.records.map((r) => Object.keys(r)[0])).toEqual(['a', 's', 'b']);
    expect(out.errors.map((e) => e.message)).toEqual([expect.stringMatching(/nested deeper than 512/)]);
  });

  it('an XML record 200k elements deep is an error for that record', async () => {
    const n = 200_000;
    const doc = `<records><record><a>1</a></record><record>${'<x>'.repeat(n)}${'</x>'.repeat(n)}</record></records>`;
    const out = await bounded(() => decodeUnit(decoderOf(xml), doc));
    expect(out.records).toEqual([{ a: '1' }]);
    expect(out.errors.map((e) => e.message)).toEqual([expect.stringMatching(/nested deeper than 512/)]);
  });
});

describe('CSV', () => {
  // Measured 372 s before: the chunker joined the pending bytes and rescanned them for quotes at
  // every read, and held a line of any length. Now a long line's parts are scanned once each, and a
  // line past MAX_LINE_BYTES (64 MiB) goes on cut, as a chunk the decoder reports as an error.
  it('a 100 MB line inside an unterminated quote is a parse error, in bounded time and memory', async () => {
    const piece = Buffer.alloc(64 << 10, 0x78);
    async function* input() {
      yield Buffer.from('a,b\n1,2\n3,"');
      for (let i = 0; i < 1600; i++) yield piece;
    }
    const out = await bounded(() => decodeUnit(decoderOf(csv), input()));
    expect(out.records).toEqual([{ a: '1', b: '2' }]);
    // The first 64 MiB of the line, then the rest: each an error of its own.
    expect(out.errors.length).toBeGreaterThan(0);
    for (const e of out.errors) expect(e.message).not.toMatch(ENGINE);
  });
});

describe('Prometheus remote write', () => {
  const maxOutput = loadSettings().PROMETHEUS_RW_MAX_OUTPUT_BYTES;
  const varint = (v: number) => {
    const b: number[] = [];
    for (; v >= 0x80; v = Math.floor(v / 0x80)) b.push((v % 0x80) | 0x80);
    b.push(v);
    return Buffer.from(b);
  };
  const field = (n: number, body: Buffer) => Buffer.concat([varint((n << 3) | 2), varint(body.length), body]);

  it('a snappy block declaring 4 GB uncompressed is refused before anything is allocated', async () => {
    const body = Buffer.concat([varint(2 ** 32 - 1), Buffer.from([0x00, 0x41])]);
    await bounded(() => expect(() => uncompress(body)).toThrow(RemoteWriteError));
    expect(() => uncompress(body)).toThrow(/snappy block of 4294967295 bytes uncompressed, more than 67108864/);
  });

  it('a series with large labels and a million empty samples (each a copy of the labels) is refused when it arrives', async () => {
    const labels = Array.from({ length: 50 }, (_, i) => field(1, Buffer.concat([field(1, Buffer.from(`label_${i}`)), field(2, Buffer.alloc(200, 0x76))])));
    const series = field(1, Buffer.concat([...labels, Buffer.alloc(2 * 1_000_000, Buffer.from([0x12, 0x00]))]));
    // What Prometheus would send: snappy around it (the empty samples compress to almost nothing).
    const body = Buffer.from(snappy.compress(series));
    expect(body.length).toBeLessThan(series.length / 10);
    const err = await bounded(() => {
      try {
        checkWriteRequest(uncompress(body), maxOutput); // the source's check on arrival (400)
      } catch (e) {
        return e as Error;
      }
    });
    expect(err).toBeInstanceOf(RemoteWriteError);
    expect(err!.message).toMatch(/more than the 67108864 allowed \(SVC_PROMETHEUS_RW_MAX_OUTPUT_BYTES\)/);
    // A spooled body (checked by an older version) fails the same way when its unit is read.
    let n = 0;
    await bounded(() => expect(() => decodeWriteRequest(uncompress(body), () => n++, maxOutput)).toThrow(RemoteWriteError));
    expect(n).toBe(0);
  });
});

describe('Prometheus exposition (prometheus_scrape)', () => {
  const parse = (body: string, format: 'text' | 'openmetrics' = 'text') => {
    let n = 0;
    try {
      parseExposition(body, format, DEFAULT_LIMITS, () => n++);
    } catch (e) {
      return { n, error: e as Error };
    }
    return { n, error: undefined };
  };

  it('a 16 MB line is refused at the line bound, without scanning it as a sample', async () => {
    const r = await bounded(() => parse(`m{a="${'x'.repeat(16 << 20)}"} 1\n`));
    expect(r.error).toBeInstanceOf(ExpositionError);
    expect(r.error!.message).toMatch(/^line 1: longer than 65536 bytes/);
  });

  it('a million tiny samples stop at max_samples; a million labels on one line stop at max_labels', async () => {
    const samples = await bounded(() => parse('a 1\n'.repeat(1_000_000)));
    expect(samples.error!.message).toMatch(/more than 200000 samples/);
    expect(samples.n).toBe(200_000);
    const labels = await bounded(() => parse(`m{${Array.from({ length: 5000 }, (_, i) => `l${i}="v"`).join(',')}} 1\n`));
    expect(labels.error!.message).toMatch(/more than 64 labels/);
  });

  it('a million metric families (TYPE lines, no samples) stop at the family bound', async () => {
    const r = await bounded(() => parse(Array.from({ length: 1_000_000 }, (_, i) => `# TYPE m${i} gauge`).join('\n')));
    expect(r.error!.message).toMatch(/more than 50000 metric families/);
  });

  it('escapes and quotes that never close, and a body of only backslashes, are errors with their line, not engine errors', async () => {
    for (const body of ['m{a="\\\\\\', `m{a="${'\\"'.repeat(100_000)}`, '\\'.repeat(60_000), `${'{'.repeat(60_000)}`]) {
      const r = await bounded(() => parse(body));
      expect(r.error).toBeInstanceOf(ExpositionError);
      expect(r.error!.message).not.toMatch(ENGINE);
    }
  });
});

describe('syslog octet counting', () => {
  it('a length prefix of 2^53 falls back to LF framing; messages stay within max size', async () => {
    const got: { len: number; truncated: boolean }[] = [];
    const fallbacks: string[] = [];
    const f = new Framer({ maxSize: 2048, onMessage: (m, truncated) => got.push({ len: m.length, truncated }), onFallback: (d) => fallbacks.push(d) });
    await bounded(() => {
      f.push(Buffer.from(`${2 ** 53} <13>1 - - - - - - hi`));
      f.push(Buffer.alloc(10 << 20, 0x61));
      f.push(Buffer.from('\n<13>1 - - - - - - next\n'));
      f.end();
    });
    expect(fallbacks).toEqual([expect.stringMatching(/expected a length prefix/)]);
    expect(got).toEqual([
      { len: 2048, truncated: true },
      { len: 22, truncated: false },
    ]);
  });
});
