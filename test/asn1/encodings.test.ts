// PER (aligned), UPER, JER and XER against independent encoders: vectors made by Erlang/OTP's asn1
// compiler (fixtures/vectors.json, see fixtures/make-vectors.ts), and asn1c's uper_encode and
// xer_encode run live.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeDocument } from '../../src/asn1/documents.js';
import { loadSchema } from '../../src/asn1/load.js';
import type { Rec } from '../../src/plugins/types.js';
import { asn1cEncode, asn1cEncoder } from './asn1c.js';
import { CDR_DIR, cdrCase } from './cdr-data.js';
import { perCases } from './per-data.js';

const FIX = join(import.meta.dirname, 'fixtures');
const vectors = JSON.parse(readFileSync(join(FIX, 'vectors.json'), 'utf8')) as Record<string, Record<'per' | 'uper' | 'jer', (string | null)[]>>;

/** Everything from everything.xer after asn1c's DER (GeneralizedTime in UTC) and Erlang. */
const everything: Rec = {
  small: 5,
  big: '9007199254740993',
  neg: -129,
  ratio: 1.5,
  flag: true,
  nothing: null,
  bits: '1011',
  flags: ['alpha', 'gamma'],
  oid: '1.3.6.1.4.1.9',
  utf: 'héllo ✓',
  ia5: 'abc',
  bmp: 'Ωmega',
  utc: '2023-11-05T12:30:45Z',
  gen: '2023-11-05T11:30:45.123Z',
  color: 'green',
  list: [1, -2, 300],
  names: ['x', 'y'],
  pick: { type: 's', value: 'hi' },
  dflt: 7,
};

type Enc = 'per' | 'uper' | 'jer';
const suites: { key: string; schema: string; type: string; encodings: Enc[]; expected: (i: number) => Rec }[] = [
  { key: 'ChargingRecords.CallEventRecord', schema: CDR_DIR, type: 'CallEventRecord', encodings: ['per', 'uper', 'jer'], expected: (i) => cdrCase(i).record },
  { key: 'PerTypes.Constrained', schema: FIX, type: 'Constrained', encodings: ['per', 'uper', 'jer'], expected: (i) => perCases[i]!.record },
  // OTP's JER cannot encode this one (REAL / BMPString): PER and UPER only.
  { key: 'TestTypes.Everything', schema: FIX, type: 'Everything', encodings: ['per', 'uper'], expected: () => everything },
];

const decode = (schema: string, type: string, enc: 'per' | 'uper' | 'jer' | 'xer', data: Buffer) =>
  decodeDocument(enc, [{ name: type, type: loadSchema(schema).type(type) }], data);

describe.each(suites)('$key', ({ key, schema, type, encodings, expected }) => {
  for (const enc of encodings) {
    it(`decodes Erlang/OTP ${enc.toUpperCase()} encodings`, () => {
      const list = vectors[key]![enc];
      let n = 0;
      list.forEach((v, i) => {
        if (v === null) return; // OTP could not encode this value in these rules
        const data = enc === 'jer' ? Buffer.from(v, 'utf8') : Buffer.from(v, 'hex');
        expect(decode(schema, type, enc, data), `${key} #${i}`).toEqual(expected(i));
        n++;
      });
      expect(n).toBeGreaterThan(0);
    });
  }
});

describe('asn1c encodings', () => {
  // Building the asn1c encoders can take a while when the temp-directory cache is cold.
  beforeAll(() => void [FIX, CDR_DIR].map(asn1cEncoder), 180_000);

  // asn1c 0.9.28 has no PER for SET (so no charging records here) and encodes the members of a
  // [[ ]] group as separate additions (so only the value without extension additions).
  it('decodes asn1c UPER of constrained types, a recursive type and a SEQUENCE with extension marker', () => {
    const [constrained] = asn1cEncode(FIX, 'Constrained', 'uper', [perCases[1]!.xer]);
    expect(decode(FIX, 'Constrained', 'uper', constrained!)).toEqual(perCases[1]!.record);
    const [tree] = asn1cEncode(FIX, 'Tree', 'uper', ['<Tree><value>1</value><children><Tree><value>-300</value><children/></Tree></children></Tree>']);
    expect(decode(FIX, 'Tree', 'uper', tree!)).toEqual({ value: 1, children: [{ value: -300, children: [] }] });
    const inner = asn1cEncode(FIX, 'Inner', 'uper', ['<Inner><x>-42</x><y>FF</y></Inner>', '<Inner><x>100</x></Inner>']);
    expect(inner.map((b) => decode(FIX, 'Inner', 'uper', b))).toEqual([{ x: -42, y: 'ff' }, { x: 100 }]);
    const cosc =
      '<ChangeOfServiceCondition><ratingGroup>10</ratingGroup><serviceConditionChange>0000100001</serviceConditionChange><timeOfReport>2311051330452B0100</timeOfReport></ChangeOfServiceCondition>';
    const [c] = asn1cEncode(CDR_DIR, 'ChangeOfServiceCondition', 'uper', [cosc]);
    expect(decode(CDR_DIR, 'ChangeOfServiceCondition', 'uper', c!)).toEqual({
      ratingGroup: 10,
      serviceConditionChange: ['pDPContextRelease', 'serviceStop'],
      timeOfReport: '2311051330452b0100',
    });
  });

  it('decodes asn1c XER (BASIC-XER, pretty-printed)', () => {
    const cdr = Array.from({ length: 9 }, (_, i) => cdrCase(i));
    asn1cEncode(
      CDR_DIR,
      'CallEventRecord',
      'xer',
      cdr.map((c) => c.xer),
    ).forEach((b, i) => expect(decode(CDR_DIR, 'CallEventRecord', 'xer', b)).toEqual(cdr[i]!.record));
    asn1cEncode(
      FIX,
      'Constrained',
      'xer',
      perCases.map((c) => c.xer),
    ).forEach((b, i) => expect(decode(FIX, 'Constrained', 'xer', b)).toEqual(perCases[i]!.record));
    const [ev] = asn1cEncode(FIX, 'Everything', 'xer', [readFileSync(join(FIX, 'everything.xer'), 'utf8')]);
    expect(decode(FIX, 'Everything', 'xer', ev!)).toEqual({ ...everything, gen: '2023-11-05T12:30:45.123+01:00', names: ['y', 'x'] });
  });

  it('reports a truncated UPER encoding and a JER document of the wrong shape', () => {
    const b = Buffer.from(vectors['ChargingRecords.CallEventRecord']!.uper[1]!, 'hex');
    expect(() => decode(CDR_DIR, 'CallEventRecord', 'uper', b.subarray(0, 20))).toThrow(/truncated/);
    expect(() => decode(CDR_DIR, 'CallEventRecord', 'jer', Buffer.from('{"pgwRecord":{"recordType":"x"}}'))).toThrow(
      /\$\.pgwRecord\.recordType: expected an integer/,
    );
  });
});
