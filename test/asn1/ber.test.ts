// BER / DER / CER decoding against independent encoders: asn1c (der_encode) and pyasn1 (BER, CER
// with indefinite lengths and segmented strings, DER).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeBer, elementEnd } from '../../src/asn1/ber.js';
import { loadSchema } from '../../src/asn1/load.js';
import { asn1cEncode, asn1cEncoder } from './asn1c.js';

const FIX = join(import.meta.dirname, 'fixtures');
const TYPES = FIX; // TestTypes, ExplicitTypes and PerTypes, compiled together
const CDR = join(import.meta.dirname, '..', '..', 'examples', 'schemas', 'cdr');

/** pyasn1-encoded values (concatenated) from fixtures/pyasn1_specs.py. */
const pyasn1 = (kind: string, codec: 'ber' | 'cer' | 'der', n: number): Buffer =>
  execFileSync('python3', [join(FIX, 'pyasn1_specs.py'), kind, codec, String(n)], { maxBuffer: 64 << 20 });

function decodeAll(typeName: string, schema: string, buf: Buffer): unknown[] {
  const t = loadSchema(schema).type(typeName);
  const out: unknown[] = [];
  for (let p = 0; p < buf.length; ) {
    const r = decodeBer(t, buf, p, buf.length);
    out.push(r.value);
    p = r.end;
  }
  return out;
}

const EVERYTHING_XER = readFileSync(join(FIX, 'everything.xer'), 'utf8');

// Building the asn1c encoders (asn1c + gcc, cached in the temp directory) can take a while when cold.
beforeAll(() => void [TYPES, CDR].map(asn1cEncoder), 180_000);

describe('BER/DER from asn1c', () => {
  it('maps every built-in type as documented (AUTOMATIC TAGS module)', () => {
    const [der] = asn1cEncode(TYPES, 'Everything', 'der', [EVERYTHING_XER]);
    expect(decodeAll('Everything', TYPES, der!)).toEqual([
      {
        small: 5,
        big: '9007199254740993', // beyond 2^53: a decimal string
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
        gen: '2023-11-05T11:30:45.123Z', // asn1c's DER writes GeneralizedTime in UTC
        color: 'green',
        list: [1, -2, 300],
        names: ['x', 'y'],
        pick: { type: 's', value: 'hi' },
        dflt: 7, // absent DEFAULT component: its default value
      },
    ]);
  });

  it('follows EXPLICIT TAGS with IMPLICIT overrides, APPLICATION and PRIVATE classes, and a tagged CHOICE', () => {
    const xer = ['<Msg><a>1</a><b>hey</b><c><y/></c><d>AB</d><e>2</e><f>3</f></Msg>', '<Msg><a>-1</a><b></b><d></d><e>0</e><f>0</f></Msg>'];
    expect(decodeAll('Msg', TYPES, Buffer.concat(asn1cEncode(TYPES, 'Msg', 'der', xer)))).toEqual([
      { a: 1, b: 'hey', c: { type: 'y', value: null }, d: 'ab', e: 2, f: 3 },
      { a: -1, b: '', d: '', e: 0, f: 0 },
    ]);
  });

  it('decodes a recursive type', () => {
    const xer =
      '<Tree><value>1</value><children><Tree><value>2</value><children></children></Tree><Tree><value>3</value><children><Tree><value>4</value><children/></Tree></children></Tree></children></Tree>';
    const [der] = asn1cEncode(TYPES, 'Tree', 'der', [xer]);
    expect(decodeAll('Tree', TYPES, der!)).toEqual([
      {
        value: 1,
        children: [
          { value: 2, children: [] },
          { value: 3, children: [{ value: 4, children: [] }] },
        ],
      },
    ]);
  });

  it('decodes a PGW charging record across imported modules (SET, nested CHOICEs, lists, named bits)', () => {
    const xer = `<CallEventRecord><pgwRecord><recordType>85</recordType><servedIMSI>21436587092143F5</servedIMSI>
<p-GWAddress><iPBinaryAddress><iPBinV4Address>0A000001</iPBinV4Address></iPBinaryAddress></p-GWAddress><chargingID>4000000000</chargingID>
<servingNodeAddress><iPBinaryAddress><iPBinV6Address>20010DB8000000000000000000000001</iPBinV6Address></iPBinaryAddress><iPTextRepresentedAddress><iPTextV4Address>10.0.0.2</iPTextV4Address></iPTextRepresentedAddress></servingNodeAddress>
<accessPointNameNI>internet</accessPointNameNI><dynamicAddressFlag><true/></dynamicAddressFlag><recordOpeningTime>2311051230452B0100</recordOpeningTime>
<duration>3600</duration><causeForRecClosing>16</causeForRecClosing>
<diagnostics><networkSpecificCause><identifier>1.2.840.113549.1</identifier><significance><true/></significance><information>CAFE</information></networkSpecificCause></diagnostics>
<apnSelectionMode><mSProvidedSubscriptionNotVerified/></apnSelectionMode><chargingCharacteristics>0800</chargingCharacteristics>
<listOfServiceData><ChangeOfServiceCondition><ratingGroup>10</ratingGroup><serviceConditionChange>0000100001</serviceConditionChange><datavolumeFBCUplink>123456789012</datavolumeFBCUplink><timeOfReport>2311051330452B0100</timeOfReport></ChangeOfServiceCondition></listOfServiceData>
<servingNodeType><gTPSGW/><mME/></servingNodeType><startTime>20231105123045.5Z</startTime><pdnConnectionChargingID>7</pdnConnectionChargingID></pgwRecord></CallEventRecord>`;
    const [der] = asn1cEncode(CDR, 'CallEventRecord', 'der', [xer]);
    expect(decodeAll('CallEventRecord', CDR, der!)).toEqual([
      {
        type: 'pgwRecord',
        value: {
          recordType: 85,
          servedIMSI: '21436587092143f5',
          'p-GWAddress': { type: 'iPBinaryAddress', value: { type: 'iPBinV4Address', value: '0a000001' } },
          chargingID: 4000000000,
          servingNodeAddress: [
            { type: 'iPBinaryAddress', value: { type: 'iPBinV6Address', value: '20010db8000000000000000000000001' } },
            { type: 'iPTextRepresentedAddress', value: { type: 'iPTextV4Address', value: '10.0.0.2' } },
          ],
          accessPointNameNI: 'internet',
          dynamicAddressFlag: true,
          recordOpeningTime: '2311051230452b0100',
          duration: 3600,
          causeForRecClosing: 16,
          diagnostics: { type: 'networkSpecificCause', value: { identifier: '1.2.840.113549.1', significance: true, information: 'cafe' } },
          apnSelectionMode: 'mSProvidedSubscriptionNotVerified',
          chargingCharacteristics: '0800',
          listOfServiceData: [
            {
              ratingGroup: 10,
              serviceConditionChange: ['pDPContextRelease', 'serviceStop'],
              datavolumeFBCUplink: 123456789012,
              timeOfReport: '2311051330452b0100',
            },
          ],
          servingNodeType: ['gTPSGW', 'mME'],
          startTime: '2023-11-05T12:30:45.5Z',
          pdnConnectionChargingID: 7,
        },
      },
    ]);
  });
});

describe('BER/CER/DER from pyasn1', () => {
  const expected = (i: number) => ({
    small: i,
    big: (2n ** 64n + BigInt(i)).toString(),
    neg: -129 - i,
    ratio: 3 * 2 ** (-1 - i),
    flag: i % 2 === 0,
    nothing: null,
    bits: '1011',
    flags: ['alpha', 'gamma'],
    oid: `2.999.${i}`,
    utf: `héllo ✓ ${i}`,
    ia5: 'a'.repeat(i === 1 ? 1200 : 3),
    bmp: 'Ωmega',
    utc: '1999-12-31T23:59:59Z',
    gen: '2023-11-05T12:30:45.5Z',
    color: 'blue',
    list: [1, -2, 300 + i],
    names: ['x', 'yy'],
    pick: { type: 'n', value: -i === 0 ? 0 : -i },
    ...(i % 2 ? { opt: 42 } : {}),
    dflt: 7,
  });

  for (const codec of ['ber', 'cer', 'der'] as const) {
    it(`reads pyasn1 ${codec.toUpperCase()} (${codec === 'cer' ? 'indefinite lengths, a string in segments' : 'definite lengths'})`, () => {
      const buf = pyasn1('everything', codec, 3);
      if (codec === 'cer') expect(buf.subarray(0, 2)).toEqual(Buffer.from([0x30, 0x80]));
      expect(decodeAll('Everything', TYPES, buf)).toEqual([0, 1, 2].map(expected));
    });
  }

  it('reads CER charging records: indefinite lengths, an OCTET STRING of 2500 bytes in segments', () => {
    const buf = pyasn1('sms', 'cer', 10);
    const recs = decodeAll('CallEventRecord', CDR, buf) as { type: string; value: Record<string, unknown> }[];
    expect(recs).toHaveLength(10);
    expect(recs.every((r) => r.type === 'smsRecord')).toBe(true);
    expect(recs[7]!.value.messageReference).toBe('07'.repeat(2500));
    expect(recs[3]!.value).toEqual({
      recordType: 84,
      servedIMSI: '2143658709000003',
      servedMSISDN: '91214365f7',
      eventTimeStamp: '2311051230452b0100',
      messageReference: '0303',
      messageSize: 3,
      smsType: 'mo',
    });
    expect(recs[2]!.value.smsType).toBe('statusReport');
  });
});

describe('element boundaries', () => {
  it('finds the end of nested indefinite-length elements and asks for more bytes when cut', () => {
    const buf = pyasn1('everything', 'cer', 1);
    expect(elementEnd(buf, 0, buf.length)).toBe(buf.length);
    for (const cut of [1, 2, 10, buf.length - 2, buf.length - 1]) expect(elementEnd(buf, 0, cut)).toBe(-1);
  });

  it('rejects an invalid length and an inner element longer than its parent', () => {
    expect(() => elementEnd(Buffer.from('3085ffffffffff', 'hex'), 0, 7)).toThrow(/invalid length/);
    expect(() => elementEnd(Buffer.from('30040205010203', 'hex'), 0, 7)).toThrow(/past the end/);
  });

  it('rejects a string segment that runs past the segmented string holding it, without reading it again per level', () => {
    const msg = loadSchema(TYPES).type('Msg');
    // [APPLICATION 5] { SEQUENCE { a [0] 1, b [1] IMPLICIT IA5String in segments: the first claims 5 of the 4 bytes } }
    const bad = Buffer.from('650e300ca0030201' + '01a104' + '1605616263' + '6465', 'hex');
    expect(() => decodeBer(msg, bad, 0, bad.length)).toThrow(/segment longer than the string that holds it/);
    // Nested segments, each claiming more than its parent: found at the first level, not walked 2^depth times.
    const nested = Buffer.from('650e300ca0030201' + '01a104' + 'a17f' + 'a17f' + '0000', 'hex');
    expect(() => decodeBer(msg, nested, 0, nested.length)).toThrow(/segment longer than the string that holds it/);
  });
});
