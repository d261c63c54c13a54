// The operator console's API (docs/spec/1-operator-console-api.md, docs/console.md): one function
// per call the UI makes. Every call carries X-Auth-Token (lib/session.ts).
import { request } from '../lib/http.js';
import type {
  ActivityEntry,
  ConsoleStats,
  MibChange,
  MibModule,
  MibNodeDetail,
  MibSearchHit,
  MibStatus,
  MibTreeNode,
  Override,
  SimulatorStart,
  SimulatorStatus,
  TrapEvent,
  TrapSend,
  TrapSendResult,
  TrapsStart,
  TrapsStatus,
  WalkRequest,
  WalkResult,
} from './console-types.js';

export type * from './console-types.js';

export const consoleApi = {
  stats: () => request<ConsoleStats>('/api/stats/'),
  resetStats: () => request<ConsoleStats>('/api/stats/', { method: 'DELETE' }),
  simulator: () => request<SimulatorStatus>('/api/simulator/status'),
  startSimulator: (body: SimulatorStart) => request<SimulatorStatus>('/api/simulator/start', { method: 'POST', json: body }),
  stopSimulator: () => request<SimulatorStatus>('/api/simulator/stop', { method: 'POST' }),
  restartSimulator: () => request<SimulatorStatus>('/api/simulator/restart', { method: 'POST' }),
  overrides: () => request<{ overrides: Override[]; count: number }>('/api/simulator/data'),
  saveOverrides: (overrides: Override[]) => request<{ count: number; applied_live: boolean }>('/api/simulator/data', { method: 'POST', json: { overrides } }),
  logs: (limit: number) => request<{ entries: ActivityEntry[]; total: number; capacity: number }>('/api/simulator/logs', { query: { limit } }),
  clearLogs: () => request<{ cleared: number }>('/api/simulator/logs', { method: 'DELETE' }),
  walk: (body: WalkRequest, signal?: AbortSignal) => request<WalkResult>('/api/walk/execute', { method: 'POST', json: body, signal }),
  traps: () => request<TrapsStatus>('/api/traps/status'),
  startTraps: (body: TrapsStart) => request<TrapsStatus>('/api/traps/start', { method: 'POST', json: body }),
  stopTraps: () => request<TrapsStatus>('/api/traps/stop', { method: 'POST' }),
  trapEvents: (limit: number) => request<{ total: number; count: number; traps: TrapEvent[] }>('/api/traps/', { query: { limit } }),
  clearTrapEvents: () => request<{ cleared: number }>('/api/traps/', { method: 'DELETE' }),
  sendTrap: (body: TrapSend) => request<TrapSendResult>('/api/traps/send', { method: 'POST', json: body }),
  mibStatus: () => request<MibStatus>('/api/mibs/status'),
  uploadMibs: (form: FormData) => request<MibChange>('/api/mibs/upload', { method: 'POST', form }),
  mibModules: () => request<{ total: number; modules: MibModule[] }>('/api/mibs/browse/modules'),
  mibModuleTree: (module: string) => request<{ module: string; count: number; tree: MibTreeNode[] }>('/api/mibs/browse/tree/module', { query: { module } }),
  mibSearch: (q: string, limit = 100) => request<{ q: string; count: number; results: MibSearchHit[] }>('/api/mibs/browse/search', { query: { q, limit } }),
  mibNode: (oid: string) => request<MibNodeDetail>(`/api/mibs/browse/node/${encodeURIComponent(oid)}`),
  /** CSV as text (`?download=1`), JSON as the export document. */
  mibExport: (format: 'json' | 'csv', exportType: string, modules: string[]) =>
    request<unknown>('/api/mibs/export', {
      method: 'POST',
      json: { format, export_type: exportType, modules },
      query: format === 'csv' ? { download: 1 } : {},
      text: format === 'csv',
    }),
  mibDownload: (path: string) => request<string>('/api/mibs/download', { method: 'POST', json: { paths: [path] }, text: true }),
  mibDelete: (path: string) => request<{ deleted: string[]; not_found: string[] }>('/api/mibs/file', { method: 'DELETE', json: { path } }),
  logout: () => request<{ ok: boolean }>('/api/settings/logout', { method: 'POST' }),
};
