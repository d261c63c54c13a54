// pm_xml-large: a generated ~1 GB 3GPP TS 32.435 measurement file decoded to NDJSON through the
// real engine (local source -> pm_xml -> ndjson -> local sink); `records` counts measValues (one
// record each). Issue target: >= 50 MB/s of input with peak RSS under 250 MB.
import { createReadStream, createWriteStream, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { DEFAULT_CHUNK_BYTES } from '../src/engine/runner.js';
import pmXml from '../src/plugins/serializers/pm_xml/index.js';
import { DATA_DIR } from './data.js';
import { runBench } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const PM_BYTES = 1 << 30;

/** mulberry32, so the file is the same on every machine. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FAMILIES = ['EUtranCellFDD', 'EUtranCellRelation', 'NRCellDU', 'NRCellCU', 'GNBCUUPFunction', 'UtranCell', 'PmFlex', 'TermPointToENB'];

/** A counter value as vendors write them: mostly integers, some floats, PDF lists, NIL and empty. */
function value(r: () => number): string {
  const x = r();
  if (x < 0.55) return String(Math.floor(r() * 1000));
  if (x < 0.85) return String(Math.floor(r() * 4_000_000_000));
  if (x < 0.93) return (r() * 100).toFixed(2);
  if (x < 0.96) return 'NIL';
  if (x < 0.97) return '';
  return `${Math.floor(r() * 50)},${Math.floor(r() * 50)},${Math.floor(r() * 50)},${Math.floor(r() * 9)}`;
}

/**
 * Writes a 32.435 file of about `bytes` bytes, streamed: managed elements of 40 measInfos each, every
 * measInfo with 20-50 counters and 1,000-4,000 measValues, pretty-printed as the spec's examples.
 */
export async function writePmXml(file: string, bytes: number, seed = 1): Promise<void> {
  const r = rng(seed);
  const out = createWriteStream(file);
  let written = 0;
  let buf = '';
  const emit = async (s: string) => {
    buf += s;
    if (buf.length >= 1 << 20) {
      written += buf.length;
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  };
  await emit(`<?xml version="1.0" encoding="UTF-8"?>
<measCollecFile xmlns="http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec">
  <fileHeader fileFormatVersion="32.435 V10.0" vendorName="Company NN" dnPrefix="DC=a1.companyNN.com,SubNetwork=1">
    <fileSender localDn="SubNetwork=1,IRPAgent=1" elementType="RNC"/>
    <measCollec beginTime="2026-11-21T10:00:00+00:00"/>
  </fileHeader>
`);
  let me = 0;
  let job = 1000;
  while (written + buf.length < bytes) {
    me++;
    await emit(`  <measData>
    <managedElement localDn="ManagedElement=gNB-${me}" userLabel="site ${me}" swVersion="R${20 + (me % 5)}A"/>
`);
    for (let m = 0; m < 40 && written + buf.length < bytes; m++) {
      const fam = FAMILIES[m % FAMILIES.length]!;
      const nTypes = 20 + Math.floor(r() * 31);
      const nValues = 1000 + Math.floor(r() * 3001);
      let s = `    <measInfo measInfoId="${fam}-${m}">
      <job jobId="${job++}"/>
      <granPeriod duration="PT900S" endTime="2026-11-21T10:15:00+00:00"/>
      <repPeriod duration="PT900S"/>
`;
      for (let t = 1; t <= nTypes; t++) s += `      <measType p="${t}">pm${fam}Counter${t}</measType>\n`;
      await emit(s);
      for (let v = 0; v < nValues; v++) {
        s = `      <measValue measObjLdn="ManagedElement=gNB-${me},${fam}=${fam}-${v}">\n`;
        for (let t = 1; t <= nTypes; t++) s += `        <r p="${t}">${value(r)}</r>\n`;
        if (r() < 0.01) s += '        <suspect>true</suspect>\n';
        await emit(s + '      </measValue>\n');
      }
      await emit('    </measInfo>\n');
    }
    await emit('  </measData>\n');
  }
  buf += `  <fileFooter>
    <measCollec endTime="2026-11-21T10:15:00+00:00"/>
  </fileFooter>
</measCollecFile>
`;
  out.write(buf);
  out.end();
  await once(out, 'finish');
}

export async function pmXmlFile(bytes = PM_BYTES): Promise<string> {
  const dir = join(DATA_DIR, `pm-xml-${bytes}`);
  const file = join(dir, 'A20261121.1000+0000-1015+0000_gNB.xml');
  if (existsSync(file) && statSync(file).size > 0) return file;
  mkdirSync(dir, { recursive: true });
  await writePmXml(file + '.part', bytes);
  const { renameSync } = await import('node:fs');
  renameSync(file + '.part', file);
  return file;
}

async function runLarge(threads: number): Promise<Measured> {
  const input = await pmXmlFile();
  const size = statSync(input).size;
  const r = await runBench({
    name: 'pm_xml-large',
    threads,
    dir: dirname(input),
    pattern: '*.xml',
    serializerIn: '{ type: pm_xml }',
    serializerOut: '{ type: ndjson, ensure_ascii: false }',
  });
  const outBytes = statSync(join(r.out, 'bench-pm_xml-large.ndjson')).size;
  rmSync(r.out, { recursive: true, force: true }); // ~1.5 GB of NDJSON
  return {
    input_mb: Math.round(size / 1e6),
    records: r.record.records_in,
    seconds: Number(r.seconds.toFixed(2)),
    mb_per_sec: Number((size / 1e6 / r.seconds).toFixed(1)),
    records_per_sec: Math.round(r.record.records_in / r.seconds),
    output_mb: Math.round(outBytes / 1e6),
    cpu_seconds: Number(r.cpuSeconds.toFixed(1)),
    mb_per_cpu_sec: Number((size / 1e6 / r.cpuSeconds).toFixed(1)),
  };
}

export const pmXmlLarge: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await pmXmlFile()),
  run: runLarge,
};

/** The same file through the splitter and decoder only (records counted, not encoded or written). */
async function runDecodeOnly(): Promise<Measured> {
  const input = await pmXmlFile();
  const size = statSync(input).size;
  const decoder = pmXml.decoder!({ encoding: 'utf-8', add_managed_element: true, add_duration: false, numeric_values: true });
  let records = 0;
  let errors = 0;
  const out = { record: () => void records++, error: () => void errors++, note: () => {} };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let piece = 1;
  for await (const p of decoder.framing.split!(createReadStream(input, { highWaterMark: 1 << 20 }), { targetBytes: DEFAULT_CHUNK_BYTES })) {
    decoder.decode({ data: p.data, header: p.header, firstLine: piece++ }, out);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  if (errors) throw new Error(`${errors} parse errors`);
  return {
    input_mb: Math.round(size / 1e6),
    records,
    pieces: piece - 1,
    seconds: Number(seconds.toFixed(2)),
    mb_per_sec: Number((size / 1e6 / seconds).toFixed(1)),
    records_per_sec: Math.round(records / seconds),
    cpu_seconds: Number(cpuSeconds.toFixed(1)),
    mb_per_cpu_sec: Number((size / 1e6 / cpuSeconds).toFixed(1)),
  };
}

export const pmXmlDecode: Scenario = {
  prepare: async () => void (await pmXmlFile()),
  run: runDecodeOnly,
};
