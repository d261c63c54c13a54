// Command-line options of `npm run soak`: the run length and the steady rates of each stream.
import { parseArgs } from 'node:util';
import { join } from 'node:path';

export interface SoakOptions {
  minutes: number;
  /** Syslog datagrams per second (UDP into NDJSON). */
  syslogRate: number;
  /** SNMPv2c traps per second (into Kafka). */
  trapRate: number;
  /** Webhook requests per second (one record each, into PostgreSQL). */
  webhookRate: number;
  /** Simulated agents polled every pollSeconds (into counter_delta and InfluxDB). */
  agents: number;
  pollSeconds: number;
  /** Seconds between samples. */
  sampleSeconds: number;
  /** Longest wait, after the load stops, for the sinks to hold every record. */
  drainSeconds: number;
  /** `dist`: node dist/cli/main.js (run `npm run build` first); `tsx`: the sources through tsx. */
  daemon: 'dist' | 'tsx';
  /** Where samples, summary, plot and the daemon's log go. */
  out: string;
}

const HELP = `npm run soak -- [options]
  --minutes N          run length (default 60; CI runs 3)
  --syslog-rate N      syslog datagrams/s over UDP into NDJSON (default 500)
  --trap-rate N        SNMPv2c traps/s into Kafka (default 100)
  --webhook-rate N     webhook requests/s into PostgreSQL (default 50)
  --agents N           simulated agents polled (default 200)
  --poll-seconds N     poll interval (default 10)
  --sample-seconds N   sampling interval (default 10)
  --drain-seconds N    longest wait for the sinks after the load stops (default 60)
  --daemon dist|tsx    dist/cli/main.js (default; needs npm run build) or src through tsx
  --out DIR            results (default test-results/soak)`;

export function parseOptions(argv: string[], root: string): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: 'string', default: '60' },
      'syslog-rate': { type: 'string', default: '500' },
      'trap-rate': { type: 'string', default: '100' },
      'webhook-rate': { type: 'string', default: '50' },
      agents: { type: 'string', default: '200' },
      'poll-seconds': { type: 'string', default: '10' },
      'sample-seconds': { type: 'string', default: '10' },
      'drain-seconds': { type: 'string', default: '60' },
      daemon: { type: 'string', default: 'dist' },
      out: { type: 'string', default: join(root, 'test-results', 'soak') },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP + '\n');
    process.exit(0);
  }
  const num = (name: keyof typeof values, min: number) => {
    const v = Number(values[name]);
    if (!Number.isFinite(v) || v < min) throw new Error(`--${name} must be a number >= ${min}, got ${values[name]}`);
    return v;
  };
  const daemon = values.daemon;
  if (daemon !== 'dist' && daemon !== 'tsx') throw new Error(`--daemon must be dist or tsx, got ${daemon}`);
  return {
    minutes: num('minutes', 0.5),
    syslogRate: num('syslog-rate', 1),
    trapRate: num('trap-rate', 1),
    webhookRate: num('webhook-rate', 1),
    agents: Math.floor(num('agents', 1)),
    pollSeconds: Math.floor(num('poll-seconds', 1)),
    sampleSeconds: num('sample-seconds', 1),
    drainSeconds: num('drain-seconds', 1),
    daemon,
    out: values.out!,
  };
}
