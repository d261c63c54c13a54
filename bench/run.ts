// `npm run bench [-- NAME...]`: one JSON line per scenario and thread count, each measured in a
// fresh child process: {scenario, thread_workers, records, seconds, records_per_sec, peak_rss_mb}.
// It runs compiled JavaScript (tsconfig.bench.json), as users run svc, not through a TS loader.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { scenarios } from './scenarios.js';

const [mode, name, threadsArg] = process.argv.slice(2);

if (mode === '--child') {
  const s = scenarios[name!]!;
  const threads = Number(threadsArg);
  const m = await s.run(threads);
  const peak = process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
  const line = { scenario: name, ...(s.threads ? { thread_workers: threads } : {}), ...m, peak_rss_mb: Math.round(peak) };
  process.stdout.write(JSON.stringify(line) + '\n');
  // Daemons, pools and sockets of the scenario must not keep the child alive.
  process.exit(0);
} else {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = wanted.filter((w) => !scenarios[w]);
  if (unknown.length) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}\n`);
    process.exit(64);
  }
  const self = fileURLToPath(import.meta.url);
  for (const n of wanted.length ? wanted : Object.keys(scenarios).filter((k) => !scenarios[k]!.hidden)) {
    const s = scenarios[n]!;
    process.stderr.write(`preparing ${n}...\n`);
    await s.prepare?.();
    for (const t of s.threads ?? [1]) {
      const line = execFileSync(process.execPath, [self, '--child', n, String(t)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      process.stdout.write(line);
    }
  }
}
