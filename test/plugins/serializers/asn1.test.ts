// The asn1 serializer end to end: records from asn1c and pyasn1 encodings, decoded through the real
// chunker with random split points; corrupt input; split_path; lint of schema files and options.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../../src/config/load.js';
import asn1 from '../../../src/plugins/serializers/asn1/index.js';
import { asn1cEncode } from '../../asn1/asn1c.js';
import { CDR_DIR, cdrCase } from '../../asn1/cdr-data.js';
import { decodeUnit, decoderOf, randInt, randomStream, rng } from './helpers.js';

const FIX = join(import.meta.dirname, '..', '..', 'asn1', 'fixtures');
const cdrDecoder = (extra: Record<string, unknown> = {}) =>
  decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord', split_records: true, ...extra });

const N = 240;
const cases = Array.from({ length: N }, (_, i) => cdrCase(i));
const encoded = asn1cEncode(
  CDR_DIR,
  'CallEventRecord',
  'der',
  cases.map((c) => c.xer),
);
const file = Buffer.concat(encoded);
/** Byte offset of each record in the file. */
const offsets: number[] = [];
encoded.reduce((at, b) => (offsets.push(at), at + b.length), 0);

describe('asn1 split_records', () => {
  it.each([1, 2, 3])('decodes a CDR file of SGW/PGW/SMS records cut anywhere (seed %i)', async (seed) => {
    const r = rng(seed);
    const d = cdrDecoder();
    const out = await decodeUnit(d, randomStream(file, r, randInt(r, 1, 300)), { targetBytes: randInt(r, 50, 3000), maxLines: seed === 3 ? 7 : undefined });
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual(cases.map((c) => c.record));
    expect(out.chunks.length).toBeGreaterThan(3); // streamed in pieces, not whole
    if (seed === 3) for (const c of out.chunks.slice(0, -1)) expect(c.data.length).toBeLessThan(file.length / 10);
  });

  it('reads pyasn1 CER records (indefinite lengths, segmented strings) cut anywhere', async () => {
    const cer = execFileSync('python3', [join(FIX, 'pyasn1_specs.py'), 'sms', 'cer', '120']);
    const out = await decodeUnit(cdrDecoder(), randomStream(cer, rng(9), 40), { targetBytes: 500 });
    expect(out.errors).toEqual([]);
    expect(out.records).toHaveLength(120);
    expect(out.records[7]).toEqual({ type: 'smsRecord', value: expect.objectContaining({ messageReference: '07'.repeat(2500), smsType: 'mt' }) });
    expect(out.records[119]).toEqual({
      type: 'smsRecord',
      value: {
        recordType: 84,
        servedIMSI: '2143658709000119',
        eventTimeStamp: '2311051230452b0100',
        messageReference: '7777',
        messageSize: 119,
        smsType: 'statusReport',
      },
    });
  });

  it('reports garbage between records with its byte offset and bytes, and decodes the rest', async () => {
    const junk = Buffer.from('deadbeef00ff', 'hex');
    const at = 10;
    const bad = Buffer.concat([...encoded.slice(0, at), junk, ...encoded.slice(at)]);
    const out = await decodeUnit(cdrDecoder(), randomStream(bad, rng(4), 64), { targetBytes: 700 });
    expect(out.records).toEqual(cases.map((c) => c.record));
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]!.message).toContain(`at byte ${offsets[at]}`);
    expect(out.errors[0]!.raw).toEqual(junk);
  });

  it('reports a record truncated in the middle and resumes at the next record', async () => {
    const at = 20;
    const cut = encoded[at]!.subarray(0, 30);
    const bad = Buffer.concat([...encoded.slice(0, at), cut, ...encoded.slice(at + 1)]);
    const out = await decodeUnit(cdrDecoder(), randomStream(bad, rng(5), 64), { targetBytes: 900 });
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]!.message).toMatch(new RegExp(`at byte ${offsets[at]}\\b`));
    expect(out.errors[0]!.raw).toEqual(cut);
    expect(out.records).toEqual(cases.filter((_, i) => i !== at).map((c) => c.record));
  });

  it('reports an invalid length and a truncated last record', async () => {
    const badLen = Buffer.from(encoded[5]!);
    badLen[2] = 0x85; // the length field of [78]/[79]/[80] records: 5 length octets is invalid here
    const last = encoded[N - 1]!.subarray(0, encoded[N - 1]!.length - 3);
    const bad = Buffer.concat([...encoded.slice(0, 5), badLen, ...encoded.slice(6, N - 1), last]);
    const out = await decodeUnit(cdrDecoder(), bad, { targetBytes: 1000 });
    expect(out.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(new RegExp(`invalid record: invalid length.* at byte ${offsets[5]};`)),
      expect.stringMatching(new RegExp(`truncated record .* at byte ${offsets[N - 1]}`)),
    ]);
    expect(out.errors[0]!.raw).toEqual(badLen);
    expect(out.errors[1]!.raw).toEqual(last);
    expect(out.records).toEqual(cases.filter((_, i) => i !== 5 && i !== N - 1).map((c) => c.record));
  });

  it('reports a record that is well-formed BER but does not match the schema, with its bytes', async () => {
    // A [79] (pgwRecord) whose contents lack mandatory components.
    const wrong = Buffer.from('bf4f03800155', 'hex');
    const out = await decodeUnit(cdrDecoder(), Buffer.concat([encoded[0]!, wrong, encoded[1]!]));
    expect(out.records).toEqual([cases[0]!.record, cases[1]!.record]);
    expect(out.errors).toEqual([{ message: expect.stringMatching(/record at byte \d+: missing component 'p-GWAddress'/), raw: wrong }]);
  });

  it('tries message_classes in order: the first whose tag fits', async () => {
    const sms = asn1cEncode(CDR_DIR, 'SMSRecord', 'der', [
      '<SMSRecord><recordType>84</recordType><servedIMSI>01</servedIMSI><eventTimeStamp>02</eventTimeStamp><messageReference>03</messageReference></SMSRecord>',
    ])[0]!;
    const d = decoderOf(asn1, { schema_file: CDR_DIR, message_classes: ['ChargingRecords.SMSRecord', 'CallEventRecord'], split_records: true });
    const out = await decodeUnit(d, Buffer.concat([sms, encoded[0]!, sms]));
    expect(out.errors).toEqual([]);
    const plain = { recordType: 84, servedIMSI: '01', eventTimeStamp: '02', messageReference: '03', messageSize: 0, smsType: 'mo' };
    expect(out.records).toEqual([plain, cases[0]!.record, plain]);
  });
});

describe('asn1 whole documents', () => {
  it('decodes one DER document, and names trailing bytes', async () => {
    const d = decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord' });
    expect((await decodeUnit(d, encoded[1]!)).records).toEqual([cases[1]!.record]);
    const two = await decodeUnit(d, Buffer.concat([encoded[1]!, encoded[2]!]));
    expect(two.records).toEqual([]);
    expect(two.errors[0]!.message).toMatch(/bytes after the record \(concatenated records need split_records: true\)/);
  });

  it('split_path: one record per service data container, with context values copied in (record fields win)', async () => {
    const d = decoderOf(asn1, {
      schema_file: CDR_DIR,
      message_class: 'CallEventRecord',
      split_path: 'value.listOfServiceData',
      split_path_context: { imsi: 'value.servedIMSI', chargingID: 'value.chargingID', ratingGroup: 'value.recordType' },
    });
    const pgw = cases[7]!.record as { value: { servedIMSI: string; chargingID: number; listOfServiceData: Record<string, unknown>[] } };
    const out = await decodeUnit(d, encoded[7]!);
    expect(out.errors).toEqual([]);
    expect(pgw.value.listOfServiceData).toHaveLength(4);
    expect(out.records).toEqual(pgw.value.listOfServiceData.map((c) => ({ imsi: pgw.value.servedIMSI, chargingID: pgw.value.chargingID, ...c })));
    // A record without the list (an SMS record) yields nothing; a path to a non-list is an error.
    expect((await decodeUnit(d, encoded[8]!)).records).toEqual([]);
    const d2 = decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord', split_path: 'value.duration' });
    expect((await decodeUnit(d2, encoded[7]!)).errors[0]!.message).toMatch(/split_path 'value.duration' leads to a number, not a list/);
  });
});

describe('asn1 PER, UPER, XER, JER documents', () => {
  const vectors = JSON.parse(readFileSync(join(FIX, 'vectors.json'), 'utf8')) as Record<string, Record<string, string[]>>;
  const cdr = vectors['ChargingRecords.CallEventRecord']!;

  it.each(['per', 'uper'] as const)('decodes one %s document per unit (Erlang/OTP vectors), split_path too', async (encoding) => {
    const d = decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord', encoding });
    for (const i of [0, 1, 2]) expect((await decodeUnit(d, Buffer.from(cdr[encoding]![i]!, 'hex'))).records).toEqual([cases[i]!.record]);
    const ds = decoderOf(asn1, {
      schema_file: CDR_DIR,
      message_class: 'CallEventRecord',
      encoding,
      split_path: 'value.listOfServiceData',
      split_path_context: { imsi: 'value.servedIMSI' },
    });
    const pgw = cases[7]!.record as { value: { servedIMSI: string; listOfServiceData: Record<string, unknown>[] } };
    expect((await decodeUnit(ds, Buffer.from(cdr[encoding]![7]!, 'hex'))).records).toEqual(
      pgw.value.listOfServiceData.map((c) => ({ imsi: pgw.value.servedIMSI, ...c })),
    );
  });

  it('decodes JER and XER documents, and reports a bad one as a parse error with its bytes', async () => {
    const jer = decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord', encoding: 'jer' });
    expect((await decodeUnit(jer, cdr.jer![4]!)).records).toEqual([cases[4]!.record]);
    const xer = decoderOf(asn1, { schema_file: CDR_DIR, message_class: 'CallEventRecord', encoding: 'xer' });
    const [x] = asn1cEncode(CDR_DIR, 'CallEventRecord', 'xer', [cases[5]!.xer]);
    expect((await decodeUnit(xer, randomStream(x!, rng(3), 9))).records).toEqual([cases[5]!.record]);
    const bad = await decodeUnit(xer, '<CallEventRecord><smsRecord><recordType>x</recordType></smsRecord></CallEventRecord>');
    expect(bad.records).toEqual([]);
    expect(bad.errors).toEqual([{ message: "ASN.1 XER document: line 1 <recordType>: 'x' is not an INTEGER", raw: expect.any(Buffer) }]);
  });

  it('tries message_classes in order for whole documents', async () => {
    const d = decoderOf(asn1, { schema_file: CDR_DIR, message_classes: ['SMSRecord', 'CallEventRecord'], encoding: 'jer' });
    expect((await decodeUnit(d, cdr.jer![2]!)).records).toEqual([cases[2]!.record]);
  });
});

describe('asn1 lint', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-asn1-lint-'));
  const lint = (fields: Record<string, unknown>) => {
    const yaml = `version: "1"
pipeline:
  name: t
  schedule: { type: manual }
  source: { type: local, path: /in }
  serializer_in: ${JSON.stringify({ type: 'asn1', ...fields })}
  serializer_out: { type: json }
  sinks: [{ type: local, path: /out }]
`;
    return loadPipelineText(yaml, { env: {} }).diagnostics.map((x) => `${x.path}: ${x.message}`);
  };

  it('names file, line and token of a module that does not parse', () => {
    const f = join(dir, 'Bad.asn');
    writeFileSync(f, 'Bad DEFINITIONS ::= BEGIN\nA ::= SEQUENCE {\n  a INTEGER\n  b BOOLEAN\n}\nEND\n');
    expect(lint({ schema_file: f, message_class: 'A' })).toEqual([`pipeline.serializer_in.schema_file: ${f}:4:3: expected ',' or '}' (at 'b')`]);
  });

  it('lists the known types for an unknown message class', () => {
    const [msg] = lint({ schema_file: CDR_DIR, message_class: 'CallRecord' });
    expect(msg).toMatch(/^pipeline\.serializer_in\.message_class: unknown message class 'CallRecord'; known types: .*CallEventRecord.*SGWRecord/);
  });

  it('names a missing imported module, and an undefined type with its file and line', () => {
    const f = join(dir, 'Imp.asn');
    writeFileSync(
      f,
      'Imp DEFINITIONS IMPLICIT TAGS ::= BEGIN\nIMPORTS IMSI FROM GenericChargingDataTypes;\nR ::= SEQUENCE { imsi [0] IMSI, x [1] Missing }\nEND\n',
    );
    expect(lint({ schema_file: f, message_class: 'R' })[0]).toMatch(
      /Imp\.asn:2: module 'Imp' imports from module 'GenericChargingDataTypes', which is not in the schema files/,
    );
    writeFileSync(f, 'Imp DEFINITIONS IMPLICIT TAGS ::= BEGIN\nR ::= SEQUENCE {\n imsi [0] OCTET STRING,\n x [1] Missing }\nEND\n');
    expect(lint({ schema_file: f, message_class: 'R' })[0]).toMatch(/Imp\.asn:4: type 'Missing' is not defined in module 'Imp' nor imported into it/);
  });

  it('checks the option combinations', () => {
    expect(lint({ schema_file: CDR_DIR })).toEqual(['pipeline.serializer_in.message_class: set exactly one of message_class and message_classes']);
    expect(lint({ schema_file: CDR_DIR, message_class: 'CallEventRecord', message_classes: ['SGWRecord'] })).toHaveLength(1);
    expect(lint({ schema_file: CDR_DIR, message_class: 'CallEventRecord', encoding: 'xer', split_records: true })).toEqual([
      'pipeline.serializer_in.split_records: split_records applies to ber and der only, not xer',
    ]);
    expect(lint({ schema_file: CDR_DIR, message_class: 'CallEventRecord', split_records: true, split_path: 'a' })).toEqual([
      'pipeline.serializer_in.split_path: split_path and split_records exclude each other',
    ]);
    expect(lint({ schema_file: CDR_DIR, message_class: 'CallEventRecord', split_path_context: { a: 'b' } })).toEqual([
      'pipeline.serializer_in.split_path_context: split_path_context needs split_path',
    ]);
    expect(lint({ schema_file: CDR_DIR, message_class: 'CallEventRecord', split_records: true })).toEqual([]);
  });
});
