// ASN.1 benchmark: a file of 1M concatenated BER charging records (3GPP TS 32.298 style,
// examples/schemas/cdr) decoded with split_records to NDJSON through runPipeline (target >= 100,000
// records/s). The input is written by a small Python BER writer in prepare (not timed).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DATA_DIR } from './data.js';
import { rate, runBench } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const RECORDS = 1_000_000;
const SCHEMA = join(process.cwd(), 'examples', 'schemas', 'cdr');

// Tag-length-value writer for CallEventRecord: 2/3 PGW records with 1-4 service data containers,
// 1/3 SGW records; every 10th record uses indefinite lengths (as CER writers do).
const GENERATOR = String.raw`
import sys
def length(n):
    if n < 128: return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, 'big')
    return bytes([0x80 | len(b)]) + b
def tag(n, cons, cls=0x80):
    first = cls | (0x20 if cons else 0)
    if n < 31: return bytes([first | n])
    out = [n & 0x7f]; n >>= 7
    while n: out.append(0x80 | (n & 0x7f)); n >>= 7
    return bytes([first | 0x1f]) + bytes(reversed(out))
def tlv(n, content, cons=False, cls=0x80, indef=False):
    if indef: return tag(n, True, cls) + b'\x80' + content + b'\x00\x00'
    return tag(n, cons, cls) + length(len(content)) + content
def integer(v):
    return v.to_bytes(max(1, (v.bit_length() + 8) // 8), 'big', signed=True)
def ipv4(i): return tlv(0, bytes([10, 0, (i >> 8) & 255, i & 255]))
def tbcd(d):
    if len(d) % 2: d += 'f'
    return bytes.fromhex(''.join(d[k + 1] + d[k] for k in range(0, len(d), 2)))
def record(i):
    ind = i % 10 == 9
    ts = bytes.fromhex('2311%02d1230452b0100' % (1 + i % 28))
    f = [tlv(0, integer(85 if i % 3 else 84)), tlv(3, tbcd('262019%09d' % i)),
         tlv(4, ipv4(i), True), tlv(5, integer(4000000000 + i)), tlv(6, ipv4(i + 1), True, indef=ind),
         tlv(7, b'ims.mnc001.mcc262.gprs'), tlv(13, ts), tlv(14, integer(i % 3600)), tlv(15, integer(i % 2 * 16)),
         tlv(22, tbcd('4917%08d' % i)), tlv(23, b'\x08\x00'), tlv(30, integer(6))]
    if i % 3 == 0:
        return tlv(78, b''.join(f), True, indef=ind)
    conts = []
    for k in range(1 + i % 4):
        c = [tlv(1, integer(100 + k)), tlv(8, b'\x06\x00\x40'), tlv(12, integer(i * 1000 + k)), tlv(13, integer((i * 1000 + k) * 7)), tlv(14, ts)]
        conts.append(tlv(16, b''.join(c), True, cls=0, indef=ind))
    f.append(tlv(34, b''.join(conts), True, indef=ind))
    f.append(tlv(35, tlv(10, b'\x02', cls=0), True))
    return tlv(79, b''.join(f), True, indef=ind)
out, n = sys.argv[1], int(sys.argv[2])
with open(out, 'wb') as fh:
    buf = []
    for i in range(n):
        buf.append(record(i))
        if len(buf) == 10000:
            fh.write(b''.join(buf)); buf = []
    fh.write(b''.join(buf))
`;

export function cdrFile(records: number): string {
  const dir = join(DATA_DIR, `asn1-cdr-${records}`);
  const file = join(dir, 'cdr.ber');
  if (existsSync(file) && statSync(file).size > 0) return file;
  mkdirSync(dir, { recursive: true });
  execFileSync('python3', ['-c', GENERATOR, file + '.tmp', String(records)], { stdio: 'inherit' });
  execFileSync('mv', [file + '.tmp', file]);
  return file;
}

async function run(threads: number): Promise<Measured> {
  const input = cdrFile(RECORDS);
  const r = await runBench({
    name: 'asn1-cdr',
    threads,
    dir: dirname(input),
    pattern: '*.ber',
    serializerIn: `{ type: asn1, schema_file: ${JSON.stringify(SCHEMA)}, message_class: CallEventRecord, split_records: true }`,
    expected: RECORDS,
  });
  return {
    ...rate(r),
    input_mb: Math.round(statSync(input).size / 1e6),
    cpu_seconds: Number(r.cpuSeconds.toFixed(3)),
    records_per_cpu_sec: Math.round(r.record.records_in / r.cpuSeconds),
  };
}

export const asn1Cdr: Scenario = {
  threads: [1, 2],
  prepare: async () => void cdrFile(RECORDS),
  run,
};
