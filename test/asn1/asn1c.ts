// Independent test vectors from Debian's asn1c: the schema is compiled with
// `asn1c -fcompound-names -gen-PER -pdu=all` (every type can be encoded, not only unreferenced ones) and linked with fixtures/svc_asn1enc.c, which reads XER values
// (xer_decode) and writes them with der_encode, xer_encode or uper_encode. Builds are cached in the
// temp directory by a hash of the module texts.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const PROGRAM = join(import.meta.dirname, 'fixtures', 'svc_asn1enc.c');
const ASN1C_ARGS = ['-fcompound-names', '-gen-PER', '-pdu=all'];

function asnFiles(path: string): string[] {
  const abs = resolve(path);
  return statSync(abs).isDirectory()
    ? readdirSync(abs)
        .filter((f) => /\.asn1?$/.test(f))
        .sort()
        .map((f) => join(abs, f))
    : [abs];
}

/** Path of the built encoder for these module files (built once per content). */
export function asn1cEncoder(schema: string): string {
  const files = asnFiles(schema);
  const h = createHash('sha256').update(ASN1C_ARGS.join(' '));
  for (const f of [...files, PROGRAM]) h.update(readFileSync(f));
  const dir = join(tmpdir(), `svc-asn1c-${h.digest('hex').slice(0, 16)}`);
  const bin = join(dir, 'svc_asn1enc');
  if (existsSync(bin)) return bin;
  const work = `${dir}.${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  execFileSync('asn1c', [...ASN1C_ARGS, ...files], { cwd: work, stdio: 'pipe' });
  const sources = readdirSync(work).filter((f) => f.endsWith('.c') && f !== 'converter-sample.c');
  execFileSync('gcc', ['-O1', '-w', '-I.', '-DASN_PDU_COLLECTION', '-o', 'svc_asn1enc', ...sources, PROGRAM, '-lm'], { cwd: work, stdio: 'pipe' });
  try {
    renameSync(work, dir);
  } catch {
    rmSync(work, { recursive: true, force: true }); // another process built it first
  }
  return bin;
}

/** Encodes XER values of `pdu` with asn1c: one Buffer per value. */
export function asn1cEncode(schema: string, pdu: string, format: 'der' | 'xer' | 'uper', xerValues: string[]): Buffer[] {
  let out: Buffer;
  try {
    out = execFileSync(asn1cEncoder(schema), [pdu, format], { input: xerValues.join('\f'), maxBuffer: 256 << 20, stdio: 'pipe' });
  } catch (err) {
    throw new Error(`asn1c encoder: ${String((err as { stderr?: Buffer }).stderr ?? err)}`, { cause: err });
  }
  const list: Buffer[] = [];
  for (let p = 0; p < out.length; ) {
    const n = out.readUInt32BE(p);
    list.push(out.subarray(p + 4, p + 4 + n));
    p += 4 + n;
  }
  if (list.length !== xerValues.length) throw new Error(`asn1c encoded ${list.length} of ${xerValues.length} values`);
  return list;
}
