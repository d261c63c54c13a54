// `svc pipelines|runs|dlq|top|tap ...`: commands that call a running daemon's API (SVC_API_URL, SVC_API_KEY).
import { readSetting } from '../settings.js';
import { dlqCommand } from './dlq.js';
import { pipelinesCommand, ProxyError, runsCommand } from './proxy.js';

/** SVC_API_URL, or the address the daemon with this environment listens on (SVC_HOST, SVC_PORT). */
const apiUrl = () => readSetting('API_URL');
const apiKey = () => process.env.SVC_API_KEY || undefined;
const out = (s: string) => void process.stdout.write(s);

/** A ProxyError (the daemon's answer, or no answer) as one line and exit 1; anything else is a bug. */
function reported(e: unknown): number {
  if (!(e instanceof ProxyError)) throw e;
  process.stderr.write(`svc: ${e.message}\n`);
  return 1;
}

export async function cmdProxy(
  cmd: 'pipelines' | 'runs',
  args: string[],
  values: { json?: boolean; pipeline?: string; status?: string; limit?: string },
): Promise<number> {
  const ctx = { url: apiUrl(), apiKey: apiKey(), json: !!values.json, out };
  try {
    if (cmd === 'pipelines') await pipelinesCommand(args, ctx);
    else await runsCommand(args, values, ctx);
    return 0;
  } catch (e) {
    return reported(e);
  }
}

export function cmdDlq(args: string[]): Promise<number> {
  return dlqCommand(args, { url: apiUrl(), apiKey: apiKey(), out }).catch(reported);
}

// top and tap are loaded when they run: tap brings the WebSocket client, which no other command needs.
export async function cmdTop(args: string[]): Promise<number> {
  return (await import('./top.js')).topCommand(args, { url: apiUrl(), apiKey: apiKey(), out }).catch(reported);
}

export async function cmdTap(args: string[]): Promise<number> {
  return (await import('./tap.js')).tapCommand(args, { url: apiUrl(), apiKey: apiKey() }).catch(reported);
}
