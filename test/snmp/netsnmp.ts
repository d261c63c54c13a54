// The net-snmp command-line tools with a persistent directory of their own: they otherwise all
// read and rewrite /var/lib/snmp/snmpapp.conf, which concurrent runs (other test files, the
// benchmarks' xargs -P 32) can leave with lines the next v3 request cannot read ("buffer too
// small to read octet string"), failing it. MIBs are not loaded (numeric OIDs).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs a net-snmp tool in a fresh persistent directory; resolves with stdout and stderr (rejects with stderr). */
export function netSnmp(cmd: string, args: string[], timeoutMs = 20_000): Promise<{ stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-netsnmp-'));
  return new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: timeoutMs, maxBuffer: 64 << 20, env: { ...process.env, MIBS: '', MIBDIRS: '/nonexistent', SNMP_PERSISTENT_DIR: dir, SNMPCONFPATH: dir } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`));
        else resolve({ stdout, stderr });
      },
    );
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** netSnmp's stdout. */
export const snmpTool = async (cmd: string, args: string[], timeoutMs?: number): Promise<string> => (await netSnmp(cmd, args, timeoutMs)).stdout;
