// The pipeline daemon's API (docs/spec/2-pipeline-engine-api.md): one function per call the UI makes.
import { request } from '../lib/http.js';
import type {
  PipelineSummary,
  PipelineState,
  StatsRow,
  DaemonStatus,
  RunRecord,
  RunFilter,
  DryRunResult,
  ConnectorTest,
  PipelineVersion,
  PluginSchemas,
  ClusterNode,
  Placement,
  AlertRule,
} from './types.js';

export type * from './types.js';

const enc = encodeURIComponent;

export const daemon = {
  meta: () => request<{ version: string; name?: string }>('/api/meta'),
  pipelines: () => request<PipelineSummary[]>('/api/pipelines'),
  pipeline: (name: string) => request<PipelineState>(`/api/pipelines/${enc(name)}`),
  create: (yaml: string) => request<PipelineState>('/api/pipelines', { method: 'POST', yaml }),
  update: (name: string, yaml: string) => request<PipelineState>(`/api/pipelines/${enc(name)}`, { method: 'PUT', yaml }),
  remove: (name: string) => request<void>(`/api/pipelines/${enc(name)}`, { method: 'DELETE' }),
  start: (name: string) => request<{ status: string }>(`/api/pipelines/${enc(name)}/start`, { method: 'POST' }),
  stop: (name: string) => request<{ status: string }>(`/api/pipelines/${enc(name)}/stop`, { method: 'POST' }),
  run: (name: string) => request<{ status: string; run_id?: string }>(`/api/pipelines/${enc(name)}/run`, { method: 'POST' }),
  dryRun: (yaml: string) => request<DryRunResult>('/api/pipelines/dry-run', { method: 'POST', yaml, query: { diagnostics: true } }),
  testConnectors: (yaml: string) => request<{ source: ConnectorTest; sinks: ConnectorTest[] }>('/api/connectors/test-pipeline', { method: 'POST', yaml }),
  versions: (name: string) => request<PipelineVersion[]>(`/api/pipelines/${enc(name)}/versions`),
  version: (name: string, version: number) => request<PipelineVersion & { yaml: string }>(`/api/pipelines/${enc(name)}/versions/${version}`),
  rollback: (name: string, version: number) =>
    request<{ name: string; status: string; rolled_back_to_version: number }>(`/api/pipelines/${enc(name)}/rollback`, { method: 'POST', query: { version } }),
  stats: () => request<StatsRow[]>('/api/stats'),
  status: () => request<DaemonStatus>('/api/daemon/status'),
  runs: (f: RunFilter) => request<RunRecord[]>('/api/runs', { query: { ...f } }),
  runsCsv: (f: RunFilter) => request<string>('/api/runs', { query: { ...f, format: 'csv' }, text: true }),
  runRecord: (id: string) => request<RunRecord>(`/api/runs/${enc(id)}`),
  schemas: () => request<PluginSchemas>('/api/plugins/schemas'),
  clusterNodes: () => request<{ mode: string; workers: ClusterNode[] }>('/api/cluster/nodes'),
  clusterStreams: () => request<{ streams: Placement[] }>('/api/cluster/streams'),
  alerts: (pipeline: string) => request<AlertRule[]>(`/api/pipelines/${enc(pipeline)}/alerts`),
  addAlert: (pipeline: string, rule: AlertRule) => request<AlertRule>(`/api/pipelines/${enc(pipeline)}/alerts`, { method: 'POST', json: rule }),
  updateAlert: (pipeline: string, name: string, rule: AlertRule) =>
    request<AlertRule>(`/api/pipelines/${enc(pipeline)}/alerts/${enc(name)}`, { method: 'PUT', json: rule }),
  removeAlert: (pipeline: string, name: string) => request<void>(`/api/pipelines/${enc(pipeline)}/alerts/${enc(name)}`, { method: 'DELETE' }),
  login: (username: string, password: string) =>
    request<{ token: string; username: string }>('/api/auth/login', { method: 'POST', json: { username, password } }),
};
