import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../../src/config/load.js';
import { runPipeline } from '../../../src/engine/runner.js';
import pmXml from '../../../src/plugins/serializers/pm_xml/index.js';
import { splitPmXml } from '../../../src/plugins/serializers/pm_xml/split.js';
import { durationSeconds } from '../../../src/plugins/serializers/pm_xml/values.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeUnit, decoderOf, once, pyJson, randInt, randomStream, rng } from './helpers.js';

/**
 * Python builds a 32.435 document from a random description with xml.etree.ElementTree, then reads
 * the bytes back with expat and flattens them on its own into the records we should produce: one
 * per measValue, context fields then one field per counter (colliding names renamed by the rule in
 * docs/formats/pm_xml.md, written here again). Each record comes with the byte offset from which it
 * is complete (the end of its measValue), so the records of any truncated prefix are known too.
 */
const PY_DOC = String.raw`
import json, math, random, re, sys
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat

a = json.loads(sys.stdin.read())
r = random.Random(a["seed"])
variant, nsmode, numeric = a["variant"], a["ns"], a["numeric"]
add_me, add_dur = a["add_managed_element"], a["add_duration"]
URI = "http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec"
if nsmode == "prefix":
    ET.register_namespace(a.get("prefix", "pm"), URI)
elif nsmode == "default":
    ET.register_namespace("", URI)
def q(tag):
    return ("{%s}%s" % (URI, tag)) if nsmode != "none" else tag

CH = ["a", "Z", "7", " ", "\u00fc", "\u6771", "\U0001F600", "&", "<", ">", '"', "'", "=", ",", ";"]
def rtext(n=6):
    return "".join(r.choice(CH) for _ in range(r.randint(1, n)))
def value():
    x = r.random()
    if x < .3: return str(r.randint(0, 10**9))
    if x < .4: return str(r.randint(-1000, -1))
    if x < .5: return "%.3f" % (r.random() * 1000)
    if x < .56: return r.choice(["1e5", "2.5E-3", "+7", ".5", "5.", "007"])
    if x < .62: return "NIL"
    if x < .68 and variant == "r": return r.choice(["", "  ", " 42 "])
    if x < .75: return r.choice(["0x1F", "Infinity", "1e500", "nan", "abc", "1,2,3"])
    return str(r.randint(0, 100))
CLASH = ["meas_obj_ldn", "counter_meas_obj_ldn", "suspect", "job_id", "gran_end_time", "vendor_name", "__proto__", "counter", "value"]
DUR = ["PT900S", "PT15M", "PT1H", "P1D", "PT300S", "PT0.5S"]

root = ET.Element(q("measCollecFile"))
hdr = {"fileFormatVersion": "32.435 V%d.0" % r.randint(7, 17)}
if r.random() < .8: hdr["vendorName"] = "Vendor " + rtext()
if r.random() < .4: hdr["dnPrefix"] = "DC=" + rtext()
fh = ET.SubElement(root, q("fileHeader"), hdr)
if r.random() < .8: ET.SubElement(fh, q("fileSender"), {"localDn": "IRP=" + rtext(), "elementType": "RNC"})
ET.SubElement(fh, q("measCollec"), {"beginTime": "2026-11-21T1%d:00:00+02:00" % r.randint(0, 9)})
job = 100
for _ in range(r.randint(1, 3)):
    md = ET.SubElement(root, q("measData"))
    mea = {"localDn": "ME=" + rtext()}
    if r.random() < .6: mea["userLabel"] = rtext()
    if r.random() < .5: mea["swVersion"] = "R" + str(r.randint(1, 30))
    ET.SubElement(md, q("managedElement"), mea)
    for _ in range(r.randint(1, 3)):
        mi = ET.SubElement(md, q("measInfo"), {"measInfoId": "MI " + rtext()} if r.random() < .8 else {})
        if r.random() < .3: mi.append(ET.Comment(" a comment with <measInfo> and </measValue> inside "))
        if r.random() < .8:
            job += 1
            ET.SubElement(mi, q("job"), {"jobId": str(job)})
        ET.SubElement(mi, q("granPeriod"), {"duration": r.choice(DUR), "endTime": "2026-11-21T10:%02d:00Z" % r.randint(0, 59)})
        if r.random() < .5: ET.SubElement(mi, q("repPeriod"), {"duration": r.choice(DUR)})
        n = r.randint(1, 5)
        if variant == "r":
            ps = sorted(r.sample(range(1, 20), n))
            names = ["pm" + rtext() + str(i) + "X" for i in range(n)]
        else:
            names = ["pm%s%dX" % ("".join(r.choice("abcXYZ_.-") for _ in range(r.randint(1, 8))), i) for i in range(n)]
        if r.random() < .3:
            # counters named like context fields (and like their renamed forms)
            picks = ["meas_obj_ldn", "counter_meas_obj_ldn"] if r.random() < .4 else r.sample(CLASH, 3)
            for i, nm in zip(r.sample(range(n), min(n, len(picks))), picks): names[i] = nm
        if variant == "r":
            for p, name in zip(ps, names):
                ET.SubElement(mi, q("measType"), {"p": str(p)}).text = name
        else:
            ET.SubElement(mi, q("measTypes")).text = " ".join(names)
        for _ in range(r.randint(0, 4)):
            mv = ET.SubElement(mi, q("measValue"), {"measObjLdn": "Cell=" + rtext()})
            if r.random() < .2: mv.append(ET.Comment("c"))
            if variant == "r":
                order = list(zip(ps, names))
                r.shuffle(order)
                for p, _ in order[: r.randint(0, n)]:
                    ET.SubElement(mv, q("r"), {"p": str(p)}).text = value()
            else:
                vals = [value() for _ in range(r.randint(0, n))]
                ET.SubElement(mv, q("measResults")).text = " ".join(vals)
            s = r.random()
            if s < .2: ET.SubElement(mv, q("suspect")).text = "true"
            elif s < .3: ET.SubElement(mv, q("suspect")).text = "false"
ff = ET.SubElement(root, q("fileFooter"))
ET.SubElement(ff, q("measCollec"), {"endTime": "2026-11-21T10:15:00+02:00"})
if r.random() < .7: ET.indent(root)
doc = ET.tostring(root, encoding="utf-8", xml_declaration=True)

# ---- independent flattening of the bytes, with expat ----
NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
def conv(s):
    s = s.strip(" \t\r\n")
    if s == "" or s == "NIL": return None
    if numeric and NUM.match(s):
        f = float(s)
        if math.isfinite(f): return f
    return s
DM = re.compile(r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
def secs(d):
    m = DM.match(d)
    dd, h, mi_, s = (float(x) if x else 0.0 for x in m.groups())
    return dd * 86400 + h * 3600 + mi_ * 60 + s

RESERVED = {"file_format_version", "vendor_name", "dn_prefix", "sender", "begin_time", "managed_element", "user_label",
            "sw_version", "meas_info_id", "job_id", "gran_period_s", "gran_end_time", "rep_period_s", "meas_obj_ldn",
            "suspect", "__proto__"}
def field(name, types):
    f = name
    if f in RESERVED:
        f = "counter_" + f
        while f in RESERVED or f in types: f = "counter_" + f
    return f

out = []
st = {"stack": [], "text": "", "file": {}, "me": {}, "mi": {}, "types": [], "byp": {}, "mv": None}
px = expat.ParserCreate()
px.buffer_text = True
def local(n): return n.split(":")[-1]
def start(name, attrs):
    l = local(name)
    st["stack"].append((l, px.CurrentByteIndex))
    st["text"] = ""
    if l == "fileHeader":
        for k, f in (("fileFormatVersion", "file_format_version"), ("vendorName", "vendor_name"), ("dnPrefix", "dn_prefix")):
            if k in attrs: st["file"][f] = attrs[k]
    elif l == "fileSender": st["file"]["sender"] = attrs["localDn"]
    elif l == "measCollec" and len(st["stack"]) == 3 and st["stack"][1][0] == "fileHeader": st["file"]["begin_time"] = attrs["beginTime"]
    elif l == "managedElement":
        st["me"] = {}
        for k, f in (("localDn", "managed_element"), ("userLabel", "user_label"), ("swVersion", "sw_version")):
            if k in attrs: st["me"][f] = attrs[k]
    elif l == "measInfo":
        st["mi"] = {"id": attrs.get("measInfoId")}
        st["types"], st["byp"] = [], {}
    elif l == "job": st["mi"]["job"] = attrs["jobId"]
    elif l == "granPeriod": st["mi"]["gd"], st["mi"]["ge"] = attrs["duration"], attrs["endTime"]
    elif l == "repPeriod": st["mi"]["rd"] = attrs["duration"]
    elif l in ("measType", "r"): st["p"] = attrs.get("p")
    elif l == "measValue": st["mv"] = {"ldn": attrs.get("measObjLdn"), "counters": {}}
def ctx():
    c = dict(st["file"])
    if add_me: c.update(st["me"])
    mi = st["mi"]
    if mi.get("id") is not None: c["meas_info_id"] = mi["id"]
    if "job" in mi: c["job_id"] = mi["job"]
    if add_dur: c["gran_period_s"] = secs(mi["gd"])
    c["gran_end_time"] = mi["ge"]
    if add_dur and "rd" in mi: c["rep_period_s"] = secs(mi["rd"])
    return c
def end(name):
    l, _ = st["stack"].pop()
    here = px.CurrentByteIndex
    # an end tag starts at here; for an empty-element tag (<x/>) expat reports the offset after it
    close = doc.index(b">", here) + 1 if doc.startswith(b"</", here) else here
    t = st["text"]
    if l == "measType":
        st["byp"][st["p"]] = t.strip(); st["types"].append(t.strip())
    elif l == "measTypes": st["types"] = t.split()
    elif l == "r":
        st["mv"]["counters"][field(st["byp"][st["p"]], st["types"])] = conv(t)
    elif l == "measResults":
        for name, v in zip(st["types"], t.split()):
            st["mv"]["counters"][field(name, st["types"])] = conv(v)
    elif l == "suspect":
        st["mv"]["suspect"] = t.strip() == "true"
    elif l == "measValue":
        rec = ctx()
        rec["meas_obj_ldn"] = st["mv"]["ldn"]
        if "suspect" in st["mv"]: rec["suspect"] = st["mv"]["suspect"]
        rec.update(st["mv"]["counters"])
        out.append({"complete": close, "record": rec})
    st["text"] = ""
def chars(d):
    st["text"] += d
px.StartElementHandler, px.EndElementHandler, px.CharacterDataHandler = start, end, chars
px.Parse(doc, True)
print(json.dumps({"xml": doc.decode("utf-8"), "values": out}))
`;

interface PyValue {
  complete: number;
  record: Rec;
}
interface PyDoc {
  xml: string;
  values: PyValue[];
}

interface DocOpts {
  variant: 'r' | 'list';
  ns: 'default' | 'prefix' | 'none';
  prefix?: string;
  numeric?: boolean;
  add_managed_element?: boolean;
  add_duration?: boolean;
}

function pythonDoc(seed: number, o: DocOpts): PyDoc {
  return pyJson<PyDoc>(PY_DOC, JSON.stringify({ seed, numeric: true, add_managed_element: true, add_duration: false, ...o }));
}

/** The document with the most values among a few seeds (some random documents are tiny). */
const biggest = (seeds: number[], o: DocOpts) => seeds.map((s) => pythonDoc(s, o)).reduce((a, b) => (b.values.length > a.values.length ? b : a));

/** The records Python expects from the first `n` bytes (all of them when n is the length). */
function expectedUpTo(d: PyDoc, n: number): Rec[] {
  return d.values.filter((v) => v.complete <= n).map((v) => v.record);
}

const params = (o: DocOpts) => ({
  numeric_values: o.numeric ?? true,
  add_managed_element: o.add_managed_element ?? true,
  add_duration: o.add_duration ?? false,
});

describe('pm_xml serializer: configuration', () => {
  it('defaults: encoding utf-8, add_managed_element true, add_duration false, numeric_values true; input only', () => {
    expect(cfgOf(pmXml)).toEqual({ encoding: 'utf-8', add_managed_element: true, add_duration: false, numeric_values: true });
    expect(pmXml.direction).toBe('in');
    expect(pmXml.encoder).toBeUndefined();
    expect(decoderOf(pmXml).framing.kind).toBe('split');
    expect(Value.Check(pmXml.config, { ...cfgOf(pmXml), extra: 1 })).toBe(false);
  });

  it('lint: unknown encodings and encodings that are not ASCII-compatible are refused', () => {
    const lint = (encoding: string) => pmXml.lint!({ ...cfgOf(pmXml), encoding });
    expect(lint('utf-8')).toEqual([]);
    expect(lint('windows-1252')).toEqual([]);
    expect(lint('klingon')[0]!.path).toBe('encoding');
    expect(lint('utf-16le')[0]!.message).toMatch(/not ASCII-compatible/);
    const yaml = `version: "1"\npipeline:\n  name: p\n  schedule: { type: manual }\n  source: { type: local, path: /in }\n  serializer_in: { type: pm_xml, encoding: utf-16 }\n  sinks: [{ type: local, path: /out }]\n`;
    expect(
      loadPipelineText(yaml, { env: {} })
        .diagnostics.map((x) => x.message)
        .join('\n'),
    ).toMatch(/not ASCII-compatible/);
  });

  it('ISO 8601 durations in seconds', () => {
    expect(['PT900S', 'PT15M', 'PT1H', 'P1D', 'P1DT12H', 'PT0.5S', 'P1W', 'PT1H30M15S'].map((d) => durationSeconds(d))).toEqual([
      900, 900, 3600, 86400, 129600, 0.5, 604800, 5415,
    ]);
    expect(['P1M', 'P1Y', 'PT', 'P', '15M', 'xyz'].map((d) => durationSeconds(d))).toEqual([null, null, null, null, null, null]);
  });
});

describe('pm_xml serializer: decode Python-built 32.435 documents', () => {
  const cases: DocOpts[] = [
    { variant: 'r', ns: 'default' },
    { variant: 'r', ns: 'prefix', prefix: 'pm' },
    { variant: 'r', ns: 'none' },
    { variant: 'list', ns: 'default' },
    { variant: 'list', ns: 'prefix', prefix: 'x3gpp' },
    { variant: 'r', ns: 'default', numeric: false },
    { variant: 'list', ns: 'none', numeric: false, add_duration: true },
    { variant: 'r', ns: 'prefix', add_managed_element: false, add_duration: true },
  ];

  it.each(cases.map((c, i) => [JSON.stringify(c), c, i] as const))('%s: whole file and random splits through the real chunker', async (_n, o, i) => {
    for (let k = 0; k < 3; k++) {
      const seed = 1000 * i + k;
      const d = pythonDoc(seed, o);
      const bytes = Buffer.from(d.xml, 'utf8');
      const expected = expectedUpTo(d, bytes.length);
      const whole = await decodeUnit(decoderOf(pmXml, params(o)), bytes);
      const where = `seed ${seed}`;
      expect(whole.errors, where).toEqual([]);
      expect(whole.notes, where).toEqual([]);
      expect(whole.records, where).toEqual(expected);
      // Key order as documented.
      if (whole.records.length) expect(Object.keys(whole.records[0]!), where).toEqual(Object.keys(expected[0]!));
      const r = rng(seed);
      for (let round = 0; round < 6; round++) {
        const targetBytes = randInt(r, 1, 600);
        const maxLines = r() < 0.3 ? randInt(r, 1, 7) : undefined;
        const out = await decodeUnit(decoderOf(pmXml, params(o)), randomStream(bytes, r, randInt(r, 1, 300)), { targetBytes, maxLines });
        const at = `${where} round ${round} targetBytes ${targetBytes} maxLines ${maxLines}`;
        expect(out.errors, at).toEqual([]);
        expect(out.notes, at).toEqual([]);
        expect(out.records, at).toEqual(expected);
      }
    }
  });

  it('documents have what the tests need: values, measInfos cut across pieces, suspect flags, comments', async () => {
    const d = biggest([4, 5, 6, 7, 8, 9], { variant: 'r', ns: 'default' });
    expect(d.values.length).toBeGreaterThan(10);
    const out = await decodeUnit(decoderOf(pmXml), Buffer.from(d.xml), { targetBytes: 64 });
    expect(out.chunks.length).toBeGreaterThan(5);
    expect(out.chunks.slice(1).every((c) => c.header && c.header.includes('measCollecFile'))).toBe(true);
    const many = [0, 1, 2, 3, 4, 5, 6, 7].map((s) => pythonDoc(s, { variant: 'r', ns: 'prefix' }));
    expect(many.some((x) => x.values.some((v) => v.record.suspect === true))).toBe(true);
    expect(many.some((x) => x.xml.includes('<!--'))).toBe(true);
    // Counters named like context fields, renamed (also twice), and measValues without values.
    const keys = many.flatMap((x) => x.values.flatMap((v) => Object.keys(v.record)));
    for (const k of ['counter_meas_obj_ldn', 'counter_counter_meas_obj_ldn', 'counter_suspect', 'counter_job_id']) expect(keys, k).toContain(k);
    expect(many.some((x) => x.values.some((v) => !Object.keys(v.record).some((k) => k.startsWith('pm') || k.startsWith('counter'))))).toBe(true);
  });
});

describe('pm_xml serializer: truncated files', () => {
  it('keeps every measValue complete before the cut, drops the one cut, notes it (random cuts, random splits)', async () => {
    for (const [i, o] of (
      [
        { variant: 'r', ns: 'default' },
        { variant: 'list', ns: 'prefix' },
        { variant: 'r', ns: 'none', numeric: false },
      ] as DocOpts[]
    ).entries()) {
      const d = pythonDoc(77 + i, o);
      const bytes = Buffer.from(d.xml, 'utf8');
      const r = rng(500 + i);
      const cuts = [0, 1, 30, bytes.length - 1, bytes.length];
      for (let k = 0; k < 40; k++) cuts.push(randInt(r, 0, bytes.length));
      for (const n of cuts) {
        const part = bytes.subarray(0, n);
        const targetBytes = randInt(r, 1, 2000);
        const out = await decodeUnit(decoderOf(pmXml, params(o)), randomStream(part, r, randInt(r, 1, 500)), { targetBytes });
        const at = `variant ${i} cut ${n} of ${bytes.length} targetBytes ${targetBytes}`;
        expect(out.errors, at).toEqual([]);
        expect(out.records, at).toEqual(expectedUpTo(d, n));
        if (n === 0) expect(out.notes, at).toEqual([]);
        else if (n < bytes.length) {
          expect(out.notes, at).toHaveLength(1);
          expect(out.notes[0], at).toMatch(
            new RegExp(`^PM XML: file truncated at byte ${n}: .* partial elements? skipped( \\(measValue .* with \\d+ complete values?\\))?$`),
          );
        } else expect(out.notes, at).toEqual([]);
      }
    }
  });

  it('the note names the elements closed and the measValue dropped', async () => {
    const head = `<measCollecFile><fileHeader fileFormatVersion="1"/><measData><managedElement localDn="m"/><measInfo><measType p="1">a</measType><measType p="2">b</measType>`;
    const doc = `${head}<measValue measObjLdn="w"><r p="1">4</r><r p="2">NIL</r></measValue><measValue measObjLdn="x"><r p="1">5</r><r p="2">61`;
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.records).toEqual([{ file_format_version: '1', managed_element: 'm', meas_obj_ldn: 'w', a: 4, b: null }]);
    expect(out.notes).toEqual([
      `PM XML: file truncated at byte ${doc.length}: 5 open elements closed automatically (measCollecFile > measData > measInfo > measValue > r), 1 partial element skipped (measValue "x" with 1 complete value)`,
    ]);
    const list = `<measCollecFile><measData><measInfo><measTypes>a b c</measTypes><measValue measObjLdn="x"><measResults>1 2 3`;
    const out2 = await decodeUnit(decoderOf(pmXml), list);
    expect(out2.records).toEqual([]);
    expect(out2.notes[0]).toMatch(/5 open elements .* > measResults\), 1 partial element skipped \(measValue "x" with 0 complete values\)$/);
    // Cut outside any measValue: the unfinished tag is the partial element.
    const out3 = await decodeUnit(decoderOf(pmXml), `${head}<measValue measObjLdn="w"><r p="1">4</r></measValue><measVal`);
    expect(out3.records).toEqual([{ file_format_version: '1', managed_element: 'm', meas_obj_ldn: 'w', a: 4 }]);
    expect(out3.notes[0]).toMatch(/\(measCollecFile > measData > measInfo\), 1 partial element skipped$/);
  });
});

describe('pm_xml serializer: XML details', () => {
  const wrap = (mi: string, head = '') =>
    `<?xml version="1.0"?>\n<!DOCTYPE measCollecFile [ <!ELEMENT x ANY> ]>\n<measCollecFile xmlns="http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec">${head}<measData><managedElement localDn="me"/>${mi}</measData></measCollecFile>`;

  it('entities, numeric references, CDATA, comments, processing instructions, attribute order and quoting', async () => {
    const doc = wrap(
      `<measInfo measInfoId='a&amp;b'><?vendor stuff?><granPeriod endTime = "t1"  duration='PT15M' />
      <measType p='1'>pm&lt;A&#x3E;</measType><!-- <measValue> --><measType p="2"><![CDATA[pm<B>]]></measType>
      <measValue measObjLdn="Cell=&quot;1&quot;&#32;&#x6771;"><r  p = "2" ><![CDATA[ 7 ]]></r><r p='1'>1&#48;</r><suspect> true </suspect></measValue></measInfo>`,
    );
    const out = await decodeUnit(decoderOf(pmXml, { add_duration: true }), doc);
    expect(out.errors).toEqual([]);
    const base = { managed_element: 'me', meas_info_id: 'a&b', gran_period_s: 900, gran_end_time: 't1', meas_obj_ldn: 'Cell="1" 東', suspect: true };
    expect(out.records).toEqual([{ ...base, 'pm<B>': 7, 'pm<A>': 10 }]);
    expect(Object.keys(out.records[0]!).slice(-2)).toEqual(['pm<B>', 'pm<A>']); // document order
  });

  it('a UTF-8 byte-order mark and non-ASCII text; latin1 encoding', async () => {
    const doc = wrap(`<measInfo><measType p="1">pmZürich</measType><measValue measObjLdn="Zürich"><r p="1">1</r></measValue></measInfo>`);
    const utf8 = await decodeUnit(decoderOf(pmXml), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(doc, 'utf8')]));
    expect(utf8.records).toEqual([{ managed_element: 'me', meas_obj_ldn: 'Zürich', pmZürich: 1 }]);
    const latin1 = await decodeUnit(decoderOf(pmXml, { encoding: 'latin1' }), Buffer.from(doc, 'latin1'));
    expect(latin1.records).toEqual(utf8.records);
  });

  it('r without p pairs with measTypes by position; r p into a measTypes list; an unknown p is an error for that value only', async () => {
    const doc = wrap(
      `<measInfo measInfoId="m"><measTypes>a b</measTypes><measValue measObjLdn="x"><r>1</r><r>2</r></measValue><measValue measObjLdn="y"><r p="2">3</r><r p="9">4</r><r p="1">5</r></measValue></measInfo>`,
    );
    const out = await decodeUnit(decoderOf(pmXml, { add_managed_element: false }), doc);
    expect(out.records).toEqual([
      { meas_info_id: 'm', meas_obj_ldn: 'x', a: 1, b: 2 },
      { meas_info_id: 'm', meas_obj_ldn: 'y', b: 3, a: 5 },
    ]);
    expect(out.errors.map((e) => [e.message, e.raw.toString()])).toEqual([['PM XML: measInfo "m": <r p="9"> matches no measType', '<r p="9">4</r>']]);
  });

  it('more measResults values than measTypes: the extra ones are one error', async () => {
    const doc = wrap(`<measInfo measInfoId="m"><measTypes>a b</measTypes><measValue measObjLdn="x"><measResults>1 2 3</measResults></measValue></measInfo>`);
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.records).toEqual([{ managed_element: 'me', meas_info_id: 'm', meas_obj_ldn: 'x', a: 1, b: 2 }]);
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]!.raw.toString()).toBe('<measResults>1 2 3</measResults>');
  });

  it('vendor elements and attributes the reader does not know are ignored', async () => {
    const doc = wrap(
      `<measInfo><vendor:x xmlns:vendor="urn:v" a="1"><measValue measObjLdn="no"><r p="1">9</r></measValue></vendor:x><measType p="1">c</measType><measValue measObjLdn="ok" vendor:extra="1"><r p="1">2</r><vendor:note>n</vendor:note></measValue></measInfo>`,
    );
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual([{ managed_element: 'me', meas_obj_ldn: 'ok', c: 2 }]);
  });

  it('counters named like context fields get "counter_" in front (until the name is free); the context field keeps its value', async () => {
    const types = ['meas_obj_ldn', 'counter_meas_obj_ldn', 'suspect', 'managed_element', 'dn_prefix', '__proto__', 'counter', 'value'];
    const doc = wrap(
      `<measInfo measInfoId="m">${types.map((t, i) => `<measType p="${i + 1}">${t}</measType>`).join('')}<measValue measObjLdn="x">${types.map((_, i) => `<r p="${i + 1}">${i}</r>`).join('')}<suspect>true</suspect></measValue></measInfo>`,
    );
    // add_managed_element false: managed_element is still a reserved name (field names do not depend on options).
    const out = await decodeUnit(decoderOf(pmXml, { add_managed_element: false }), doc);
    expect(out.errors).toEqual([]);
    expect(out.records).toHaveLength(1);
    const r = out.records[0]!;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.entries(r)).toEqual([
      ['meas_info_id', 'm'],
      ['meas_obj_ldn', 'x'],
      ['suspect', true],
      ['counter_counter_meas_obj_ldn', 0],
      ['counter_meas_obj_ldn', 1],
      ['counter_suspect', 2],
      ['counter_managed_element', 3],
      ['counter_dn_prefix', 4],
      ['counter___proto__', 5],
      ['counter', 6],
      ['value', 7],
    ]);
  });

  it('a second value for the same counter in one measValue is an error for that value; the first is kept', async () => {
    const doc = wrap(
      `<measInfo measInfoId="m"><measType p="1">a</measType><measType p="2">b</measType><measValue measObjLdn="x"><r p="1">1</r><r p="1">9</r><r p="2">2</r></measValue></measInfo>`,
    );
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.records).toEqual([{ managed_element: 'me', meas_info_id: 'm', meas_obj_ldn: 'x', a: 1, b: 2 }]);
    expect(out.errors.map((e) => [e.message, e.raw.toString()])).toEqual([
      ['PM XML: measInfo "m": <r p="1"> is a second value for counter "a" in measValue "x"; the first is kept', '<r p="1">9</r>'],
    ]);
    // The same name twice in measTypes: one field, the first value; one error for the measResults.
    const list = wrap(`<measInfo measInfoId="n"><measTypes>a b a</measTypes><measValue measObjLdn="y"><measResults>1 2 3</measResults></measValue></measInfo>`);
    const out2 = await decodeUnit(decoderOf(pmXml), list);
    expect(out2.records).toEqual([{ managed_element: 'me', meas_info_id: 'n', meas_obj_ldn: 'y', a: 1, b: 2 }]);
    expect(out2.errors.map((e) => e.raw.toString())).toEqual(['<measResults>1 2 3</measResults>']);
    expect(out2.errors[0]!.message).toMatch(/counters named twice/);
  });

  it('a measValue without values is a record of its context; missing counters are left out, not null', async () => {
    const doc = wrap(
      `<measInfo><measTypes>a b</measTypes><measValue measObjLdn="x"/><measValue measObjLdn="y"><measResults>5</measResults><suspect>false</suspect></measValue><measValue><measResults/></measValue></measInfo>`,
    );
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual([
      { managed_element: 'me', meas_obj_ldn: 'x' },
      { managed_element: 'me', meas_obj_ldn: 'y', suspect: false, a: 5 },
      { managed_element: 'me', meas_obj_ldn: null },
    ]);
  });
});

describe('pm_xml serializer: malformed measInfo', () => {
  it("is one error with the measInfo's raw bytes; the other measInfos flow (whole and split)", async () => {
    const d = pythonDoc(31, { variant: 'r', ns: 'default' });
    // Break the values of one measInfo that has some: an end tag that does not match.
    const xml = d.xml;
    const infos = [...xml.matchAll(/<measInfo[\s>][\s\S]*?<\/measInfo>/g)];
    const victim = infos.find((m) => m[0].includes('</r>'))!;
    const broken = victim[0].replace('</r>', '</x>');
    const doc = xml.slice(0, victim.index) + broken + xml.slice(victim.index! + victim[0].length);
    const start = Buffer.byteLength(xml.slice(0, victim.index));
    const end = start + Buffer.byteLength(victim[0]);
    const others = d.values.filter((v) => v.complete <= start || v.complete > end).map((v) => v.record);
    const whole = await decodeUnit(decoderOf(pmXml), doc);
    expect(whole.records).toEqual(others);
    expect(whole.errors).toHaveLength(1);
    expect(whole.errors[0]!.message).toMatch(/^PM XML: malformed measInfo .* end tag <\/x> does not match <r>; its values in this piece are skipped$/);
    expect(whole.errors[0]!.raw.toString('utf8')).toBe(broken);
    // Split small: values of the broken measInfo in other pieces may flow, the rest always does.
    const r = rng(9);
    for (let k = 0; k < 10; k++) {
      const out = await decodeUnit(decoderOf(pmXml), randomStream(Buffer.from(doc), r, 50), { targetBytes: randInt(r, 1, 300) });
      expect(out.errors.length).toBeGreaterThanOrEqual(1);
      for (const o of others) expect(out.records).toContainEqual(o);
      expect(out.errors.map((e) => e.raw.toString()).join('')).toContain('</x>');
    }
  });

  it('a broken measInfo header (carried into later pieces) is an error in every piece of that measInfo; no value of it flows', async () => {
    const mi = (id: string, typeEnd: string) =>
      `<measInfo measInfoId="${id}"><measType p="1">a</${typeEnd}>` +
      Array.from({ length: 6 }, (_, i) => `<measValue measObjLdn="${id}${i}"><r p="1">${i}</r></measValue>`).join('') +
      '</measInfo>';
    const doc = `<measCollecFile><measData><managedElement localDn="m"/>${mi('A', 'measType')}${mi('B', 'measTyp')}${mi('C', 'measType')}</measData></measCollecFile>`;
    for (const targetBytes of [16, 160, 1 << 20]) {
      const out = await decodeUnit(decoderOf(pmXml), doc, { targetBytes });
      expect(
        out.records.map((x) => x.meas_obj_ldn),
        `targetBytes ${targetBytes}`,
      ).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'C0', 'C1', 'C2', 'C3', 'C4', 'C5']);
      expect(out.errors.length).toBeGreaterThanOrEqual(1);
      for (const e of out.errors) expect(e.message).toMatch(/^PM XML: malformed measInfo "B" .*end tag <\/measTyp> does not match <measType>/);
      // Together the errors carry all of measInfo B's bytes (once each).
      const b = doc.slice(doc.indexOf('<measInfo measInfoId="B"'), doc.indexOf('<measInfo measInfoId="C"'));
      expect(out.errors.map((e) => e.raw.toString()).join('')).toBe(b);
    }
  });

  it('a broken file header is an error carrying the raw bytes, never silent', async () => {
    const doc = `<measCollecFile><fileHeader fileFormatVersion="1" vendorName=x/><measData><measInfo><measType p="1">a</measType><measValue measObjLdn="x"><r p="1">5</r></measValue></measInfo></measData></measCollecFile>`;
    const out = await decodeUnit(decoderOf(pmXml), doc);
    expect(out.records).toEqual([]);
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]!.message).toMatch(/not quoted/);
    expect(out.errors[0]!.raw.toString()).toBe(doc);
  });
});

describe('pm_xml serializer: the splitter', () => {
  it('cuts only after measValue, measInfo or measData end tags (or empty measValue, measInfo); headers carry the open context', async () => {
    const d = biggest([12, 13, 14], { variant: 'r', ns: 'prefix', prefix: 'pm' });
    const pieces = [];
    for await (const p of splitPmXml(once(Buffer.from(d.xml)), { targetBytes: 1 })) pieces.push(p);
    expect(pieces.length).toBeGreaterThan(3);
    for (const p of pieces.slice(0, -1)) expect(p.data.toString()).toMatch(/(<\/pm:(measValue|measInfo|measData)>|<pm:(measValue|measInfo) [^<]*\/>)$/);
    expect(Buffer.concat(pieces.map((p) => p.data)).toString()).toBe(d.xml);
    expect(pieces.at(-1)!.header!.toString()).toMatch(/^svc-pm-xml offset=\d+ final=1\n/);
  });

  it('record_chunk_size bounds the measValues (records) per piece', async () => {
    const mvs = Array.from({ length: 20 }, (_, i) => `<measValue measObjLdn="c${i}"><r p="1">${i}</r><r p="2">${i}</r><r p="3">${i}</r></measValue>`).join('');
    const doc = `<measCollecFile><measData><measInfo><measType p="1">a</measType><measType p="2">b</measType><measType p="3">c</measType>${mvs}</measInfo></measData></measCollecFile>`;
    const out = await decodeUnit(decoderOf(pmXml), doc, { targetBytes: 1 << 20, maxLines: 7 });
    expect(out.records).toHaveLength(20);
    expect(out.records[19]).toEqual({ meas_obj_ldn: 'c19', a: 19, b: 19, c: 19 });
    const counts = [];
    for (const c of out.chunks) counts.push((c.data.toString().match(/<\/measValue>/g) ?? []).length);
    expect(counts.filter((n) => n > 0)).toEqual([7, 7, 6]);
  });
});

describe('pm_xml serializer: through the engine', () => {
  it.each([1, 2])('runPipeline with thread_workers %i: local file -> pm_xml -> ndjson, small pieces', async (threads) => {
    const d = biggest([40, 41, 42], { variant: 'r', ns: 'prefix', add_duration: true });
    const dir = mkdtempSync(join(tmpdir(), 'pm-xml-'));
    try {
      mkdirSync(join(dir, 'in'));
      writeFileSync(join(dir, 'in', 'A1.xml'), d.xml);
      const { config, diagnostics } = loadPipelineText(
        `version: "1"
pipeline:
  name: pm
  schedule: { type: manual }
  thread_workers: ${threads}
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))}, file_pattern: "*.xml" }
  serializer_in: { type: pm_xml, add_duration: true }
  serializer_out: { type: ndjson, ensure_ascii: false }
  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: "out.ndjson" }
`,
        { env: {} },
      );
      expect(diagnostics).toEqual([]);
      // 80-byte chunks are 40-byte pieces: every measValue its own piece, through worker threads.
      const rec = await runPipeline(config!, { chunkBytes: 80 });
      expect(rec.status).toBe('success');
      const lines = readFileSync(join(dir, 'out', 'out.ndjson'), 'utf8')
        .split('\n')
        .filter(Boolean);
      const expected = expectedUpTo(d, Buffer.byteLength(d.xml));
      expect(lines.map((l) => JSON.parse(l))).toEqual(expected);
      expect(rec.records_in).toBe(expected.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
