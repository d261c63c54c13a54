// The operator console's API (docs/spec/1-operator-console-api.md, docs/console.md): one function
// per call the UI makes. Every call carries X-Auth-Token (lib/session.ts).
import { request } from '../lib/http.js';
import type { ActivityEntry, ConsoleStats, Override, SimulatorStart, SimulatorStatus, WalkRequest, WalkResult } from './console-types.js';

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
  logout: () => request<{ ok: boolean }>('/api/settings/logout', { method: 'POST' }),
};
