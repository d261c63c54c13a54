import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { chunksOf } from '../../../src/engine/chunker.js';
import { buildPlan } from '../../../src/engine/plan.js';
import { registry } from '../../../src/plugins/registry.js';
import { processChunk } from '../../../src/engine/process-chunk.js';
import xml from '../../../src/plugins/serializers/xml/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, once, pipelineWith, pyJson, randInt, randomStream, rng } from './helpers.js';
import { LINEAR_64_READS, readsOf, workOf } from '../../helpers/pending-work.js';

/**
 * Python maps an element tree to records by the documented rules, independently of our code:
 * attributes `@name`, children as fields (repeated -> list), leaf text as the value, text beside
 * children as `#text` (whitespace-only text dropped), an empty record {}.
 */
const PY_MAPPING = `
import xml.etree.ElementTree as ET, json, sys, base64, random
WS = " \\t\\r\\n"
def conv(e):
    d = {}
    for k, v in e.attrib.items():
        d["@" + k] = v
    kids = list(e)
    order, groups = [], {}
    for c in kids:
        if c.tag not in groups:
            order.append(c.tag); groups[c.tag] = []
        groups[c.tag].append(conv(c))
    for t in order:
        d[t] = groups[t][0] if len(groups[t]) == 1 else groups[t]
    texts = [s for s in [e.text or ""] + [c.tail or "" for c in kids] if s.strip(WS)]
    if not kids and not e.attrib:
        return "".join(texts)
    if texts:
        d["#text"] = "".join(texts)
    return d
def record(e):
    v = conv(e)
    return ({} if v == "" else {"#text": v}) if isinstance(v, str) else v
`;

interface PyDoc {
  b64: string;
  records: Rec[];
}

/** Python builds a document of tricky records (ElementTree), serializes it and maps it back. */
function pythonDoc(
  seed: number,
  opts: { records?: number; encoding?: string; root?: string; record?: string; indent?: boolean } = {},
): { bytes: Buffer; records: Rec[] } {
  const code = `${PY_MAPPING}
a = json.loads(sys.stdin.read())
r = random.Random(a["seed"])
alphabet = ["a", "Z", "7", " ", "ü", "é", "東", "😀", "&", "<", ">", '"', "'", "\\n", "x y", "]]>", "\\t", "&amp;", "--"]
if a["encoding"] != "utf-8":
    alphabet = [c for c in alphabet if c not in ("東", "😀")] if a["encoding"] == "iso-8859-1" else alphabet
names = ["host", "ifDescr", "naïve", "x-y", "a.b", "_u", "Zürich"] + (["東京"] if a["encoding"] != "iso-8859-1" else [])
val = lambda: "v" + "".join(r.choice(alphabet) for _ in range(r.randint(0, 8)))
root = ET.Element(a["root"])
for i in range(a["records"]):
    rec = ET.SubElement(root, a["record"])
    if r.random() < 0.5:
        rec.set("id", str(i))
    if r.random() < 0.3:
        rec.set("note", val())
    ET.SubElement(rec, "n").text = str(i)
    for _ in range(r.randint(0, 5)):
        f = ET.SubElement(rec, r.choice(names))
        k = r.random()
        if k < 0.6:
            f.text = val()
        elif k < 0.8:
            for _ in range(r.randint(1, 3)):
                ET.SubElement(f, r.choice(["x", "y"])).text = val()
        else:
            f.set("unit", val())
            if r.random() < 0.5:
                f.text = val()
    if r.random() < 0.1:
        rec.clear()
if a["indent"]:
    ET.indent(root)
if a["encoding"] == "utf-16-be":
    # expat reads no UTF-16BE: Python's own text, encoded by Python's codec, gives the same records.
    text = ET.tostring(root, encoding="unicode")
    data = ('<?xml version="1.0" encoding="UTF-16BE"?>\\n' + text).encode("utf-16-be")
    parsed = ET.fromstring(text)
else:
    data = ET.tostring(root, encoding=a["encoding"], xml_declaration=True)
    parsed = ET.fromstring(data)
print(json.dumps({"b64": base64.b64encode(data).decode(), "records": [record(e) for e in parsed if e.tag == a["record"]]}))
`;
  const out = pyJson<PyDoc>(
    code,
    JSON.stringify({
      seed,
      records: opts.records ?? 40,
      encoding: opts.encoding ?? 'utf-8',
      root: opts.root ?? 'records',
      record: opts.record ?? 'record',
      indent: opts.indent ?? false,
    }),
  );
  return { bytes: Buffer.from(out.b64, 'base64'), records: out.records };
}

/** Python's reading of bytes we wrote: the root's tag and the mapped records (any parse error is thrown). */
const pyParse = (bytes: Buffer | string) =>
  pyJson<{ root: string; records: Rec[]; tags: string[] }>(
    `${PY_MAPPING}
root = ET.fromstring(sys.stdin.buffer.read())
print(json.dumps({"root": root.tag, "tags": [e.tag for e in root], "records": [record(e) for e in root]}))`,
    Buffer.from(bytes),
  );

const decodeXml = (text: string | Buffer, partial: Record<string, unknown> = {}, targetBytes?: number) =>
  decodeUnit(decoderOf(xml, partial), Buffer.from(text), { targetBytes });

describe('xml serializer: configuration', () => {
  it('defaults: root_element records, record_element record, encoding utf-8; split framing', () => {
    expect(cfgOf(xml)).toEqual({ root_element: 'records', record_element: 'record', encoding: 'utf-8' });
    expect(loadedSerializers('{type: xml}').input).toEqual({ type: 'xml', root_element: 'records', record_element: 'record', encoding: 'utf-8' });
    expect(decoderOf(xml).framing.kind).toBe('split');
    expect(encoderOf(xml).extension).toBe('xml');
    expect(Value.Check(xml.config, { ...cfgOf(xml), record_element: '' })).toBe(false);
  });

  it('lint: element names must be XML names, the encoding must be known', () => {
    expect(xml.lint!(cfgOf(xml, { root_element: 'pm:data', record_element: 'measValue' }))).toEqual([]);
    expect(xml.lint!(cfgOf(xml, { root_element: '1abc', record_element: 'a b' })).map((i) => i.path)).toEqual(['root_element', 'record_element']);
    expect(xml.lint!(cfgOf(xml, { encoding: 'klingon' })).map((i) => i.path)).toEqual(['encoding']);
    expect(() => loadedSerializers('{type: xml, record_element: "<x>"}')).toThrow(/record_element.*not an XML element name/);
  });
});

describe('xml serializer: decode', () => {
  it('attributes as @name, nested elements as objects, repeated elements as lists, values as strings', async () => {
    const { records, errors, notes } = await decodeXml(`<?xml version="1.0"?>
<!-- a comment -->
<records>
  <record id="7" kind='a "b"'>
    <host>rtr1</host>
    <if><index>1</index><counter unit="octets">42</counter></if>
    <tag>core</tag><tag>edge</tag><tag><x>1</x></tag>
    <empty/><blank></blank><spaces>   </spaces><padded>  x  </padded>
  </record>
  <record/>
  <record>only text</record>
</records>`);
    expect(errors).toEqual([]);
    expect(notes).toEqual([]);
    expect(records).toEqual([
      {
        '@id': '7',
        '@kind': 'a "b"',
        host: 'rtr1',
        if: { index: '1', counter: { '@unit': 'octets', '#text': '42' } },
        tag: ['core', 'edge', { x: '1' }],
        empty: '',
        blank: '',
        spaces: '',
        padded: '  x  ',
      },
      {},
      { '#text': 'only text' },
    ]);
  });

  it('mixed content: the text beside child elements is #text; entities, character references and CDATA are resolved', async () => {
    const { records, errors } = await decodeXml(
      '<records><record><m>hello <b>big</b> world</m><e>a&amp;b &lt;&gt; &quot;&apos; &#65;&#x42;&#x1F600;</e><c><![CDATA[<raw> & ]]></c><crlf>a\r\nb</crlf><cr>x&#13;y</cr></record></records>',
    );
    expect(errors).toEqual([]);
    expect(records).toEqual([{ m: { b: 'big', '#text': 'hello  world' }, e: 'a&b <> "\' AB😀', c: '<raw> & ', crlf: 'a\nb', cr: 'x\ry' }]);
  });

  it('namespaces: prefixes stay in the names as written, xmlns declarations are not fields', async () => {
    const { records, errors } = await decodeXml(
      '<r:records xmlns:r="urn:r" xmlns="urn:d"><r:record xmlns:x="urn:x" x:id="1"><x:v>1</x:v><plain>2</plain></r:record></r:records>',
      { record_element: 'r:record' },
    );
    expect(errors).toEqual([]);
    expect(records).toEqual([{ '@x:id': '1', 'x:v': '1', plain: '2' }]);
  });

  it('root_element and record_element: other names; any root is read; other children of the root are noted and skipped', async () => {
    const text = '<inventory><device><n>1</n></device><meta>x</meta><device><n>2</n><device>nested</device></device></inventory>';
    const { records, errors, notes } = await decodeXml(text, { root_element: 'inventory', record_element: 'device' });
    expect(errors).toEqual([]);
    expect(records).toEqual([{ n: '1' }, { n: '2', device: 'nested' }]);
    expect(notes).toEqual(['xml: elements under the root other than <device> are ignored']);
    // The root's name is not checked on read.
    expect((await decodeXml('<whatever><record><n>1</n></record></whatever>')).records).toEqual([{ n: '1' }]);
  });

  it('a document whose root is a record element is one record (what one() writes for message sinks)', async () => {
    expect((await decodeXml('<?xml version="1.0"?>\n<record a="1"><n>1</n></record>\n')).records).toEqual([{ '@a': '1', n: '1' }]);
    // Unless the root and record names are the same: then its children are the records.
    expect((await decodeXml('<item><item><n>1</n></item><item><n>2</n></item></item>', { root_element: 'item', record_element: 'item' })).records).toEqual([
      { n: '1' },
      { n: '2' },
    ]);
  });

  it('concatenated documents in one unit are all read', async () => {
    const text = '<?xml version="1.0"?><records><record><n>1</n></record></records>\n<?xml version="1.0"?>\n<records><record><n>2</n></record></records>';
    for (const targetBytes of [1, 20, 1 << 20]) expect((await decodeXml(text, {}, targetBytes)).records).toEqual([{ n: '1' }, { n: '2' }]);
  });

  it('field names in _xHHHH_ form and reserved JavaScript names are read as the names they stand for', async () => {
    const { records, errors } = await decodeXml(
      '<records><record><a_x0020_b>1</a_x0020_b><_x0031_st>2</_x0031_st><__proto__>p</__proto__><constructor>c</constructor><toString>t</toString><x y_x003A_z="3"/></record></records>',
    );
    expect(errors).toEqual([]);
    expect(records).toHaveLength(1);
    const r = records[0]!;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.keys(r).sort()).toEqual(['1st', '__proto__', 'a b', 'constructor', 'toString', 'x'].sort());
    expect([r['a b'], r['1st'], Object.getOwnPropertyDescriptor(r, '__proto__')!.value, r.constructor, r.toString, r.x]).toEqual([
      '1',
      '2',
      'p',
      'c',
      't',
      { '@y:z': '3' },
    ]);
  });

  it('decodes what Python ElementTree wrote, over many piece sizes and random read splits', async () => {
    for (const [vi, v] of [{ indent: false }, { indent: true }, { root: 'inventory', record: 'dev' }].entries()) {
      const doc = pythonDoc(10 + vi, { ...v, records: 60 });
      const partial = v.record ? { root_element: v.root, record_element: v.record } : {};
      const r = rng(vi + 1);
      for (let round = 0; round < 12; round++) {
        const targetBytes = randInt(r, 1, 3000);
        const out = await decodeUnit(decoderOf(xml, partial), randomStream(doc.bytes, r, randInt(r, 1, 50)), { targetBytes });
        const where = `variant ${vi} round ${round} targetBytes ${targetBytes}`;
        expect(out.errors, where).toEqual([]);
        expect(out.records, where).toEqual(doc.records);
      }
    }
  });

  it('encoding: Latin-1 and UTF-16 (LE with BOM, BE) documents from Python, cut at random points', async () => {
    for (const [encoding, pyEnc] of [
      ['latin1', 'iso-8859-1'],
      ['iso-8859-1', 'iso-8859-1'],
      ['utf-16le', 'utf-16'],
      ['utf-16be', 'utf-16-be'],
    ] as const) {
      // Non-ASCII element names too: compared in the input's own encoding.
      const doc = pythonDoc(3, { encoding: pyEnc, records: 30, root: 'Geräteliste', record: 'Gerät' });
      if (pyEnc === 'utf-16') expect(doc.bytes.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xfe])); // little-endian with BOM
      const r = rng(5);
      for (let round = 0; round < 6; round++) {
        const targetBytes = randInt(r, 1, 2000);
        const out = await decodeUnit(
          decoderOf(xml, { encoding, root_element: 'Geräteliste', record_element: 'Gerät' }),
          randomStream(doc.bytes, r, randInt(r, 1, 33)),
          { targetBytes },
        );
        expect(out.errors, `${encoding} ${round}`).toEqual([]);
        expect(out.records, `${encoding} ${round}`).toEqual(doc.records);
        expect(out.records.length).toBe(30);
      }
    }
  });

  it('large input is cut into bounded pieces at record boundaries, each with the root start tag as header', async () => {
    const doc = pythonDoc(21, { records: 400 });
    const targetBytes = 2048;
    const out = await decodeUnit(decoderOf(xml), randomStream(doc.bytes, rng(9), 700), { targetBytes });
    expect(out.records).toEqual(doc.records);
    expect(out.chunks.length).toBeGreaterThan(doc.bytes.length / targetBytes - 2);
    for (const c of out.chunks) {
      expect(c.header!.toString()).toBe('<records>');
      expect(c.data.length).toBeLessThan(targetBytes + 2000); // a piece ends with the record that crosses the target
      expect(c.data.toString()).toMatch(/^\s*<record[ />]/);
    }
    // record_chunk_size: at most that many records a piece.
    const capped = await decodeUnit(decoderOf(xml), doc.bytes, { targetBytes: 1 << 20, maxLines: 7 });
    expect(capped.chunks.length).toBe(Math.ceil(400 / 7));
    expect(capped.records).toEqual(doc.records);
  });

  it('a broken record is one error with its exact bytes; the records around it still decode, at any piece size', async () => {
    const good = (n: number) => `<record><n>${n}</n><v a="x">é${n}</v></record>`;
    const broken = [
      '<record><n>b1</n><v>x</w></record>', // mismatched end tag
      '<record><n>b2</n><v a=1>x</v></record>', // unquoted attribute
      '<record><n>b3</n><v>x &amp y</v><u>1 < 2</u></record>', // bare '<'
      '<record><n>b4</n><open>x</record>', // unclosed child
    ];
    const parts = ['<?xml version="1.0"?>\n<records>\n'];
    const expected: Rec[] = [];
    for (let i = 0; i < 30; i++) {
      if (i % 7 === 3) parts.push(broken[(i / 7) | 0]!, '\n');
      else {
        parts.push(good(i), '\n');
        expected.push({ n: String(i), v: { '@a': 'x', '#text': `é${i}` } });
      }
    }
    parts.push('</records>\n');
    const bytes = Buffer.from(parts.join(''));
    const r = rng(77);
    for (const targetBytes of [1, 50, 333, 1 << 20]) {
      const out = await decodeUnit(decoderOf(xml), randomStream(bytes, r, 40), { targetBytes });
      expect(out.records, `targetBytes ${targetBytes}`).toEqual(expected);
      expect(
        out.errors.map((e) => e.raw.toString()),
        `targetBytes ${targetBytes}`,
      ).toEqual(broken);
      for (const e of out.errors) expect(e.message).toMatch(/^XML piece \d+, byte \d+: ./);
    }
  });

  it('comments, processing instructions, CDATA with markup and a DOCTYPE are skipped by the cutter and the reader', async () => {
    const text = `<?xml version="1.0"?>
<!DOCTYPE records [ <!ELEMENT records ANY> <!-- ] > --> ]>
<records>
  <!-- <record><n>not a record</n></record> -->
  <?pi <record>?>
  <record><n>1</n><!-- c --><?pi x?><c><![CDATA[</record><record>]]></c></record>
  <record><n>2</n></record>
</records>`;
    for (const targetBytes of [1, 1 << 20]) {
      const out = await decodeUnit(decoderOf(xml), randomStream(Buffer.from(text), rng(targetBytes), 5), { targetBytes });
      expect(out.errors).toEqual([]);
      expect(out.records).toEqual([{ n: '1', c: '</record><record>' }, { n: '2' }]);
    }
  });

  it('an entity XML does not define (&nbsp;) makes its record an error, as in any conforming parser', async () => {
    const out = await decodeXml('<records><record><a>x&nbsp;y</a></record><record><a>2</a></record></records>');
    expect(out.records).toEqual([{ a: '2' }]);
    expect(out.errors.map((e) => e.raw.toString())).toEqual(['<record><a>x&nbsp;y</a></record>']);
    expect(out.errors[0]!.message).toBe('XML piece 1, byte 0: line 1, column 18 of the record: undefined entity.');
  });

  it('input that is not XML is one error with its bytes, not silently nothing', async () => {
    const out = await decodeXml('{"not": "xml"}\n');
    expect(out.records).toEqual([]);
    expect(out.errors.map((e) => e.raw.toString())).toEqual(['{"not": "xml"}\n']);
    expect(out.errors[0]!.message).toMatch(/^XML piece 1: text data outside of root node/);
    // Well-formed XML without records is not an error.
    expect(await decodeXml('<records></records>')).toMatchObject({ records: [], errors: [] });
    // Large non-XML input is not held whole: it goes out in bounded pieces, every byte reported.
    const junk = 'id,name\n'.repeat(1000);
    const big = await decodeUnit(decoderOf(xml), randomStream(Buffer.from(junk), rng(1), 100), { targetBytes: 1000 });
    expect(big.errors.length).toBeGreaterThan(5);
    expect(Buffer.concat(big.errors.map((e) => e.raw)).toString()).toBe(junk);
    // Junk before a document: an error for the junk, the records still flow.
    const mixed = await decodeXml('garbage\n<records><record><n>1</n></record></records>', {}, 1);
    expect(mixed.records).toEqual([{ n: '1' }]);
    expect(mixed.errors.map((e) => e.raw.toString())).toEqual(['garbage\n']);
  });

  it('a truncated file: the cut-off record is an error with its bytes, the complete ones decode', async () => {
    const text = '<records><record><n>1</n></record><record><n>2</n></record><record><n>3</n><v>abc';
    for (const targetBytes of [1, 1 << 20]) {
      const out = await decodeXml(text, {}, targetBytes);
      expect(out.records).toEqual([{ n: '1' }, { n: '2' }]);
      expect(out.errors.map((e) => e.raw.toString())).toEqual(['<record><n>3</n><v>abc']);
      expect(out.errors[0]!.message).toMatch(/not closed at the end of the input/);
    }
    // Cut inside a tag.
    const out = await decodeXml('<records><record><n>1</n></record><record><n a="');
    expect(out.records).toEqual([{ n: '1' }]);
    expect(out.errors.map((e) => e.raw.toString())).toEqual(['<record><n a="']);
  });

  it('the root closing over a record left open: the record is an error, the next document flows', async () => {
    const text = '<records><record><n>1</n></records><records><record><n>2</n></record></records>';
    const out = await decodeXml(text);
    expect(out.errors.map((e) => e.raw.toString())).toEqual(['<record><n>1</n>']);
    expect(out.errors[0]!.message).toMatch(/<record> is not closed before <\/records>/);
    expect(out.records).toEqual([{ n: '2' }]);
  });

  it('runs through the engine: a loaded pipeline, chunker and process-chunk, XML in and NDJSON out', async () => {
    const config = pipelineWith('{type: xml, record_element: row}', '{type: ndjson}', '  record_chunk_size: 2\n');
    const plan = buildPlan(config, { registry });
    const text = '<t><row><a>1</a></row><row><a>2</a></row><row><a>3</b></row><row x="4"/></t>';
    let payload = '';
    const errors: string[] = [];
    for await (const c of chunksOf(once(Buffer.from(text)), plan.decoder.framing, { targetBytes: 1 << 20, maxLines: config.record_chunk_size })) {
      const out = processChunk(plan, { ...c, meta: {} }, { keepRecords: false });
      payload += Buffer.from(out.sinks[0]!.payload).toString('utf8');
      for (const e of out.parseErrors) errors.push(Buffer.from(e.raw!).toString());
    }
    expect(errors).toEqual(['<row><a>3</b></row>']);
    expect(payload).toBe('{"a":"1"}\n{"a":"2"}\n{"@x":"4"}\n');
  });

  it('a message (no header) is decoded as a whole document', () => {
    const out = decodeChunk(decoderOf(xml), { data: Buffer.from('<records><record><a>1</a></record></records>') });
    expect(out.records).toEqual([{ a: '1' }]);
  });
});

describe('xml serializer: encode', () => {
  const tricky: Rec[] = [
    {
      host: 'rtr-1 & <core>',
      n: 42,
      f: 1.5,
      ok: true,
      none: null,
      skipped: undefined,
      quote: `"it's" ]]> done`,
      ws: '  lead and trail  ',
      crlf: 'a\r\nb\rc',
      tab: 'a\tb',
      ctrl: 'bell\u0007nul\u0000',
      uni: 'Zürich 東京 😀',
      nested: { a: '1', b: { c: '2' } },
      list: ['x', 'y', { z: '1' }],
      big: 12345678901234567890n,
      when: new Date('2026-11-21T10:00:00Z'),
      bin: Buffer.from([1, 2, 255]),
      '@id': 'r<1>',
      '#text': 'mixed',
    },
  ];

  it('writes a document Python parses: escaping, scalars, nested objects, lists, attributes, text', () => {
    const e = encoderOf(xml);
    const doc = e.head(tricky) + e.body(tricky).toString() + e.tail;
    expect(doc.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<records>\n<record id="r&lt;1&gt;">')).toBe(true);
    const py = pyParse(doc);
    expect(py.root).toBe('records');
    expect(py.records).toEqual([
      {
        '@id': 'r<1>',
        '#text': 'mixed',
        host: 'rtr-1 & <core>',
        n: '42',
        f: '1.5',
        ok: 'true',
        none: '',
        quote: `"it's" ]]> done`,
        ws: '  lead and trail  ',
        crlf: 'a\r\nb\rc',
        tab: 'a\tb',
        ctrl: 'bell\ufffdnul\ufffd',
        uni: 'Zürich 東京 😀',
        nested: { a: '1', b: { c: '2' } },
        list: ['x', 'y', { z: '1' }],
        big: '12345678901234567890',
        when: '2026-11-21T10:00:00.000Z',
        bin: 'AQL/',
      },
    ]);
  });

  it('head, batches and tail make one document; Python reads every record in order', () => {
    const doc = pythonDoc(31, { records: 50 });
    const e = encoderOf(xml);
    const recs = doc.records;
    const text = e.head(recs) + e.body(recs.slice(0, 20)).toString() + e.separator + e.body(recs.slice(20)).toString() + e.tail;
    const py = pyParse(text);
    expect(py.records).toEqual(recs);
  });

  it('field names that are not XML names are written as _xHHHH_ escapes; Python accepts them, we read the names back', async () => {
    const r: Rec = {
      'a b': '1',
      '1st': '2',
      'x:y': '3',
      '': '4',
      'emoji😀': '5',
      _x0041_: '6',
      'ok-name.v': '7',
      '@bad attr': '8',
      '@xmlns': '9',
      µs: '10',
      a·b: '11',
      Zürich: '12',
    };
    const e = encoderOf(xml);
    const doc = e.head([r]) + e.body([r]).toString() + e.tail;
    expect(pyParse(doc).tags).toEqual(['record']);
    const py = pyParse(doc).records[0]!;
    expect(Object.keys(py).sort()).toEqual(
      [
        'a_x0020_b',
        '_x0031_st',
        'x_x003A_y',
        '_x_',
        'emoji_x0001F600_',
        '_x005F_x0041_',
        'ok-name.v',
        '_x0040_bad_x0020_attr',
        '_x0040_xmlns',
        '_x00B5_s',
        'a·b',
        'Zürich',
      ].sort(),
    );
    const back = await decodeXml(doc);
    expect(back.errors).toEqual([]);
    expect(back.records).toEqual([r]);
  });

  it('root_element and record_element name the document and its records', () => {
    const e = encoderOf(xml, { root_element: 'inventory', record_element: 'device' });
    const doc = e.head([]) + e.body([{ a: '1' }, { a: '2' }]).toString() + e.tail;
    expect(pyParse(doc)).toEqual({ root: 'inventory', tags: ['device', 'device'], records: [{ a: '1' }, { a: '2' }] });
  });

  it('latin1 output: declared ISO-8859-1, characters beyond it as references; ascii likewise', () => {
    const r: Rec = { Zürich: 'é 東 😀', a: 'plain' };
    for (const [encoding, label] of [
      ['latin1', 'ISO-8859-1'],
      ['ascii', 'US-ASCII'],
    ] as const) {
      const e = encoderOf(xml, { encoding });
      const bytes = Buffer.concat([Buffer.from(e.head([r])), e.body([r]), Buffer.from(e.tail)]);
      expect(bytes.toString('latin1')).toContain(`encoding="${label}"`);
      if (encoding === 'ascii') expect([...bytes].every((b) => b < 0x80)).toBe(true);
      const py = pyParse(bytes).records[0]!;
      expect(py).toEqual(encoding === 'latin1' ? { Zürich: 'é 東 😀', a: 'plain' } : { Z_x00FC_rich: 'é 東 😀', a: 'plain' });
    }
  });

  it('utf-16 cannot be written (the sink writes head and tail as UTF-8): a clear error', () => {
    expect(() => encoderOf(xml, { encoding: 'utf-16le' })).toThrow(/cannot write encoding "utf-16le"/);
    expect(() => encoderOf(xml, { encoding: 'latin1', root_element: 'données' })).toThrow(/must be ASCII/);
  });

  it('one() writes a standalone document whose root is the record; Python parses it and we read it back', async () => {
    const e = encoderOf(xml);
    const r: Rec = { '@id': '1', host: 'rtr1', tags: ['a', 'b'] };
    const b = e.one(r);
    expect(pyParse(b)).toEqual({ root: 'record', tags: ['host', 'tags', 'tags'], records: [{ '#text': 'rtr1' }, { '#text': 'a' }, { '#text': 'b' }] });
    expect(decodeChunk(decoderOf(xml), { data: b }).records).toEqual([r]);
  });

  it('what we write decodes back to the same records (strings stay strings)', async () => {
    const doc = pythonDoc(41, { records: 40 });
    const e = encoderOf(xml);
    const text = e.head(doc.records) + e.body(doc.records).toString() + e.tail;
    const back = await decodeUnit(decoderOf(xml), randomStream(Buffer.from(text), rng(4), 30), { targetBytes: 300 });
    expect(back.errors).toEqual([]);
    expect(back.records).toEqual(doc.records);
  });
});

describe('xml serializer: a record in many reads', () => {
  it('a start tag of 256 KiB (one attribute) in 64 reads is scanned O(log n) times and copied about twice (no join and rescan per read)', async () => {
    const value = 'v'.repeat(256 << 10);
    const bytes = Buffer.from(`<records><record><if name="${value}">1</if></record><record><n>2</n></record></records>`);
    let out: Awaited<ReturnType<typeof decodeUnit>> | undefined;
    const work = await workOf(async () => (out = await decodeUnit(decoderOf(xml), readsOf(bytes, 64), { targetBytes: 1 << 20 })));
    expect(out!.errors).toEqual([]);
    expect(out!.records).toEqual([{ if: { '@name': value, '#text': '1' } }, { n: '2' }]);
    // (Each read ends a look that wants more; the tag is scanned from its start on ~log2(64) of them.)
    expect(work.incompleteLooks).toBeGreaterThan(0);
    expect(work.incompleteLooks).toBeLessThanOrEqual(LINEAR_64_READS.maxLooks);
    expect(work.copiedBytes).toBeLessThanOrEqual(LINEAR_64_READS.maxCopiesPerByte * bytes.length);
  });
});
