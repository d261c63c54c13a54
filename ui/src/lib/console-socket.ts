// The console's live channel (WebSocket /api/ws?token=...): the latest simulator, receiver and
// counter state as signals, and every message to subscribers (activity log, traps). Reconnects
// with backoff; a 4401 close means the session ended, so the sign-in form comes back.
import { signal } from '@preact/signals';
import type { ConsoleMessage, ConsoleStats, SimulatorStatus, TrapsStatus } from '../api/console-types.js';
import { credential, loginRequired } from './session.js';

export const simulatorStatus = signal<SimulatorStatus | undefined>(undefined);
export const trapsStatus = signal<TrapsStatus | undefined>(undefined);
export const liveStats = signal<ConsoleStats | undefined>(undefined);
export const socketState = signal<'connecting' | 'open' | 'closed'>('closed');

/** One set of counters as it arrived, at `t` (Unix seconds, this browser's clock). */
export interface StatsSample {
  t: number;
  stats: ConsoleStats;
}
/** The counters as they arrived since the console was opened (the Stats page's charts), the last STATS_HISTORY. */
export const statsHistory = signal<StatsSample[]>([]);
export const STATS_HISTORY = 720;

/** Keeps `s` in the history; a reset (a new `since`) starts the history again. */
function remember(s: ConsoleStats) {
  const h = statsHistory.value;
  const fresh = h.length > 0 && h[h.length - 1]!.stats.since !== s.since;
  statsHistory.value = [...(fresh ? [] : h.slice(-(STATS_HISTORY - 1))), { t: Date.now() / 1000, stats: s }];
}

type Listener = (m: ConsoleMessage) => void;
const listeners = new Set<Listener>();

/** Calls `l` with every message; returns the unsubscribe function. */
export function onConsoleMessage(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

const PING_MS = 25_000;
let socket: WebSocket | undefined;
let retryMs = 1000;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let pingTimer: ReturnType<typeof setInterval> | undefined;

function apply(m: ConsoleMessage) {
  const d = m.data as Record<string, unknown>;
  if (m.type === 'full_state' || m.type === 'status') {
    simulatorStatus.value = d.simulator as SimulatorStatus;
    trapsStatus.value = d.traps as TrapsStatus;
  }
  // The receiver pushes its status only when its state changes: count each received trap here, so
  // the counters move with the feed (the next status message sets them exactly).
  if (m.type === 'trap' && trapsStatus.value) {
    const t = trapsStatus.value;
    trapsStatus.value = { ...t, received: t.received + 1, events: Math.min(t.events + 1, t.event_limit) };
  }
  if (m.type === 'full_state') liveStats.value = d.stats as ConsoleStats;
  if (m.type === 'stats') liveStats.value = m.data as ConsoleStats;
  if (m.type === 'full_state' || m.type === 'stats') remember(liveStats.value!);
}

export function connectConsole() {
  const token = credential.value?.value;
  if (socket || !token) return;
  socketState.value = 'connecting';
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/ws?token=${encodeURIComponent(token)}`);
  socket = ws;
  ws.onopen = () => {
    socketState.value = 'open';
    retryMs = 1000;
    pingTimer = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('ping'), PING_MS);
  };
  ws.onmessage = (e) => {
    let m: ConsoleMessage;
    try {
      m = JSON.parse(String(e.data)) as ConsoleMessage;
    } catch {
      return;
    }
    apply(m);
    for (const l of listeners) l(m);
  };
  ws.onclose = (e) => {
    clearInterval(pingTimer);
    socket = undefined;
    socketState.value = 'closed';
    if (e.code === 4401) {
      loginRequired.value = true;
      return;
    }
    retryTimer = setTimeout(connectConsole, retryMs);
    retryMs = Math.min(retryMs * 2, 15_000);
  };
}

export function disconnectConsole() {
  clearTimeout(retryTimer);
  const ws = socket;
  socket = undefined;
  if (ws) {
    ws.onclose = null;
    ws.close();
  }
  socketState.value = 'closed';
}
