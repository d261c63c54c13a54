// One fuzz target per parser that faces the network or a file (issue 19). Each names its seeds
// (existing fixtures and examples, or valid messages built by the project's own encoders where the
// repository holds none), the code under test, and which errors are that parser's own typed errors:
// any other throw, a hang, a memory blow-up or an abort is a finding (fuzz/run.ts).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RemoteInfo } from 'node:dgram';
import { Value } from '@sinclair/typebox/value';
import * as snappy from 'snappyjs';
import { drawFrom, expression, snmpMessage } from './generators.js';
import type { Rng, Style } from './mutate.js';
import { chunksOf } from '../src/engine/chunker.js';
import type { Decoder, SerializerPlugin } from '../src/plugins/types.js';
import { DEFAULT_BULK_LIMITS, SnmpAgent } from '../src/snmp/agent.js';
import { TrapReceiver } from '../src/snmp/trap-receiver.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, type AnyPdu, type V3Message } from '../src/snmp/message.js';
import { computeMac, localize, makeUser, type UsmUser, type UsmUserConfig } from '../src/snmp/usm.js';
import { makeVarBind } from '../src/snmp/values.js';
import { Asn1DecodeError } from '../src/asn1/ber.js';
import { decodeOne, decodeRecords, topTags, type MessageClass } from '../src/asn1/ber-records.js';
import { decodeDocument } from '../src/asn1/documents.js';
import { loadSchema } from '../src/asn1/load.js';
import { PerError } from '../src/asn1/per.js';
import { XerError } from '../src/asn1/xer.js';
import { JerError } from '../src/asn1/jer.js';
import { compileMibs, type MibSource } from '../src/mib/compiler.js';
import { loadPipelineText } from '../src/config/load.js';
import { asWritten } from '../src/config/interpolate.js';
import { compile, ExprError } from '../src/expr/index.js';
import { Framer } from '../src/plugins/connectors/syslog/framing.js';
import { parseSyslog } from '../src/plugins/connectors/syslog/parse.js';
import { checkWriteRequest, decodeWriteRequest, RemoteWriteError, uncompress } from '../src/plugins/connectors/prometheus_rw/decode.js';
import { encodeWriteRequest } from '../src/plugins/connectors/prometheus_rw/encode.js';
import { decodeRequest, jsonToProtobuf } from '../src/plugins/connectors/otlp/decode.js';
import { requestType, SIGNALS } from '../src/plugins/connectors/otlp/proto.js';
import { scanMetrics } from '../src/plugins/connectors/otlp/scan.js';
import { OtlpDecodeError, walkRequest } from '../src/plugins/connectors/otlp/walk.js';
import { ExpositionError, parseExposition } from '../src/plugins/connectors/prometheus_scrape/parse.js';
import { sampleValue } from '../src/plugins/common/prom-value.js';
import { decodeNetflow5, decodeTemplated } from '../src/plugins/connectors/flow/netflow.js';
import { FlowDecodeError } from '../src/plugins/connectors/flow/reader.js';
import { decodeSflow } from '../src/plugins/connectors/flow/sflow.js';
import { FlowState } from '../src/plugins/connectors/flow/state.js';
import * as wire from '../test/helpers/flow-wire.js';
import { CdrError, CdrWriter, decodeValue, encodeValue, parseType } from '../src/plugins/connectors/corba/cdr.js';
import { decodeReply, GiopError, GiopFramer, MSG } from '../src/plugins/connectors/corba/giop.js';
import { loadSettings } from '../src/settings.js';
import { GNMI_DESCRIPTOR } from '../src/plugins/connectors/gnmi/gnmi-descriptor.js';
import { LOADER_OPTIONS, type SubscribeResponse } from '../src/plugins/connectors/gnmi/client.js';
import { notificationRecords } from '../src/plugins/connectors/gnmi/records.js';
import asn1Serializer from '../src/plugins/serializers/asn1/index.js';
import avro from '../src/plugins/serializers/avro/index.js';
import csv from '../src/plugins/serializers/csv/index.js';
import json from '../src/plugins/serializers/json/index.js';
import msgpack from '../src/plugins/serializers/msgpack/index.js';
import ndjson from '../src/plugins/serializers/ndjson/index.js';
import parquet from '../src/plugins/serializers/parquet/index.js';
import pmXml from '../src/plugins/serializers/pm_xml/index.js';
import protobuf from '../src/plugins/serializers/protobuf/index.js';
import xml from '../src/plugins/serializers/xml/index.js';

const ROOT = join(import.meta.dirname, '..');
const at = (...p: string[]) => join(ROOT, ...p);

export interface Target {
  name: string;
  /** What is fuzzed, for --list and the docs. */
  about: string;
  style: Style;
  /** Where the seeds come from (docs/reliability.md lists it). */
  seedSource: string;
  seeds(): Promise<Buffer[]> | Buffer[];
  /**
   * Runs one input. Returns a short signature of the outcome: features separated by `|` (how
   * many records, each error message with its numbers blanked). An input that shows a feature
   * not seen before joins the corpus, as new coverage would in a coverage-guided fuzzer.
   */
  run(input: Buffer): string | Promise<string>;
  /** The parser's own typed errors: thrown by design for bad input, not findings. */
  expected(e: unknown): boolean;
  /** Repairs what mutation cannot get right by chance (an SNMPv3 MAC), so the fuzzing gets past it. */
  fixup?(input: Buffer): Buffer;
  /** Builds an input from a grammar (fuzz/generators.ts): a share of the inputs come from here. */
  generate?(r: Rng): Buffer;
}

/** A broken contract the harness detects (a decoder that throws, a record JSON cannot hold). */
export class ContractBroken extends Error {
  override name = 'ContractBroken';
}

/** Error texts of V8 itself: a parser that reports one as a parse error hides a bug behind it. */
const ENGINE_TEXT =
  /Cannot read propert|Cannot set propert|Cannot destructure|is not a function|is not iterable|is not defined|is not a constructor|Maximum call stack|Invalid array length|Invalid string length|Invalid typed array length|Array buffer allocation failed|Cannot convert .* to a BigInt|Cannot mix BigInt/;

const WORD = '(?:#(?::#)*|<>|[a-z]+|[A-Z]+|[A-Z][a-z]+)';
/** A word of a message's own text: lower, UPPER or Capitalised, # (a number), <> (a tag); hyphenated, bracketed, punctuated. */
const PROSE = new RegExp(`^[(\\[]?${WORD}(?:-${WORD})*[:,.;)\\]]{0,2}$`);

/**
 * One kind of outcome, one signature: the text before anything quoted (often the input), numbers
 * blanked, and of the rest only the words up to the first one that is not plain prose (mixed case,
 * digits, symbols, non-ASCII, a list item: a tag, key or token copied from the input), then `_`,
 * then up to three plain words that end the message (its template's tail: "... has no value").
 * Without this a parser that names the offending tag gave every mutated tag a feature of its own,
 * and the corpus filled up with near-copies.
 */
export const norm = (s: string) => {
  const words = s
    .split(/['"`]/)[0]!
    .replace(/<[^>]*>?/g, '<>')
    .replace(/0x[0-9a-f]+/gi, '#')
    .replace(/\d+/g, '#')
    .split(/\s+/)
    .filter(Boolean);
  // A word before a comma is mostly an item of a list the message copies ("symbols a, b, c imported ..."): not prose.
  const prose = (w: string) => PROSE.test(w) && !w.endsWith(',');
  const head = words.findIndex((w) => !prose(w));
  if (head < 0) return words.join(' ').slice(0, 70);
  let tail = words.length;
  while (tail > head + 1 && words.length - tail < 3 && prose(words[tail - 1]!)) tail--;
  return [...words.slice(0, head), '_', ...words.slice(tail)].join(' ').slice(0, 70);
};

/** JavaScript's own error classes: never a parser's typed error. */
export const isEngineError = (e: unknown) =>
  e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError || e instanceof EvalError || e instanceof URIError;

/**
 * Parse errors that carry a JavaScript engine error (a library's TypeError caught and reported
 * with the bytes): the input is handled as the contract says, so these are no findings, but the
 * message says nothing useful. Collected per run and listed for triage.
 */
export const masked = new Set<string>();

const checkMessage = (m: string): void => {
  const hit = ENGINE_TEXT.exec(m);
  if (hit && masked.size < 100) masked.add(`${norm(m).slice(0, 60)} [${hit[0]}]`);
};

/** Records go on as JSON (messages, the DLQ): one that JSON.stringify refuses (a BigInt, a cycle) is a finding. */
const checkJson = (v: unknown): void => {
  try {
    JSON.stringify(v);
  } catch (e) {
    throw new ContractBroken(`a record is not JSON-serialisable: ${(e as Error).message}`);
  }
};

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
const SAMPLE_RECORDS = lines(at('examples', 'data', 'interfaces.ndjson'))
  .slice(0, 20)
  .map((l) => JSON.parse(l) as Record<string, unknown>);

/** The worked example inputs of a serializer's documentation. */
function exampleInputs(p: SerializerPlugin): Buffer[] {
  return (p.examples ?? []).flatMap((e) => (e.worked ? [Buffer.from(e.worked.input, e.worked.encoding ?? 'utf8')] : []));
}

const encoderOf = (p: SerializerPlugin, cfg: Record<string, unknown>) => p.encoder!(Value.Default(p.config, structuredClone(cfg)) as never);

/** What the serializer's own encoder writes for the sample records, as one file and record by record. */
function encoded(p: SerializerPlugin, cfg: Record<string, unknown>, records = SAMPLE_RECORDS): Buffer[] {
  const enc = encoderOf(p, cfg);
  const file = (rs: typeof records) => Buffer.concat([Buffer.from(enc.head(rs)), enc.body(rs), Buffer.from(enc.tail)]);
  return enc.whole
    ? [enc.body(records), enc.body(records.slice(0, 2))]
    : [file(records), file(records.slice(0, 3)), ...encodedOnes(p, cfg, records.slice(0, 4))];
}

/** Single messages of the serializer's own encoder (formats that hold one record per payload). */
const encodedOnes = (p: SerializerPlugin, cfg: Record<string, unknown>, records = SAMPLE_RECORDS): Buffer[] => records.map((r) => encoderOf(p, cfg).one(r));

/**
 * A serializer decoding a unit the way the engine does: cut by the real chunker (small chunks, so
 * cuts fall inside the data), each chunk decoded. Bad input must come out through out.error: a
 * decode() that throws is a finding; split() (reading the unit) may throw its format's errors.
 */
function serializerTarget(name: string, p: SerializerPlugin, cfg: Record<string, unknown>, style: Style, seedSource: string, seeds: () => Buffer[]): Target {
  let dec: Decoder | undefined;
  return {
    name,
    about: `the ${p.key} serializer's decoder (${JSON.stringify(cfg)}) through the engine's chunker`,
    style,
    seedSource,
    seeds,
    expected: (e) => !(e instanceof ContractBroken) && !isEngineError(e),
    async run(input) {
      const d = (dec ??= p.decoder!(Value.Default(p.config, structuredClone(cfg)) as never));
      const seen = new Set<string>();
      let records = 0;
      const out = {
        record: (r: Record<string, unknown>) => {
          checkJson(r);
          records++;
        },
        error: (m: string) => {
          checkMessage(m);
          seen.add('E' + norm(m));
        },
        note: (m: string) => {
          seen.add('N' + norm(m));
        },
      };
      for await (const chunk of chunksOf(once(input), d.framing, { targetBytes: 2048 })) {
        if (!chunk.data.length && !chunk.header) continue;
        try {
          d.decode({ data: chunk.data, header: chunk.header, firstLine: chunk.firstLine }, out);
        } catch (e) {
          if (e instanceof ContractBroken) throw e;
          throw new ContractBroken(`decode() threw ${(e as Error).name}: ${(e as Error).message} (bad input must go to out.error)`, { cause: e });
        }
      }
      return [`r${Math.min(records, 4)}`, ...seen].join('|');
    },
  };
}

// ---- SNMP -------------------------------------------------------------------------------------

const ENGINE_ID = '80001f888001020304aabbcc';
const USERS: UsmUserConfig[] = [
  { name: 'fuzz-none' },
  { name: 'fuzz-auth', authProtocol: 'SHA', authKey: 'fuzz-auth-key' },
  { name: 'fuzz-aes', authProtocol: 'SHA256', authKey: 'fuzz-auth-key', privProtocol: 'AES128', privKey: 'fuzz-priv-key' },
  { name: 'fuzz-des', authProtocol: 'MD5', authKey: 'fuzz-auth-key', privProtocol: 'DES', privKey: 'fuzz-priv-key' },
];
const RINFO: RemoteInfo = { address: '192.0.2.1', port: 16200, family: 'IPv4', size: 0 };
const usmUsers = new Map<string, UsmUser>();
const usmUser = (name: string): UsmUser | undefined => {
  const cfg = USERS.find((u) => u.name === name);
  if (!cfg) return undefined;
  let u = usmUsers.get(name);
  if (!u) usmUsers.set(name, (u = makeUser(cfg)));
  return u;
};

const vbs = () => [
  makeVarBind('1.3.6.1.2.1.1.3.0', 'TimeTicks', 12345),
  makeVarBind('1.3.6.1.6.3.1.1.4.1.0', 'ObjectIdentifier', '1.3.6.1.6.3.1.1.5.3'),
  makeVarBind('1.3.6.1.2.1.2.2.1.2.1', 'OctetString', 'Gi0/1'),
  makeVarBind('1.3.6.1.2.1.2.2.1.8.1', 'Integer32', -2),
  makeVarBind('1.3.6.1.2.1.31.1.1.1.6.1', 'Counter64', '18446744073709551615'),
  makeVarBind('1.3.6.1.2.1.4.20.1.1.10.0.0.1', 'IpAddress', '10.0.0.1'),
  makeVarBind('1.3.6.1.2.1.2.2.1.10.1', 'Counter32', 4294967295),
  makeVarBind('1.3.6.1.4.1.99.1', 'Opaque', '9f780442f60000'),
  makeVarBind('1.3.6.1.2.1.1.1.0', 'Null', null),
];
const pdu = (type: number, varbinds = vbs(), errorStatus = 0, errorIndex = 0): AnyPdu => ({ type, requestId: 0x1234, errorStatus, errorIndex, varbinds });
const v3Header = (userName: string, reportable: boolean, engineId = Buffer.from(ENGINE_ID, 'hex')) => ({
  msgId: 77,
  maxSize: 65507,
  reportable,
  engineId,
  boots: 1,
  time: 0,
  userName,
  contextEngineId: engineId,
  contextName: '',
});
const localUser = (name: string) => (usmUser(name) ? localize(usmUser(name)!, Buffer.from(ENGINE_ID, 'hex')) : null);

/** Valid messages of every version and security level, built by the project's encoder. */
function snmpSeeds(): Buffer[] {
  const requests = [pdu(PduType.Get), pdu(PduType.GetNext), pdu(PduType.GetBulk, vbs(), 1, 5), pdu(PduType.Set, vbs().slice(2, 4))];
  const notifications = [pdu(PduType.TrapV2), pdu(PduType.Inform)];
  const trapV1 = {
    ...pdu(PduType.TrapV1, vbs().slice(2)),
    enterprise: '1.3.6.1.4.1.8072.4',
    agentAddr: '192.0.2.7',
    genericTrap: 6,
    specificTrap: 42,
    timestamp: 12345,
  };
  const out: Buffer[] = [encodeCommunity(0, 'public', trapV1), encodeCommunity(0, 'public', requests[0]!)];
  for (const p of [...requests, ...notifications]) out.push(encodeCommunity(1, p.type === PduType.Set ? 'private' : 'public', p));
  for (const u of USERS) for (const p of [...requests, ...notifications]) out.push(encodeV3(v3Header(u.name, p.type !== PduType.TrapV2), localUser(u.name), p));
  // Discovery: empty engine ID and user, reportable.
  out.push(encodeV3({ ...v3Header('', true, Buffer.alloc(0)), contextEngineId: Buffer.alloc(0) }, null, pdu(PduType.Get, [])));
  return out.map((b) => Buffer.from(b));
}

/** Recomputes the HMAC of an authenticated v3 message of a known user (mutations break it every time). */
function fixMac(input: Buffer): Buffer {
  let m: V3Message;
  try {
    const d = decodeMessage(input);
    if (d.version !== 3) return input;
    m = d as V3Message;
  } catch {
    return input;
  }
  const u = usmUser(m.userName);
  if (!(m.flags & 1) || !u?.auth) return input;
  const local = localize(u, m.engineId);
  if (m.authParams.len !== local.auth!.macLen) return input;
  const out = Buffer.from(input);
  out.fill(0, m.authParams.at, m.authParams.at + m.authParams.len);
  computeMac(local, out).copy(out, m.authParams.at);
  return out;
}

/** A handler's protected onMessage: what the UDP socket calls with each datagram. */
type Handler = { onMessage(buf: Buffer, rinfo: RemoteInfo): void; startedAt: number };

/** What both SNMP targets take: messages of every version and security level, MACs fixed after mutation. */
const snmpInputs = () =>
  ({
    style: 'bytes',
    seedSource: 'requests and notifications of every version and security level encoded by src/snmp/message.ts',
    seeds: snmpSeeds,
    fixup: fixMac,
    generate: drawFrom(snmpMessage, (b) => b),
  }) satisfies Partial<Target>;

/**
 * The agent is no reflector: a v1/v2c GETBULK answer with more than one varbind is at most
 * maxAmplification times the request and has at most maxVarbinds repeated varbinds (v3 answers are
 * encrypted; the same code path cuts them).
 */
function checkBulkAnswer(request: Buffer, answer: Buffer | undefined): void {
  if (!answer) return;
  let req;
  try {
    req = decodeMessage(request);
  } catch {
    return;
  }
  if (req.version === 3 || req.pdu.type !== PduType.GetBulk) return;
  const res = decodeMessage(answer);
  if (res.version === 3) return;
  const n = res.pdu.varbinds.length;
  const nonRep = Math.max(0, Math.min(req.pdu.errorStatus, req.pdu.varbinds.length));
  if (n > 1 && answer.length > DEFAULT_BULK_LIMITS.maxAmplification * request.length)
    throw new ContractBroken(`a ${request.length}-byte GETBULK got a ${answer.length}-byte answer`);
  if (n > nonRep + DEFAULT_BULK_LIMITS.maxVarbinds) throw new ContractBroken(`a GETBULK got ${n} varbinds (${nonRep} non-repeaters)`);
}

function snmpAgentTarget(): Target {
  let agent: SnmpAgent | undefined;
  let last = '';
  let sent: Buffer | undefined;
  const fresh = () => {
    const a = new SnmpAgent({
      engineId: ENGINE_ID,
      community: 'public',
      writeCommunity: 'private',
      users: USERS,
      onActivity: (e) => (last = `${e.version}:${e.request}:${norm((e.error ?? 'ok').replaceAll(e.principal || '\0', 'P'))}`),
    });
    // No UDP socket: the answer is kept to be checked (checkBulkAnswer).
    (a as unknown as { socket: unknown }).socket = { send: (m: Buffer) => (sent = Buffer.from(m)) };
    return a;
  };
  return {
    name: 'snmp-agent',
    about: 'SNMP messages (v1, v2c, v3 USM: none, SHA, SHA256+AES128, MD5+DES) handled by the agent: decode, USM, request processing, response encoding',
    ...snmpInputs(),
    // The agent turns malformed messages into a logged drop itself: anything thrown out of
    // onMessage ends up as "internal error" in the UDP service, so every throw is a finding.
    expected: () => false,
    run(input) {
      agent ??= fresh();
      const h = agent as unknown as Handler;
      h.startedAt = Date.now(); // inside the USM time window, however long the run
      last = 'silent';
      sent = undefined;
      h.onMessage(input, RINFO);
      checkBulkAnswer(input, sent);
      // A SET changes the agent's table: start the next input from the same state.
      if (last.includes(':set:')) agent = fresh();
      return last;
    },
  };
}

function snmpTrapTarget(): Target {
  let rx: TrapReceiver | undefined;
  let last = '';
  return {
    name: 'snmp-trap',
    about: 'SNMP notifications (v1 traps, v2c traps and informs, v3 USM traps and informs) handled by the trap receiver',
    ...snmpInputs(),
    expected: () => false,
    run(input) {
      rx ??= new TrapReceiver({
        engineId: ENGINE_ID,
        users: USERS,
        onTrap: (t) => (last = `${t.version}:${t.kind}:${Math.min(t.varbinds.length, 3)}`),
        onDrop: (why) => (last = norm(why)),
      });
      (rx as unknown as Handler).startedAt = Date.now();
      last = 'silent';
      (rx as unknown as Handler).onMessage(input, RINFO);
      return last;
    },
  };
}

// ---- ASN.1 ------------------------------------------------------------------------------------

const CDR_DIR = at('examples', 'schemas', 'cdr');
const ASN1_ERRORS = [Asn1DecodeError, PerError, XerError, JerError];
const VECTORS = () => JSON.parse(readFileSync(at('test', 'asn1', 'fixtures', 'vectors.json'), 'utf8')) as Record<string, Record<string, string[]>>;

/** DER and XER of the test suite's charging records (test/asn1/cdr-data.ts), encoded by asn1c as the tests do. */
async function asn1cSeeds(format: 'der' | 'xer'): Promise<Buffer[]> {
  const [{ asn1cEncode }, { cdrCase }] = await Promise.all([import('../test/asn1/asn1c.js'), import('../test/asn1/cdr-data.js')]);
  return asn1cEncode(
    CDR_DIR,
    'CallEventRecord',
    format,
    Array.from({ length: 12 }, (_, i) => cdrCase(i).xer),
  );
}

function asn1Target(encoding: 'ber' | 'der' | 'per' | 'uper' | 'xer' | 'jer'): Target {
  let classes: MessageClass[] | undefined;
  const load = () => (classes ??= [{ name: 'CallEventRecord', type: loadSchema(CDR_DIR).type('CallEventRecord') }]);
  const split = encoding === 'ber';
  return {
    name: `asn1-${encoding}`,
    about: split
      ? 'ASN.1 BER: a CDR file of concatenated CallEventRecords, split and decoded record by record (split_records: true)'
      : `ASN.1 ${encoding.toUpperCase()}: one CallEventRecord document (examples/schemas/cdr)`,
    style: encoding === 'xer' || encoding === 'jer' ? 'text' : 'bytes',
    seedSource:
      encoding === 'der' || encoding === 'ber' || encoding === 'xer'
        ? "test/asn1/cdr-data.ts records encoded by asn1c (test/asn1/asn1c.ts), plus the serializer's documented example"
        : 'test/asn1/fixtures/vectors.json',
    async seeds() {
      if (encoding === 'per' || encoding === 'uper' || encoding === 'jer')
        return VECTORS()['ChargingRecords.CallEventRecord']![encoding]!.map((h) => Buffer.from(h, encoding === 'jer' ? 'utf8' : 'hex'));
      const ders = await asn1cSeeds(encoding === 'xer' ? 'xer' : 'der');
      if (!split) return ders;
      return [...exampleInputs(asn1Serializer), Buffer.concat(ders), Buffer.concat(ders.slice(0, 3))];
    },
    // JER text that is no JSON fails in JSON.parse with its SyntaxError, which the serializer reports.
    expected: (e) => ASN1_ERRORS.some((c) => e instanceof c) || (encoding === 'jer' && e instanceof SyntaxError),
    run(input) {
      const cls = load();
      if (split) {
        const errs = new Set<string>();
        let n = 0;
        decodeRecords(input, 0, cls, topTags(cls), {
          record: (v) => {
            checkJson(v);
            n++;
          },
          error: (m) => {
            checkMessage(m);
            errs.add(norm(m));
          },
        });
        return [`r${Math.min(n, 4)}`, ...errs].join('|');
      }
      let v: unknown;
      if (encoding === 'der') {
        const r = decodeOne(cls, input, 0, input.length);
        v = r.value;
      } else v = decodeDocument(encoding, cls, input);
      checkJson(v);
      return 'ok';
    },
  };
}

// ---- text and schema inputs ---------------------------------------------------------------------

const MIB_DIR = at('test', 'fixtures', 'mibs', 'net-snmp');
/** The SMI modules most MIBs import: compiled with the fuzzed module so its definitions resolve. */
const MIB_BASE = ['SNMPv2-SMI', 'SNMPv2-TC', 'SNMPv2-CONF', 'RFC1155-SMI', 'RFC-1215'];

function mibTarget(): Target {
  let base: MibSource[] | undefined;
  return {
    name: 'mib',
    about: 'the SMI parser and compiler: one fuzzed module compiled with SNMPv2-SMI/TC/CONF, RFC1155-SMI and RFC-1215 (partial mode)',
    style: 'text',
    seedSource: 'test/fixtures/mibs/net-snmp (the net-snmp MIB modules under 64 KB)',
    seeds: () =>
      readdirSync(MIB_DIR)
        .filter((f) => f.endsWith('.txt'))
        .map((f) => readFileSync(join(MIB_DIR, f)))
        .filter((b) => b.length < 64 * 1024),
    // compileMibs never throws on bad input: it returns diagnostics.
    expected: () => false,
    run(input) {
      base ??= MIB_BASE.map((m) => ({ file: `${m}.txt`, text: readFileSync(join(MIB_DIR, `${m}.txt`), 'utf8'), group: 'bundled' }));
      const r = compileMibs([...base, { file: 'FUZZ.txt', text: input.toString('utf8') }], { mode: 'partial' });
      return `${r.modules.length}:${r.failed.map((f) => norm(f.errors[0]?.message ?? 'missing')).join('|')}`;
    },
  };
}

/** The pipeline-yaml target's environment: a variable pipelines may read and one of svc's own. */
const FUZZ_ENV = { HOME: '/nonexistent', FUZZ_TOKEN: 'fuzz-allowed-8d1e', SVC_FUZZ_KEY: 'fuzz-denied-2f9c' };

function yamlTarget(): Target {
  return {
    name: 'pipeline-yaml',
    about: 'the pipeline YAML loader (loadPipelineText): YAML, ${VAR} interpolation under SVC_CONFIG_ENV_ALLOW, schema and lint diagnostics',
    style: 'text',
    seedSource: 'templates/*.yaml, examples/*.yaml and the ${VAR} reproductions in test/fuzz-regressions/pipeline-yaml',
    seeds: () =>
      [['templates'], ['examples'], ['test', 'fuzz-regressions', 'pipeline-yaml']].flatMap((d) =>
        readdirSync(at(...d))
          .filter((f) => f.endsWith('.yaml') || f.endsWith('.bin'))
          .map((f) => readFileSync(at(...d, f))),
      ),
    // The loader returns diagnostics for bad input; it throws nothing but the contract checks in run().
    expected: () => false,
    run(input) {
      const text = input.toString('utf8');
      const r = loadPipelineText(text, { env: FUZZ_ENV });
      // Issue 28: svc's own variables are never read, and what the API shows (asWritten) holds no expanded value.
      const out = JSON.stringify([r.config ?? null, r.diagnostics]);
      if (out.includes(FUZZ_ENV.SVC_FUZZ_KEY))
        throw new ContractBroken('the value of SVC_FUZZ_KEY, which pipelines may not read, reached the config or a diagnostic');
      if (r.config && !text.includes(FUZZ_ENV.FUZZ_TOKEN) && JSON.stringify(asWritten(r.config)).includes(FUZZ_ENV.FUZZ_TOKEN))
        throw new ContractBroken('the config as written shows the expanded value of FUZZ_TOKEN');
      return r.config
        ? 'ok'
        : r.diagnostics
            .slice(0, 3)
            .map((d) => `${d.code}:${norm(d.message).slice(0, 30)}`)
            .join('|');
    },
  };
}

/** String literals of calls like `ev('...')` in a test file (single-quoted, the tests' style). */
function literalsOf(file: string, call: RegExp): string[] {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(new RegExp(`${call.source}\\('((?:[^'\\\\]|\\\\.)*)'`, 'g'))) {
    try {
      out.push(JSON.parse(`"${m[1]!.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string);
    } catch {
      // a literal with an escape JSON does not know: skipped
    }
  }
  return out;
}

const EXPR_SCOPE = { ...SAMPLE_RECORDS[1], tags: ['a', 'b'], nested: { x: { y: [1, 2, 3] } }, s: 'Gi0/1 up', n: null, big: 2 ** 60, f: 0.5, t: true };

function exprTarget(): Target {
  return {
    name: 'expr',
    about: 'the expression language: compile (tokenizer, parser, limits) and evaluation against a record',
    style: 'text',
    seedSource: 'the expressions of test/expr/*.test.ts',
    seeds: () => {
      const dir = at('test', 'expr');
      const all = readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .flatMap((f) => literalsOf(join(dir, f), /\b(?:ev|compile|runError|compileError)/));
      return [...new Set(all)].filter((s) => s.length < 4096).map((s) => Buffer.from(s, 'utf8'));
    },
    generate: drawFrom(expression, (s) => Buffer.from(s, 'utf8')),
    expected: (e) => e instanceof ExprError,
    run(input) {
      const f = compile(input.toString('utf8'));
      let v: unknown;
      try {
        v = f(structuredClone(EXPR_SCOPE));
      } catch (e) {
        if (e instanceof ExprError) return `run:${norm(e.message).slice(0, 30)}`;
        throw e;
      }
      return `ok:${typeof v}`;
    },
  };
}

// ---- connectors -----------------------------------------------------------------------------------

const SYSLOG_CTX = { peer: '192.0.2.1:514', protocol: 'tcp', now: new Date('2026-11-27T10:00:00Z') };

function syslogTarget(): Target {
  const parse = (text: string): string => {
    const r = parseSyslog(text, SYSLOG_CTX);
    checkJson(r);
    return `${r.format}:${norm(r.parse_error ?? '')}`;
  };
  return {
    name: 'syslog',
    about: 'syslog: the input as one UDP datagram (parseSyslog), and as a TCP stream cut by the Framer (octet counting or LF) in two reads',
    style: 'text',
    seedSource: 'the messages of test/connectors/syslog-parse.test.ts, also octet-counted',
    seeds: () => {
      const msgs = literalsOf(at('test', 'connectors', 'syslog-parse.test.ts'), /parseSyslog/);
      const counted = msgs.map((m) => `${Buffer.byteLength(m)} ${m}`).join('');
      return [...msgs.map((m) => Buffer.from(m)), Buffer.from(counted), Buffer.from(msgs.join('\n') + '\n')];
    },
    expected: () => false,
    run(input) {
      const sigs = new Set<string>([parse(input.toString('utf8'))]);
      const framer = new Framer({ maxSize: 2048, onMessage: (m) => sigs.add(parse(m.toString('utf8'))) });
      const cut = Math.floor(input.length / 3);
      framer.push(input.subarray(0, cut));
      framer.push(input.subarray(cut));
      framer.end();
      return [...sigs].sort().slice(0, 4).join('|') + framer.kind;
    },
  };
}

/** Seeds of the flow targets: datagrams built from the specifications (test/helpers/flow-wire.ts), templates and data in one. */
function flowSeeds(version: 'netflow5' | 'netflow9' | 'ipfix' | 'sflow'): Buffer[] {
  const f5 = { src: '10.0.0.1', dst: '10.0.0.2', packets: 3, bytes: 180, sport: 1234, dport: 80, protocol: 6 };
  const tuple = wire.fiveTuple('10.1.1.1', '10.2.2.2', 4000, 443, 6, 1500, 3);
  switch (version) {
    case 'netflow5':
      return [wire.netflow5({ seq: 0 }, [f5]), wire.netflow5({ seq: 7, sampling: 0x4000 | 64 }, [f5, { ...f5, protocol: 17 }, f5])];
    case 'netflow9':
      return [
        wire.netflow9({ seq: 1 }, wire.set(0, wire.templateRecord(256, wire.FIVE_TUPLE)), wire.set(256, tuple, tuple)),
        wire.netflow9(
          { seq: 2 },
          wire.set(
            1,
            wire.v9OptionsTemplate(
              257,
              [[2, 4]],
              [
                [34, 4],
                [82, 8],
              ],
            ),
          ),
          wire.set(257, wire.u32(3), wire.u32(100), Buffer.from('ge-0/0/1')),
          wire.set(0, wire.templateRecord(258, [...wire.FIVE_TUPLE, [10, 4], [22, 4], [21, 4]])),
          wire.set(258, tuple, wire.u32(3), wire.u32(90_000), wire.u32(99_000)),
        ),
      ];
    case 'ipfix':
      return [
        wire.ipfix({ seq: 0 }, wire.set(2, wire.templateRecord(256, wire.FIVE_TUPLE)), wire.set(256, tuple, tuple)),
        wire.ipfix(
          { seq: 5 },
          wire.set(
            2,
            wire.templateRecord(300, [
              [8, 4],
              [1, 4],
              [82, 65535],
              [12, 65535, 29305],
              [152, 8],
              [27, 16],
            ]),
          ),
          wire.set(
            3,
            wire.ipfixOptionsTemplate(
              301,
              [[143, 4]],
              [
                [160, 8],
                [305, 4],
                [306, 4],
              ],
            ),
          ),
          wire.set(301, wire.u32(1), wire.u64(1_780_000_000_000), wire.u32(1), wire.u32(9)),
          wire.set(
            300,
            wire.ip4('10.0.0.1'),
            wire.u32(5000),
            wire.varlen(Buffer.from('eth0')),
            wire.varlen(Buffer.alloc(300, 7)),
            wire.u64(1_780_000_000_000),
            Buffer.alloc(16, 1),
          ),
          wire.set(2, wire.u16(256), wire.u16(0)),
        ),
      ];
    case 'sflow': {
      const frame = Buffer.from('0200000000020200000000010800450000280001000040060000' + '0a000001' + '0a000002' + '04d20050' + '00'.repeat(16), 'hex');
      return [
        wire.sflow({ seq: 1 }, wire.flowSample({ seq: 1, rate: 512 }, wire.sampledHeader(frame))),
        wire.sflow(
          { seq: 2 },
          wire.counterSample({ seq: 4, ifIndex: 9, inOctets: 2 ** 40, outOctets: 77 }),
          wire.flowSample({ seq: 2, rate: 1 }, wire.sampledHeader(frame.subarray(0, 20))),
        ),
      ];
    }
  }
}

/** One flow decoder on one datagram, with a template state of its own (each input is a whole exchange). */
function flowTarget(version: 'netflow5' | 'netflow9' | 'ipfix' | 'sflow'): Target {
  const decode = version === 'netflow5' ? decodeNetflow5 : version === 'sflow' ? decodeSflow : decodeTemplated;
  return {
    name: `flow-${version}`,
    about: `flow: one ${version} datagram through its decoder (src/plugins/connectors/flow/), templates and data in the same datagram`,
    style: 'bytes',
    seedSource: 'datagrams built by test/helpers/flow-wire.ts from the specifications (templates, options, variable-length and enterprise fields)',
    seeds: () => flowSeeds(version),
    expected: (e) => e instanceof FlowDecodeError,
    run(input) {
      const records = decode(input, '192.0.2.1', new FlowState(), 0);
      checkJson(records);
      return `ok:${Math.min(records.length, 5)}:${Object.keys(records[0] ?? {}).length}`;
    },
  };
}

function remoteWriteTarget(): Target {
  return {
    name: 'prometheus-rw',
    about:
      'Prometheus remote-write: the input as the protobuf WriteRequest (snappy-compressed, then checked and decoded as the source does), and as a raw body',
    style: 'bytes',
    seedSource: 'WriteRequests built by encodeWriteRequest (src/plugins/connectors/prometheus_rw/decode.ts) as test/connectors/prometheus_rw.test.ts does',
    seeds: () => [
      encodeWriteRequest([]),
      encodeWriteRequest([{ labels: { __name__: 'up', job: 'node', instance: 'h:9100' }, samples: [{ value: 1, timestamp_ms: 1764230400000 }] }]),
      encodeWriteRequest([
        {
          labels: { __name__: 'if_in_octets', ifName: 'Gi0/1' },
          samples: [0, 1.5, -1, NaN, Infinity, 2 ** 53].map((value, i) => ({ value, timestamp_ms: 1764230400000 + i * 1000 })),
        },
        { labels: { __name__: 'h', le: '+Inf' }, samples: [{ value: 7, timestamp_ms: -1000 }] },
      ]),
    ],
    expected: (e) => e instanceof RemoteWriteError,
    run(input) {
      let raw = 'raw-ok';
      try {
        uncompress(input);
      } catch (e) {
        if (!(e instanceof RemoteWriteError)) throw e;
        raw = 'raw-bad';
      }
      const body = uncompress(Buffer.from(snappy.compress(input)));
      // As the source: with the ceiling on the records' size (a series' labels copied per sample).
      const maxOutput = loadSettings().PROMETHEUS_RW_MAX_OUTPUT_BYTES;
      checkWriteRequest(body, maxOutput);
      let n = 0;
      const ignored = decodeWriteRequest(
        body,
        (r) => {
          checkJson(r);
          n++;
        },
        maxOutput,
      );
      // Which kinds were skipped, not how many: a count per feature filled the corpus with near-copies.
      const skipped = Object.entries(ignored).flatMap(([k, v]) => (v ? [k] : []));
      return `${raw}:${Math.min(n, 4)}:${skipped.join(',')}`;
    },
  };
}

function otlpTarget(): Target {
  const enc = (signal: 'logs' | 'metrics' | 'traces', o: Record<string, unknown>) => {
    const t = requestType(signal);
    return Buffer.from(t.encode(t.fromObject(o)).finish());
  };
  const attrs = [
    { key: 'host.name', value: { stringValue: 'rtr1' } },
    {
      key: 'if',
      value: { arrayValue: { values: [{ intValue: 1 }, { doubleValue: 2.5 }, { kvlistValue: { values: [{ key: 'k', value: { boolValue: true } }] } }] } },
    },
  ];
  // The first byte picks the signal (and JSON); the rest is the body, walked and decoded as the source does.
  const tagged = (i: number, b: Buffer) => Buffer.concat([Buffer.from([i]), b]);
  return {
    name: 'otlp',
    about:
      'otlp source: the input (its first byte picks logs, metrics or traces, and protobuf or JSON) walked by walk.ts and decoded into records as the source does; a metrics input also read by the one pass (scan.ts), which must give the same records or leave it to the general path',
    style: 'bytes',
    seedSource: 'export requests built with the vendored OTLP definitions as test/connectors/otlp-source.test.ts builds them',
    seeds: () => [
      tagged(
        1,
        enc('metrics', {
          resourceMetrics: [
            {
              resource: { attributes: attrs },
              scopeMetrics: [
                {
                  scope: { name: 's' },
                  metrics: [
                    {
                      name: 'm',
                      sum: { isMonotonic: true, aggregationTemporality: 2, dataPoints: [{ asInt: 5, timeUnixNano: '1767322800000000000', attributes: attrs }] },
                    },
                    { name: 'h', histogram: { dataPoints: [{ count: 3, bucketCounts: [1, 2], explicitBounds: [1] }] } },
                  ],
                },
              ],
            },
          ],
        }),
      ),
      tagged(
        0,
        enc('logs', {
          resourceLogs: [
            {
              scopeLogs: [
                {
                  logRecords: [{ body: { stringValue: 'x' }, severityNumber: 9, traceId: Buffer.alloc(16, 1), spanId: Buffer.alloc(8, 2), attributes: attrs }],
                },
              ],
            },
          ],
        }),
      ),
      tagged(
        2,
        enc('traces', {
          resourceSpans: [
            {
              scopeSpans: [
                {
                  spans: [
                    {
                      traceId: Buffer.alloc(16, 1),
                      spanId: Buffer.alloc(8, 2),
                      name: 'p',
                      kind: 3,
                      events: [{ name: 'e' }],
                      links: [{ traceId: Buffer.alloc(16, 3) }],
                    },
                  ],
                },
              ],
            },
          ],
        }),
      ),
      // Gauges and sums only: the one pass (scan.ts) takes these, flat (1) and nested (9).
      ...[1, 9].map((tag) =>
        tagged(
          tag,
          enc('metrics', {
            resourceMetrics: [
              {
                resource: { attributes: attrs },
                scopeMetrics: [
                  {
                    scope: { name: 's', version: '1', attributes: attrs.slice(0, 1) },
                    metrics: [
                      {
                        name: 'g',
                        unit: 'By',
                        gauge: { dataPoints: [{ asDouble: 1.5, timeUnixNano: '1767322800000000000', attributes: attrs }, { asInt: -3 }] },
                      },
                      {
                        name: 's',
                        sum: { isMonotonic: true, aggregationTemporality: 1, dataPoints: [{ asInt: '9007199254740993', startTimeUnixNano: '1', flags: 1 }] },
                      },
                    ],
                  },
                ],
              },
            ],
          }),
        ),
      ),
      tagged(
        5,
        Buffer.from(
          JSON.stringify({
            resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'g', gauge: { dataPoints: [{ asDouble: 1.5, timeUnixNano: '1' }] } }] }] }],
          }),
        ),
      ),
    ],
    expected: (e) => e instanceof OtlpDecodeError,
    run(input) {
      if (input.length === 0) return 'empty';
      const signal = SIGNALS[input[0]! % 3]!;
      const json = (input[0]! & 4) !== 0;
      let body = input.subarray(1);
      if (json) body = jsonToProtobuf(signal, Buffer.from(body));
      // Small output cap, so that the expansion bound is reached by inputs of fuzzing size.
      const cap = 1 << 20;
      const layout = input[0]! & 8 ? 'nested' : 'flat';
      // The one pass on the same bytes: whatever the general path makes of them, it must agree.
      const scanned = signal === 'metrics' ? scanMetrics(body, cap, layout) : undefined;
      let w;
      try {
        w = walkRequest(signal, body, cap);
      } catch (e) {
        if (scanned) throw new Error(`the one pass took a body the walk refuses: ${(e as Error).message}`, { cause: e });
        throw e;
      }
      const lines: string[] = [];
      decodeRequest(signal, body, { layout }, (r) => {
        checkJson(r);
        lines.push(JSON.stringify(r));
      });
      const n = lines.length;
      if (n !== w.records - w.refused) throw new Error(`walk counted ${w.records - w.refused} records, decode made ${n}`);
      if (scanned) {
        const mine = scanned.records.map((r) => JSON.stringify(r));
        const differs = mine.length !== n || mine.some((l, i) => l !== lines[i]);
        if (differs) throw new Error(`the one pass made ${mine.length} records, the general path ${n}, or other ones`);
        if (JSON.stringify(scanned.walk) !== JSON.stringify(w)) throw new Error('the one pass counted otherwise than the walk');
      }
      return `${signal}:${json ? 'json' : 'pb'}:${Math.min(n, 4)}:${w.refused ? 'refused' : ''}${scanned ? ':scan' : ''}`;
    },
  };
}

function exposition(): Target {
  // Small limits, so that the bounds are reached by inputs of fuzzing size.
  const limits = { maxSamples: 500, maxLabels: 8, maxLabelNameBytes: 32, maxLabelValueBytes: 64, maxLineBytes: 512, maxFamilies: 50 };
  const run = (text: string, format: 'text' | 'openmetrics'): string => {
    let n = 0;
    try {
      parseExposition(text, format, limits, (s) => {
        checkJson({ ...s, value: sampleValue(s.value) });
        n++;
      });
    } catch (e) {
      if (!(e instanceof ExpositionError)) throw e;
      // The reason without its line number and quoted input: the kind of error is the feature.
      return `${format}:err:${norm(
        e.message
          .replace(/^line \d+: /, '')
          .replace(/"[^"]*"/g, '""')
          .slice(0, 30),
      )}`;
    }
    return `${format}:${Math.min(n, 4)}`;
  };
  return {
    name: 'prometheus-exposition',
    about: 'prometheus_scrape: the input as a /metrics body in the text format 0.0.4 and in OpenMetrics (parseExposition with small bounds)',
    style: 'text',
    seedSource: 'bodies in the shape of node_exporter, Prometheus and OpenMetrics exposition, as test/connectors/prometheus_scrape.test.ts has them',
    seeds: () =>
      [
        '# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu="0",mode="idle"} 81234.56\nnode_cpu_seconds_total{cpu="0",mode="user"} 1.5e3\n',
        '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 3\nh_sum 0.5\nh_count 3\n# TYPE s summary\ns{quantile="0.5"} NaN\ns_count 0\n\nweird { a = "x\\"y\\\\z\\n" , } +Inf 123\nneg -Inf\n',
        '# TYPE req counter\n# UNIT req requests\n# HELP req Requests \\"served\\".\nreq_total{path="/"} 5 1700000000.5 # {trace_id="abc"} 1 1700000000.1\nreq_created{path="/"} 1700000000\n# EOF\n',
        'm{job="theirs",instance="x",k="v"} 1 1700000000000\n',
      ].map((t) => Buffer.from(t)),
    expected: (e) => e instanceof ExpositionError,
    run(input) {
      const text = input.toString('utf8');
      return `${run(text, 'text')}|${run(text, 'openmetrics')}`;
    },
  };
}

/** The reply type the CORBA target decodes: a list of measurements as a PM interface might return. */
const CORBA_TYPE = parseType({
  sequence: { struct: { name: 'string', value: 'double', count: 'ulonglong', tags: { sequence: 'string' }, state: { enum: ['UP', 'DOWN'] } } },
});

/** A GIOP 1.2 Reply (little-endian) whose body is `value` as CORBA_TYPE. */
function giopReply(value: unknown): Buffer {
  const w = new CdrWriter(true);
  w.raw(Buffer.from('GIOP'));
  for (const o of [1, 2, 1, MSG.Reply]) w.octet(o);
  w.ulong(0);
  w.ulong(7); // request id
  w.ulong(0); // NO_EXCEPTION
  w.ulong(0); // no service contexts
  w.align(8);
  encodeValue(w, CORBA_TYPE, value);
  const b = Buffer.from(w.bytes());
  b.writeUInt32LE(b.length - 12, 8);
  return b;
}

function corbaTarget(): Target {
  return {
    name: 'corba-giop',
    about:
      'CORBA: a TCP stream from the server cut into GIOP messages by the GiopFramer (in two reads, fragments joined, 64 KB limit), each Reply decoded and its body read as a sequence of structs (CDR)',
    style: 'bytes',
    seedSource: "Replies built with the connector's CdrWriter and encodeValue (src/plugins/connectors/corba/cdr.ts), whole and cut into GIOP 1.2 fragments",
    seeds: () => {
      const one = giopReply([{ name: 'ifInOctets', value: 1.5, count: 7n, tags: ['a', 'b'], state: 'UP' }]);
      const many = giopReply(Array.from({ length: 5 }, (_, i) => ({ name: `c${i}`, value: i, count: BigInt(i), tags: [], state: i % 2 ? 'UP' : 'DOWN' })));
      // The first 24 bytes of the body in the first message (flag "more"), the rest in a Fragment.
      const first = Buffer.from(many.subarray(0, 36));
      first[6] = 3;
      first.writeUInt32LE(24, 8);
      const frag = Buffer.concat([Buffer.from([0x47, 0x49, 0x4f, 0x50, 1, 2, 1, MSG.Fragment, 0, 0, 0, 0, 7, 0, 0, 0]), many.subarray(36)]);
      frag.writeUInt32LE(frag.length - 12, 8);
      return [one, many, Buffer.concat([one, many]), Buffer.concat([first, frag])];
    },
    expected: (e) => e instanceof GiopError || e instanceof CdrError,
    run(input) {
      const framer = new GiopFramer(64 << 10);
      const cut = Math.floor(input.length / 2);
      const msgs = [...framer.push(input.subarray(0, cut)), ...framer.push(input.subarray(cut))];
      const out: string[] = [];
      for (const m of msgs) {
        if (m[7] !== MSG.Reply) {
          out.push(`type${m[7]}`);
          continue;
        }
        const r = decodeReply(m);
        const v = r.status === 'NO_EXCEPTION' ? decodeValue(r.body, CORBA_TYPE) : r.status;
        checkJson(v);
        out.push(Array.isArray(v) ? `n${Math.min(v.length, 4)}` : String(v));
      }
      return out.slice(0, 4).join('|');
    },
  };
}

type Codec = { responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): SubscribeResponse };

function gnmiTarget(): Target {
  let codec: Codec | undefined;
  const load = async () => {
    const loader = await import('@grpc/proto-loader');
    const def = loader.fromJSON(GNMI_DESCRIPTOR as never, LOADER_OPTIONS) as unknown as Record<string, Record<string, Codec>>;
    return (codec ??= def['gnmi.gNMI']!.Subscribe!);
  };
  return {
    name: 'gnmi',
    about: 'gNMI: a SubscribeResponse as the gRPC stream delivers it (protobuf, proto-loader options of the client), then its records and TypedValues',
    style: 'bytes',
    seedSource: "the TypedValues of test/connectors/gnmi.test.ts in SubscribeResponses, serialised with the client's descriptor",
    async seeds() {
      const c = await load();
      const vals = [
        { string_val: 'up' },
        { int_val: '-9223372036854775808' },
        { uint_val: '18446744073709551615' },
        { bool_val: false },
        { bytes_val: Buffer.from([0, 1, 254]) },
        { float_val: 1.1 },
        { double_val: 0.3 },
        { decimal_val: { digits: '-12345', precision: 2 } },
        { leaflist_val: { element: [{ string_val: 'a' }, { uint_val: '7' }] } },
        { any_val: { type_url: 'type.googleapis.com/x.Y', value: Buffer.from('hi') } },
        { json_val: Buffer.from('{"in":18446744073709551615,"name":"eth0"}') },
        { json_ietf_val: Buffer.from('{"a:b":true}') },
        { ascii_val: 'x' },
      ];
      const path = { origin: 'openconfig', elem: [{ name: 'interfaces' }, { name: 'interface', key: { name: 'eth0' } }, { name: 'state' }] };
      return [
        c.responseSerialize({ sync_response: true }),
        ...vals.map((val) =>
          c.responseSerialize({
            update: {
              timestamp: '1764230400000000000',
              prefix: { target: 'rtr1', ...path },
              update: [{ path: { elem: [{ name: 'leaf' }] }, val, duplicates: 2 }],
              delete: [path],
            },
          }),
        ),
      ];
    },
    // grpc-js catches what the deserializer throws (the stream ends with INTERNAL), so any error
    // of protobufjs there is the format's own; the records built after it must not throw.
    expected: (e) => !(e instanceof ContractBroken),
    async run(input) {
      const c = codec ?? (await load());
      const msg = c.responseDeserialize(input);
      try {
        if (!msg.update) return `no-update:${msg.response}`;
        const recs = notificationRecords(msg.update, '192.0.2.1:57400');
        checkJson(recs);
        return recs
          .map((r) => `${r.type}`)
          .slice(0, 4)
          .join(',');
      } catch (e) {
        if (e instanceof ContractBroken) throw e;
        throw new ContractBroken(`records of a decoded SubscribeResponse threw ${(e as Error).name}: ${(e as Error).message}`, { cause: e });
      }
    },
  };
}

// ---- the list ---------------------------------------------------------------------------------

const SCHEMAS = at('examples', 'schemas');
const PM_XML = at('templates', 'testdata', 'A20261126.1000+0100-1015+0100_gNB-Paris-01.xml');
const avroCfg = { schema_file: join(SCHEMAS, 'interface.avsc'), use_magic_bytes: false };
const protoCfg = { schema_file: join(SCHEMAS, 'interface.proto'), message_class: 'Interface' };
const PROTO_RECORDS = SAMPLE_RECORDS.map((r, i) => ({ host: r.host, if_index: i, in_octets: String(r.ifInOctets), oper_status: i % 3 }));
const AVRO_RECORDS = SAMPLE_RECORDS.map((r, i) => ({ host: r.host, ifIndex: i, ifInOctets: r.ifInOctets }));
const fromDocs = "the serializer's documented examples";
const fromEncoder = "examples/data/interfaces.ndjson written by the serializer's own encoder";

export const TARGETS: Target[] = [
  snmpAgentTarget(),
  snmpTrapTarget(),
  ...(['ber', 'der', 'per', 'uper', 'xer', 'jer'] as const).map(asn1Target),
  serializerTarget('pm_xml', pmXml, {}, 'text', `${fromDocs} and templates/testdata/*.xml`, () => [...exampleInputs(pmXml), readFileSync(PM_XML)]),
  serializerTarget('xml', xml, {}, 'text', `${fromDocs}, ${fromEncoder}`, () => [...exampleInputs(xml), ...encoded(xml, {})]),
  serializerTarget('csv', csv, {}, 'text', `${fromDocs}, ${fromEncoder}`, () => [...exampleInputs(csv), ...encoded(csv, {})]),
  serializerTarget('ndjson', ndjson, {}, 'text', `${fromDocs} and examples/data/interfaces.ndjson`, () => [
    ...exampleInputs(ndjson),
    Buffer.from(
      lines(at('examples', 'data', 'interfaces.ndjson'))
        .slice(0, 30)
        .join('\n'),
    ),
  ]),
  serializerTarget('json', json, {}, 'text', `${fromDocs}, ${fromEncoder}, the VES schema (test/fixtures/ves)`, () => [
    ...exampleInputs(json),
    ...encoded(json, {}),
    readFileSync(at('test', 'fixtures', 'ves', 'CommonEventFormat_30.1.1.json')).subarray(0, 60000),
  ]),
  serializerTarget('msgpack', msgpack, {}, 'bytes', `${fromDocs}, ${fromEncoder}`, () => [...exampleInputs(msgpack), ...encoded(msgpack, {})]),
  serializerTarget('avro-container', avro, avroCfg, 'bytes', `${fromEncoder} (container files, null, deflate and snappy codecs)`, () => [
    ...encoded(avro, avroCfg, AVRO_RECORDS as never).slice(0, 2),
    ...(['deflate', 'snappy'] as const).flatMap((codec) => encoded(avro, { ...avroCfg, codec }, AVRO_RECORDS as never).slice(0, 1)),
  ]),
  serializerTarget('avro-datum', avro, avroCfg, 'bytes', `${fromDocs}, single datums of ${fromEncoder}`, () => [
    ...exampleInputs(avro).slice(0, 1),
    ...encoded(avro, avroCfg, AVRO_RECORDS as never).slice(2),
  ]),
  serializerTarget('protobuf', protobuf, protoCfg, 'bytes', `${fromDocs}, ${fromEncoder} (length-delimited)`, () => [
    ...exampleInputs(protobuf),
    ...encoded(protobuf, protoCfg, PROTO_RECORDS as never),
  ]),
  serializerTarget(
    'protobuf-single',
    protobuf,
    { ...protoCfg, framing: 'none', use_magic_bytes: false },
    'bytes',
    `${fromDocs}, single messages of ${fromEncoder}`,
    () => encodedOnes(protobuf, { ...protoCfg, framing: 'none', use_magic_bytes: false }, PROTO_RECORDS.slice(0, 6) as never),
  ),
  serializerTarget('parquet', parquet, {}, 'bytes', `${fromDocs} (written by @dsnp/parquetjs), ${fromEncoder} (snappy, gzip, none)`, () => [
    ...exampleInputs(parquet),
    ...(['snappy', 'gzip', 'none'] as const).flatMap((compression) => encoded(parquet, { compression }).slice(1)),
  ]),
  mibTarget(),
  yamlTarget(),
  exprTarget(),
  syslogTarget(),
  flowTarget('netflow5'),
  flowTarget('netflow9'),
  flowTarget('ipfix'),
  flowTarget('sflow'),
  remoteWriteTarget(),
  otlpTarget(),
  exposition(),
  gnmiTarget(),
  corbaTarget(),
];

export const targetNamed = (name: string): Target | undefined => TARGETS.find((t) => t.name === name);
