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
  since: string;
  error: string | null;
  host: string | null;
  port: number;
  /** null: any community is accepted. */
  community: string | null;
  resolve_mibs: boolean;
  v3_users: number;
  engine_id: string | null;
  started_at: string | null;
  received: number;
  informs_acknowledged: number;
  dropped: number;
  last_drop: { time: string; source: string; reason: string } | null;
  events: number;
  event_limit: number;
}

export interface TrapsStart {
  port?: number;
  community?: string;
  resolve_mibs?: boolean;
  host?: string;
}

/** A varbind as received (or sent): names and labels when MIBs resolved them. */
export interface TrapVarBind {
  oid?: string;
  name?: string;
  type: string;
  value: string | number | null;
  encoding?: 'hex';
  label?: string;
  bits?: string[];
  display?: string;
}

/** A received notification (GET /api/traps/ and the `trap` message). */
export interface TrapEvent {
  id: number;
  time: string;
  source: string;
  version: string;
  kind: string;
  community?: string;
  user?: string;
  engine_id?: string;
  trap_oid: string;
  trap_name?: string;
  uptime?: number;
  varbinds: TrapVarBind[];
  v1?: { enterprise: string; agent_addr: string; generic_trap: number; specific_trap: number };
  acknowledged?: boolean;
}

export interface TrapSend {
  target: string;
  port?: number;
  version?: '1' | '2c' | '3';
  community?: string;
  oid: string;
  inform?: boolean;
  varbinds?: { oid: string; type?: string; value?: unknown }[];
}

export interface TrapSendResult {
  sent: boolean;
  target: string;
  port: number;
  version: string;
  kind: string;
  trap_oid: string;
  trap_name: string;
  varbinds: TrapVarBind[];
  acknowledged?: boolean;
  duration_ms: number;
}

// The server's own definition (src/mib/types.ts has no imports, so nothing of Node comes along).
import type { MibDiagnostic } from '../../../src/mib/types.js';
export type { MibDiagnostic };

export interface MibFailure {
  module: string | null;
  file: string;
  path: string;
  group?: string;
  missing: string[];
  failedImports: string[];
  errors: MibDiagnostic[];
}

export interface MibChange {
  compiled: string[];
  failed: MibFailure[];
  shadowed: { module: string }[];
  results: Record<string, string>;
  files: string[];
}

export interface MibSourceRow {
  path: string;
  group: string;
  file: string;
  bundled: boolean;
  size_bytes: number;
  modified: string;
  module: string | null;
  status: 'active' | 'shadowed' | 'failed';
  shadowed_by?: { path: string; group: string };
  errors?: MibDiagnostic[];
  missing?: string[];
}

export interface MibStatus {
  mibs: string[];
  errors: MibFailure[];
  source_inventory: MibSourceRow[];
  compiled_at: string;
}

export interface MibModule {
  module: string;
  source_group: string | null;
  source_path: string | null;
  [k: string]: unknown;
}

export interface MibTreeNode {
  oid: string;
  name?: string;
  module?: string;
  kind?: string;
  type?: string;
  access?: string;
  childCount: number;
  children?: MibTreeNode[];
}

export interface MibSearchHit {
  name: string;
  module: string;
  oid: string;
  kind: string;
  type?: string;
  access?: string;
  status?: string;
  match: string;
}

export interface MibNodeDetail {
  oid: string;
  name: string;
  module: string | null;
  kind: string;
  status?: string;
  access?: string;
  syntax?: { type?: string; base?: string; tc?: string; displayHint?: string; enums?: Record<string, number> };
  units?: string;
  index?: unknown;
  augments?: unknown;
  description?: string;
  breadcrumb: { oid: string; name?: string; module?: string }[];
  children: { oid: string; name?: string; module?: string; kind?: string }[];
  alsoDefinedIn: string[];
  usedInNotifications: { module: string; name: string; oid: string; kind: string }[];
  members?: { module: string; name: string; resolved?: boolean; oid?: string }[];
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
