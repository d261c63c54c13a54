// Every sample of the daemon: memory and event-loop delay from its /metrics (prom-client's
// default metrics, prefixed svc_process_), RSS and open descriptors from /proc/<pid> as well,
// queue depths and record counters per pipeline; plus what the load generators sent. The API is
// read meanwhile (pipelines and runs every second) by apiReader.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { byLabel, parseProm, scalar } from './prom.js';

export interface Sample {
  /** Seconds since the load started. */
  t: number;
  at: string;
  /** drain: after the load stopped. */
  phase: 'load' | 'drain';
  rss_mb: number;
  /** VmRSS from /proc (the same process, read by the kernel, not by the daemon). */
  proc_rss_mb: number;
  heap_used_mb: number;
  /** V8 heap reserved, and memory of Buffers and other objects outside it: where RSS growth comes from. */
  heap_total_mb: number;
  external_mb: number;
  /** Active libuv handles (sockets, timers, files): a leak of them shows here before the fds. */
  handles: number;
  /** p99 of the event-loop delay since the previous /metrics scrape (prom-client resets it each scrape). */
  eventloop_p99_ms: number;
  eventloop_max_ms: number;
  fds: number;
  /** The same less the connections the soak's HTTP clients keep open to the daemon (openFds): what the flatness rule judges. */
  fds_own: number;
  /** The same descriptors by kind (openFds). */
  fd_kinds: Record<string, number>;
  /** CPU the daemon used since the previous sample, in % of one core. */
  cpu_pct: number;
  /** CPU seconds the daemon used since it started. */
  cpu_s: number;
  /**
   * The same p99 measured in this (soak) process over the same window: a control. When both are
   * high, the machine was busy (other work on its cores), not the daemon's event loop.
   */
  control_p99_ms: number;
  /** 1-minute load average of the machine. */
  loadavg: number;
  queue_depth: Record<string, number>;
  records_in: Record<string, number>;
  records_out: Record<string, number>;
  /** records_out per second since the previous sample, per pipeline. */
  out_per_sec: Record<string, number>;
  dropped: Record<string, number>;
  errors: Record<string, number>;
  dlq: Record<string, number>;
  /** Sequence numbers sent so far, per stream. */
  sent: Record<string, number>;
  api: { requests: number; failures: number; max_ms: number };
}

const MB = 1024 * 1024;

export function procRssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** utime + stime of `pid` in seconds. */
export function cpuSeconds(pid: number): number {
  // Fields after the command name (which may hold spaces): state is the 3rd field, utime the 14th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
}
/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** This process's own event-loop delay (the control of Sample.control_p99_ms), reset at each take(). */
export function controlLoopDelay() {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return {
    take() {
      const p99 = h.count ? h.percentile(99) / 1e6 : NaN;
      h.reset();
      return Math.round(p99 * 10) / 10;
    },
    stop: () => h.disable(),
  };
}

/**
 * The open descriptors of `pid`, by kind: a TCP socket by the port it was accepted on or goes to
 * (with its state when not established: a `close-wait` is one the peer closed and we did not), a
 * UDP socket, a pipe, an anonymous inode (epoll, eventfd) or a file by its directory. `clients`
 * counts the established connections accepted on our listeners: the soak's own HTTP clients (the
 * webhook load, the API reader, the scraper) hold them open in their keep-alive pools, so their
 * number is the clients' choice (a local run went 53 -> 41, all of it there).
 */
export function openFds(pid: number): { total: number; clients: number; kinds: Record<string, number> } {
  const sockets = socketTable(pid);
  const kinds: Record<string, number> = {};
  let total = 0;
  let clients = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while we listed
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    const socket = inode ? sockets.get(inode) : undefined;
    const kind = socket?.kind ?? (inode ? 'socket (unix or other)' : target.startsWith('/') ? `file ${dirname(target)}` : target.replace(/\[\d+\]$/, ''));
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    total++;
    if (socket?.client) clients++;
  }
  return { total, clients, kinds };
}

/** include/net/tcp_states.h, as /proc/net/tcp prints them (01, established, and 0A, listen, are named apart). */
const TCP_STATES: Record<string, string> = {
  '02': 'syn-sent',
  '03': 'syn-recv',
  '04': 'fin-wait1',
  '05': 'fin-wait2',
  '06': 'time-wait',
  '07': 'close',
  '08': 'close-wait',
  '09': 'last-ack',
  '0B': 'closing',
};

/** Socket inode -> kind, from the process's view of /proc/net/{tcp,tcp6,udp,udp6}. */
function socketTable(pid: number): Map<string, { kind: string; client: boolean }> {
  const rows: { proto: string; local: number; remote: number; state: string; inode: string }[] = [];
  const port = (addr: string) => parseInt(addr.split(':')[1]!, 16);
  for (const proto of ['tcp', 'tcp6', 'udp', 'udp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${proto}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 10) rows.push({ proto: proto.replace('6', ''), local: port(f[1]!), remote: port(f[2]!), state: f[3]!, inode: f[9]! });
    }
  }
  // State 0A is LISTEN: a connection on a listening port was accepted by us, any other went out.
  const listening = new Set(rows.filter((r) => r.proto === 'tcp' && r.state === '0A').map((r) => r.local));
  const table = new Map<string, { kind: string; client: boolean }>();
  for (const r of rows) {
    const accepted = listening.has(r.local);
    const state = r.state === '01' ? '' : `, ${TCP_STATES[r.state] ?? r.state}`;
    const kind = r.proto === 'udp' ? 'udp' : r.state === '0A' ? 'tcp listen' : accepted ? `tcp accepted on :${r.local}${state}` : `tcp to :${r.remote}${state}`;
    table.set(r.inode, { kind, client: r.proto === 'tcp' && accepted && r.state === '01' });
  }
  return table;
}

/** Reads /api/pipelines and /api/runs every second; counts requests, failures, the slowest answer. */
export function apiReader(url: string) {
  const stats = { requests: 0, failures: 0, max_ms: 0 };
  let window = { requests: 0, failures: 0, max_ms: 0 };
  const get = async (path: string) => {
    const began = performance.now();
    try {
      const res = await fetch(url + path);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    } catch {
      stats.failures++;
      window.failures++;
    }
    const ms = performance.now() - began;
    stats.requests++;
    window.requests++;
    stats.max_ms = Math.max(stats.max_ms, ms);
    window.max_ms = Math.max(window.max_ms, ms);
  };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void Promise.all([get('/api/pipelines'), get('/api/runs?limit=50')]).finally(() => (busy = false));
  }, 1000);
  return {
    stats,
    /** What happened since the previous call. */
    take() {
      const w = window;
      window = { requests: 0, failures: 0, max_ms: 0 };
      return { ...w, max_ms: Math.round(w.max_ms) };
    },
    stop: () => clearInterval(timer),
  };
}

export async function takeSample(
  url: string,
  pid: number,
  t: number,
  phase: Sample['phase'],
  previous: Sample | undefined,
  sent: Record<string, number>,
  api: Sample['api'],
  controlP99: number,
): Promise<Sample> {
  const cpu = cpuSeconds(pid);
  const fds = openFds(pid);
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const s = parseProm(await res.text());
  const records_out = byLabel(s, 'svc_records_out_total', 'pipeline');
  const dt = previous ? t - previous.t : 0;
  const out_per_sec: Record<string, number> = {};
  // The first sample: since the load started (the counters were at or near 0 then).
  for (const [p, v] of Object.entries(records_out)) out_per_sec[p] = Math.round((v - (previous?.records_out[p] ?? 0)) / (previous ? dt : t));
  return {
    t: Math.round(t * 10) / 10,
    at: new Date().toISOString(),
    phase,
    rss_mb: round(scalar(s, 'svc_process_process_resident_memory_bytes') / MB),
    proc_rss_mb: round(procRssMb(pid)),
    heap_used_mb: round(scalar(s, 'svc_process_nodejs_heap_size_used_bytes') / MB),
    heap_total_mb: round(scalar(s, 'svc_process_nodejs_heap_size_total_bytes') / MB),
    external_mb: round(scalar(s, 'svc_process_nodejs_external_memory_bytes') / MB),
    handles: scalar(s, 'svc_process_nodejs_active_handles_total'),
    eventloop_p99_ms: round(scalar(s, 'svc_process_nodejs_eventloop_lag_p99_seconds') * 1000),
    eventloop_max_ms: round(scalar(s, 'svc_process_nodejs_eventloop_lag_max_seconds') * 1000),
    fds: fds.total,
    fds_own: fds.total - fds.clients,
    fd_kinds: fds.kinds,
    cpu_pct: previous && dt > 0 ? Math.round(((cpu - previous.cpu_s) / dt) * 100) : 0,
    cpu_s: cpu,
    control_p99_ms: controlP99,
    loadavg: loadavg()[0]!,
    queue_depth: byLabel(s, 'svc_stream_queue_depth', 'pipeline'),
    records_in: byLabel(s, 'svc_records_in_total', 'pipeline'),
    records_out,
    out_per_sec,
    dropped: byLabel(s, 'svc_source_dropped_total', 'pipeline'),
    errors: byLabel(s, 'svc_errors_total', 'pipeline'),
    dlq: byLabel(s, 'svc_dlq_total', 'pipeline'),
    sent: { ...sent },
    api,
  };
}

const round = (x: number) => Math.round(x * 10) / 10;
