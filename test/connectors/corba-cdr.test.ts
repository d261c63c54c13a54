// The corba connector's codecs without a peer: CDR primitives and alignment in both byte orders,
// typed values (every primitive, string, sequence, array, struct, enum, 64-bit beyond 2^53) and
// their errors, IORs (omniORB's own, big-endian, round trip) and corbaloc URLs, GIOP 1.2 framing
// (request layout, body alignment, replies, fragments reassembled, a stream cut anywhere) and
// stringified CosNaming names.
import { describe, expect, it } from 'vitest';
import { CdrError, CdrReader, CdrWriter, decodeValue, encodeValue, parseType, TypeDescError } from '../../src/plugins/connectors/corba/cdr.js';
import {
  decodeReply,
  encodeLocateRequest,
  encodeRequest,
  GiopError,
  GiopFramer,
  HEADER_SIZE,
  MSG,
  readHeader,
} from '../../src/plugins/connectors/corba/giop.js';
import { iorString, parseCorbaloc, parseIor, parseObjectUrl, writeIor, type ObjectRef } from '../../src/plugins/connectors/corba/ior.js';
import { parseName } from '../../src/plugins/connectors/corba/naming.js';
import { recordMessages } from '../../src/plugins/connectors/corba/source.js';

// omniNames 4.3's root context, as it printed it (IIOP 1.2, code-set and ORB-type components).
const OMNI_NS_IOR =
  'IOR:010000002b00000049444c3a6f6d672e6f72672f436f734e616d696e672f4e616d696e67436f6e746578744578743a312e30000001000000000000006c000000010102000a0000003132372e302e302e3100cf6d0b0000004e616d6553657276696365000300000000000000080000000100000000545441010000001c0000000100000001000100010000000100010509010100010000000901010003545441080000006dae086b0100444b';

describe('CDR primitives', () => {
  for (const le of [true, false]) {
    it(`aligns each primitive on its size from the stream start (${le ? 'little' : 'big'}-endian)`, () => {
      const w = new CdrWriter(le);
      w.octet(0xab);
      w.short(-2); // at 2
      w.long(0x01020304); // at 4
      w.octet(1);
      w.double(1.5); // at 16
      w.boolean(true);
      w.longlong(-(2n ** 63n)); // at 32
      w.ushort(0xfffe);
      w.float(0.25); // at 44
      w.ulonglong(2n ** 64n - 1n); // at 48
      w.string('hé'); // length at 56: 4 (h, é in two bytes, NUL)
      const b = w.bytes();
      expect(b.length).toBe(64);
      expect(b.subarray(1, 2)).toEqual(Buffer.from([0])); // padding is zero
      expect(b.subarray(4, 8)).toEqual(Buffer.from(le ? [4, 3, 2, 1] : [1, 2, 3, 4]));
      expect(b.subarray(56, 64)).toEqual(Buffer.from(le ? [4, 0, 0, 0, 0x68, 0xc3, 0xa9, 0] : [0, 0, 0, 4, 0x68, 0xc3, 0xa9, 0]));
      const r = new CdrReader(b, le);
      expect([r.octet(), r.short(), r.long(), r.octet(), r.double(), r.boolean(), r.longlong(), r.ushort(), r.float(), r.ulonglong(), r.string()]).toEqual([
        0xab,
        -2,
        0x01020304,
        1,
        1.5,
        true,
        -(2n ** 63n),
        0xfffe,
        0.25,
        2n ** 64n - 1n,
        'hé',
      ]);
      expect(r.remaining).toBe(0);
    });

    it(`aligns an encapsulation from its own byte-order octet (${le ? 'little' : 'big'}-endian)`, () => {
      const w = new CdrWriter(true);
      w.octet(7);
      w.encapsulation((e) => e.long(5), le);
      const b = w.bytes();
      // octet, pad to 4, length 8, then [order, pad x3, long]
      expect(b.readUInt32LE(4)).toBe(8);
      const enc = b.subarray(8);
      expect(enc[0]).toBe(le ? 1 : 0);
      const r = CdrReader.encapsulation(enc);
      expect(r.littleEndian).toBe(le);
      expect(r.long()).toBe(5);
    });
  }

  it('reads alignment relative to a start offset inside a buffer', () => {
    const b = Buffer.from([9, 9, 9, 0xff, 0, 0, 0, 42, 0, 0, 0]);
    const r = new CdrReader(b, true, 3);
    expect(r.octet()).toBe(0xff);
    expect(r.long()).toBe(42);
  });

  it('truncated data and impossible lengths are CdrErrors', () => {
    expect(() => new CdrReader(Buffer.from([1, 0]), true).long()).toThrow(CdrError);
    const w = new CdrWriter();
    w.ulong(1_000_000);
    expect(() => new CdrReader(w.bytes(), true).seqLength(1)).toThrow(/does not fit/);
    const s = new CdrWriter();
    s.ulong(3);
    s.raw(Buffer.from('abc'));
    expect(() => new CdrReader(s.bytes(), true).string()).toThrow(/not NUL-terminated/);
  });
});

describe('typed values', () => {
  const sample = parseType({
    struct: {
      flag: 'boolean',
      o: 'octet',
      c: 'char',
      s: 'short',
      us: 'unsigned short',
      l: 'long',
      ul: 'unsigned long',
      ll: 'long long',
      ull: 'unsigned long long',
      f: 'float',
      d: 'double',
      str: 'string',
      e: { enum: ['A', 'B', 'C'] },
      seq: { sequence: { struct: { name: 'string', v: 'int64' } } },
      arr: { array: 'short', length: 3 },
      j: 'json',
    },
  });
  const value = {
    flag: false,
    o: 0,
    c: 'Q',
    s: 32767,
    us: 0,
    l: 2147483647,
    ul: 0,
    ll: 9007199254740991,
    ull: '9007199254740993',
    f: -0.5,
    d: 1e300,
    str: '',
    e: 'C',
    seq: [
      { name: 'x', v: '-9007199254740993' },
      { name: 'y', v: 1 },
    ],
    arr: [1, 2, 3],
    j: '{"a":1}',
  };

  for (const le of [true, false])
    it(`round-trips every kind of type (${le ? 'little' : 'big'}-endian), 64-bit beyond 2^53 as exact strings`, () => {
      const w = new CdrWriter(le);
      w.octet(1); // misalign on purpose
      encodeValue(w, sample, value);
      const r = new CdrReader(w.bytes(), le);
      r.octet();
      expect(decodeValue(r, sample)).toEqual(value);
      expect(r.remaining).toBe(0);
    });

  it('names the path of a value that does not fit its type', () => {
    const t = parseType({ sequence: { struct: { a: 'octet', b: { enum: ['X'] } } } });
    const err = (v: unknown) => {
      try {
        encodeValue(new CdrWriter(), t, v);
      } catch (e) {
        return `${(e as TypeDescError).path}: ${(e as Error).message}`;
      }
      return 'ok';
    };
    expect(err([{ a: 1, b: 'X' }])).toBe('ok');
    expect(
      err([
        { a: 1, b: 'X' },
        { a: 256, b: 'X' },
      ]),
    ).toBe('value.1.a: octet needs an integer from 0 to 255');
    expect(err([{ a: 1, b: 'Y' }])).toBe("value.0.b: 'Y' is not one of X");
    expect(err([{ a: 1 }])).toBe("value.0: missing field 'b'");
    expect(err([{ a: 1, b: 'X', z: 1 }])).toBe("value.0: unknown field 'z'");
    expect(err({})).toBe('value: a sequence needs a list');
    expect(() => encodeValue(new CdrWriter(), parseType('longlong'), 1.5)).toThrow(/needs an integer/);
    expect(() => encodeValue(new CdrWriter(), parseType('ulonglong'), '-1')).toThrow(/out of range/);
    expect(() => encodeValue(new CdrWriter(), parseType('string'), 'a\0b')).toThrow(/NUL/);
    expect(() => encodeValue(new CdrWriter(), parseType({ array: 'long', length: 2 }), [1])).toThrow(/exactly 2/);
  });

  it('rejects unknown type descriptions with their path', () => {
    const path = (d: unknown) => {
      try {
        parseType(d);
      } catch (e) {
        return (e as TypeDescError).path;
      }
      return 'ok';
    };
    expect(path('wstring')).toBe('');
    expect(path({ sequence: { struct: { a: 'long', b: 'bad' } } })).toBe('sequence.struct.b');
    expect(path({ struct: {} })).toBe('');
    expect(path({ sequence: 'void' })).toBe('sequence');
    expect(path({ enum: [] })).toBe('');
    expect(path({ tuple: 1 })).toBe('');
  });

  it('turns a reply into one JSON message per record', () => {
    const text = (t: unknown, v: unknown) => recordMessages(v, parseType(t)).map(String);
    expect(text({ sequence: { struct: { a: 'long' } } }, [{ a: 1 }, { a: 2 }])).toEqual(['{"a":1}', '{"a":2}']);
    expect(text({ sequence: 'json' }, ['{"seq":1}', '<x/>'])).toEqual(['{"seq":1}', '<x/>']);
    expect(text({ sequence: 'long' }, [5])).toEqual(['{"result":5}']);
    expect(text({ struct: { a: 'long' } }, { a: 1 })).toEqual(['{"a":1}']);
    expect(text('ulonglong', '18446744073709551615')).toEqual(['{"result":"18446744073709551615"}']);
    expect(text('void', undefined)).toEqual([]);
  });
});

describe('IOR and corbaloc', () => {
  it("parses omniORB's IOR: type id, IIOP 1.2 host, port and object key (components skipped)", () => {
    const ref = parseIor(OMNI_NS_IOR);
    expect(ref.typeId).toBe('IDL:omg.org/CosNaming/NamingContextExt:1.0');
    expect(ref.profiles).toHaveLength(1);
    expect(ref.profiles[0]).toMatchObject({ host: '127.0.0.1', port: 28111, major: 1, minor: 2 });
    expect(ref.profiles[0]!.key.toString()).toBe('NameService');
  });

  it('parses a big-endian IOR and round-trips through iorString', () => {
    const ref: ObjectRef = {
      typeId: 'IDL:Svc/Pm:1.0',
      profiles: [{ host: 'ems.example', port: 65535, key: Buffer.from([0, 1, 2, 0xff]), major: 1, minor: 2 }],
    };
    const w = new CdrWriter(false);
    w.octet(0);
    writeIor(w, ref);
    const be = parseIor(`IOR:${w.bytes().toString('hex').toUpperCase()}`);
    expect(be).toEqual(ref);
    expect(parseIor(iorString(ref))).toEqual(ref);
  });

  it('rejects IORs that are not hex, do not decode or have no IIOP profile', () => {
    expect(() => parseIor('IOR:abc')).toThrow(/even number of hex digits/);
    expect(() => parseIor('IOR:0100000010000000')).toThrow(/does not decode/);
    expect(() => parseIor(iorString({ typeId: 'IDL:X:1.0', profiles: [] }))).toThrow(/no IIOP profile/);
  });

  it('parses corbaloc forms: iiop and the empty protocol, default port, version, IPv6, several addresses, %-escapes', () => {
    expect(parseCorbaloc('corbaloc:iiop:127.0.0.1:2809/NameService').profiles).toEqual([
      { host: '127.0.0.1', port: 2809, key: Buffer.from('NameService'), major: 1, minor: 0 },
    ]);
    expect(parseCorbaloc('corbaloc::ems/Key').profiles[0]).toMatchObject({ host: 'ems', port: 2809 });
    expect(parseCorbaloc('corbaloc:iiop:1.2@h:1/k').profiles[0]).toMatchObject({ major: 1, minor: 2, port: 1 });
    expect(parseCorbaloc('corbaloc:iiop:[::1]:2900/k').profiles[0]).toMatchObject({ host: '::1', port: 2900 });
    expect(parseCorbaloc('corbaloc:iiop:a:1,:b:2/k').profiles.map((p) => `${p.host}:${p.port}`)).toEqual(['a:1', 'b:2']);
    expect(parseCorbaloc('corbaloc:iiop:h:1/a%2Fb%00').profiles[0]!.key).toEqual(Buffer.from([0x61, 0x2f, 0x62, 0]));
    expect(parseObjectUrl(' corbaloc::h/k ').profiles).toHaveLength(1);
  });

  it('rejects corbaloc URLs it cannot use, saying why', () => {
    expect(() => parseCorbaloc('corbaloc:iiop:h:1')).toThrow(/needs "\/<object key>"/);
    expect(() => parseCorbaloc('corbaloc:rir:/NameService')).toThrow(/rir/);
    expect(() => parseCorbaloc('corbaloc:iiop:h:99999/k')).toThrow(/bad port/);
    expect(() => parseCorbaloc('corbaloc:iiop::1/k')).toThrow(/no host/);
    expect(() => parseCorbaloc('corbaloc:iiop:h:1/%zz')).toThrow(/%-escape/);
    expect(() => parseObjectUrl('http://h/x')).toThrow(/IOR .* or a corbaloc URL/);
  });
});

describe('GIOP 1.2 framing', () => {
  for (const le of [true, false])
    it(`lays out a Request: header, RequestHeader_1_2 with KeyAddr, body on an 8-byte boundary (${le ? 'little' : 'big'}-endian)`, () => {
      const m = encodeRequest({ requestId: 7, key: Buffer.from('key'), operation: 'add', body: (w) => w.long(5), littleEndian: le });
      const h = readHeader(m);
      expect(h).toEqual({ major: 1, minor: 2, littleEndian: le, more: false, type: MSG.Request, size: m.length - HEADER_SIZE });
      expect(m.toString('latin1', 0, 4)).toBe('GIOP');
      const r = new CdrReader(m, le);
      r.pos = 12;
      expect(r.ulong()).toBe(7); // request_id
      expect(r.octet()).toBe(3); // response_flags: reply expected
      expect([...r.raw(3)]).toEqual([0, 0, 0]); // reserved
      expect(r.short()).toBe(0); // TargetAddress KeyAddr
      expect(r.octets().toString()).toBe('key');
      expect(r.string()).toBe('add');
      expect(r.ulong()).toBe(0); // no service contexts
      r.align(8);
      expect(r.pos % 8).toBe(0);
      expect(r.long()).toBe(5);
      expect(r.remaining).toBe(0);
    });

  it('adds no padding after the header when there are no arguments', () => {
    const m = encodeRequest({ requestId: 1, key: Buffer.from('k'), operation: 'ab', body: () => {} });
    // 12 header + 4 id + 4 flags/reserved + 2 disc + 2 pad + 4 + 1 key + 3 pad + 4 + 3 op + 1 pad + 4 contexts = 44
    expect(m.length).toBe(44);
    expect(readHeader(m).size).toBe(32);
  });

  it('lays out a LocateRequest', () => {
    const m = encodeLocateRequest(9, Buffer.from('abc'), false);
    const r = new CdrReader(m, false);
    r.pos = 12;
    expect([readHeader(m).type, r.ulong(), r.short(), r.octets().toString()]).toEqual([MSG.LocateRequest, 9, 0, 'abc']);
  });

  /** A Reply 1.2 carrying `body` (aligned to 8). */
  function reply(id: number, status: number, body: (w: CdrWriter) => void, le = true): Buffer {
    const w = new CdrWriter(le);
    w.raw(Buffer.from('GIOP'));
    w.octet(1);
    w.octet(2);
    w.octet(le ? 1 : 0);
    w.octet(MSG.Reply);
    w.ulong(0);
    w.ulong(id);
    w.ulong(status);
    w.ulong(1); // one service context
    w.ulong(99);
    w.octets(Buffer.from([1, 2, 3]));
    w.align(8);
    body(w);
    w.patchUlong(8, w.pos - 12);
    return Buffer.from(w.bytes());
  }

  for (const le of [true, false])
    it(`decodes a Reply's header and positions the body on its 8-byte boundary (${le ? 'little' : 'big'}-endian)`, () => {
      const r = decodeReply(
        reply(
          5,
          2,
          (w) => {
            w.string('IDL:omg.org/CORBA/BAD_OPERATION:1.0');
            w.ulong(0x41540026);
            w.ulong(1);
          },
          le,
        ),
      );
      expect(r.requestId).toBe(5);
      expect(r.status).toBe('SYSTEM_EXCEPTION');
      expect(r.contexts).toEqual([{ id: 99, data: Buffer.from([1, 2, 3]) }]);
      expect(r.body.pos % 8).toBe(0);
      expect(r.body.string()).toBe('IDL:omg.org/CORBA/BAD_OPERATION:1.0');
    });

  it('cuts a byte stream into messages wherever the chunks end', () => {
    const a = reply(1, 0, (w) => w.string('one'));
    const b = reply(2, 0, (w) => w.string('two'), false);
    const all = Buffer.concat([a, b]);
    const f = new GiopFramer();
    const out: Buffer[] = [];
    for (let i = 0; i < all.length; i++) out.push(...f.push(all.subarray(i, i + 1)));
    expect(out.map((m) => decodeReply(m).body.string())).toEqual(['one', 'two']);
  });

  it('joins a fragmented Reply (GIOP 1.2 Fragment messages with its request id) into one message', () => {
    const whole = reply(3, 0, (w) => {
      w.ulong(40);
      for (let i = 0; i < 40; i++) w.string(`element-${i}`);
    });
    // First fragment: the header and 64 body bytes (a multiple of 8); the rest in two Fragments.
    const cut1 = 12 + 64;
    const cut2 = cut1 + 200;
    const first = Buffer.from(whole.subarray(0, cut1));
    first[6] = first[6]! | 2;
    first.writeUInt32LE(cut1 - 12, 8);
    const frag = (data: Buffer, more: boolean) => {
      const h = Buffer.alloc(16);
      h.write('GIOP', 0, 'latin1');
      h[4] = 1;
      h[5] = 2;
      h[6] = 1 | (more ? 2 : 0);
      h[7] = MSG.Fragment;
      h.writeUInt32LE(4 + data.length, 8);
      h.writeUInt32LE(3, 12);
      return Buffer.concat([h, data]);
    };
    const f = new GiopFramer();
    expect(f.push(first)).toEqual([]);
    expect(f.push(frag(whole.subarray(cut1, cut2), true))).toEqual([]);
    // A fragment of an unknown request is ignored.
    const stray = frag(Buffer.alloc(8), false);
    stray.writeUInt32LE(77, 12);
    expect(f.push(stray)).toEqual([]);
    const [joined] = f.push(frag(whole.subarray(cut2), false));
    expect(joined).toEqual(whole);
    const r = decodeReply(joined!);
    const n = r.body.ulong();
    const items = Array.from({ length: n }, () => r.body.string());
    expect(items.at(-1)).toBe('element-39');
  });

  it('refuses a stream that is not GIOP', () => {
    expect(() => new GiopFramer().push(Buffer.from('HTTP/1.1 400 Bad Request\r\n'))).toThrow(GiopError);
    expect(() => new GiopFramer().push(Buffer.from('HTTP/1.1 400 Bad Request\r\n'))).toThrow(/is this port an IIOP endpoint/);
  });
});

describe('stringified names', () => {
  it('splits components on / and id from kind on ., with \\ escapes', () => {
    expect(parseName('a.kind/b')).toEqual([
      { id: 'a', kind: 'kind' },
      { id: 'b', kind: '' },
    ]);
    expect(parseName('x\\.y.z')).toEqual([{ id: 'x.y', kind: 'z' }]);
    expect(parseName('a\\/b')).toEqual([{ id: 'a/b', kind: '' }]);
    expect(parseName('.')).toEqual([{ id: '', kind: '' }]);
    expect(parseName('.k')).toEqual([{ id: '', kind: 'k' }]);
  });

  it('rejects empty components, doubled dots and a lone backslash', () => {
    expect(() => parseName('')).toThrow(/empty/);
    expect(() => parseName('a//b')).toThrow(/empty component/);
    expect(() => parseName('a.b.c')).toThrow(/more than one unescaped/);
    expect(() => parseName('a\\')).toThrow(/lone/);
  });
});
