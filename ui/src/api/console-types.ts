// The shapes of the operator console's answers (docs/console.md) as this UI reads them.

export type ServiceState = 'stopped' | 'starting' | 'running' | 'stopping' | 'error';

export interface SimulatorStatus {
  state: ServiceState;
  since: string;
  error: string | null;
  host: string;
  port: number;
  community: string;
  writable: boolean;
  versions: string[];
  v3_users: { username: string; auth_protocol: string | null; priv_protocol: string | null }[];
  engine_id: string | null;
  started_at: string | null;
  uptime_s: number | null;
  oids: number | null;
  overrides: number;
  log_entries: number;
}

export interface TrapsStatus {
  state: ServiceState;
  host: string;
  port: number;
  received: number;
  dropped: number;
}

export interface SimulatorStart {
  port?: number;
  community?: string;
  host?: string;
  write_community?: string;
}

export interface Override {
  oid: string;
  type: string;
  value: string | number;
}

export interface ActivityEntry {
  id: number;
  time: string;
  source: string;
  version: string;
  principal: string | null;
  request: string;
  oids: string[];
  error?: string;
  skipped?: number;
}

export interface ConsoleStats {
  simulator: { requests: number; get: number; getnext: number; getbulk: number; set: number; errors: number };
  traps: { received: number; sent: number; send_errors: number; informs_acknowledged: number; dropped: number };
  walker: { walks: number; oids: number; errors: number; last_duration_ms: number | null };
  mibs: { uploads: number; compiled: number; failed: number };
  since: string;
}

export interface WalkRequest {
  target: string;
  port?: number;
  version?: '1' | '2c' | '3';
  community?: string;
  oid?: string;
  parse?: boolean;
  use_mibs?: boolean;
  json_format?: 'current' | 'grouped';
  max_repetitions?: number;
  timeout_ms?: number;
  retries?: number;
  username?: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
}

/** A cell of a grouped walk: parsed ({type, value, label?, display?}) or raw (the value text). */
export type WalkCell = string | { type: string; value: unknown; label?: string; display?: string; encoding?: string };

export interface WalkTable {
  oid: string;
  entry: string;
  index: string[];
  columns: string[];
  row_count: number;
  rows: Record<string, Record<string, WalkCell>>;
}

export interface WalkResult {
  target: string;
  port: number;
  version: string;
  oid: string;
  operation: string;
  count: number;
  truncated: boolean;
  duration_ms: number;
  parse: boolean;
  scalars?: Record<string, WalkCell & object>;
  tables?: Record<string, WalkTable>;
  other?: unknown[];
}

/** A message of the console WebSocket: `{type, data, timestamp}`. */
export interface ConsoleMessage {
  type: 'full_state' | 'status' | 'stats' | 'mibs' | 'trap' | 'simulator_log' | 'pong';
  data: unknown;
  timestamp: string;
}
