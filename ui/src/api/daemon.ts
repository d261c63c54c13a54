// The pipeline daemon's API (docs/spec/2-pipeline-engine-api.md): one function per call the UI makes.
import { request, withQuery } from '../lib/http.js';
import { authHeaders, credential, loginRequired } from '../lib/session.js';
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
  ShardAssignment,
  ShardedPipeline,
  AlertRule,
} from './types.js';

export type * from './types.js';

const enc = encodeURIComponent;

/** The tap's query (docs/live.md, "Tap"). */
export interface TapQuery {
  stage: string;
  rate: number;
  limit: number;
  filter?: string;
}

/**
 * The WebSocket URL of a tap on this server. A browser cannot set headers on a WebSocket: a signed-in
 * session goes as `?token=`; an API key is never taken from a URL (`tapNeedsSession`).
 */
export function tapUrl(name: string, q: TapQuery): string {
  const c = credential.value;
  const path = withQuery(`/api/pipelines/${enc(name)}/tap`, { ...q, token: c?.kind === 'token' ? c.value : undefined });
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${path}`;
}

/** True when the tab holds an API key, which the tap's WebSocket cannot carry. */
export const tapNeedsSession = () => credential.value?.kind === 'key';

/**
 * Why the server refused a tap. A refused upgrade is an HTTP answer the browser does not show to the
 * page; the same URL as a plain GET is checked the same way and answers the same `{detail}` (a
 * request it accepts is answered 404 with no body, since it is not an upgrade: no reason then).
 */
export async function tapRefusal(name: string, q: TapQuery): Promise<string | undefined> {
  try {
    const res = await fetch(withQuery(`/api/pipelines/${enc(name)}/tap`, { ...q }), { headers: authHeaders(), credentials: 'omit' });
    if (res.status === 401) loginRequired.value = true;
    const body = (await res.json().catch(() => undefined)) as { detail?: unknown } | undefined;
    return typeof body?.detail === 'string' ? body.detail : undefined;
  } catch {
    return undefined;
  }
}

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
  clusterShards: () => request<{ pipelines: ShardedPipeline[] }>('/api/cluster/shards'),
  pipelineShards: (name: string, q: string, limit = 200) => request<ShardAssignment>(`/api/pipelines/${enc(name)}/shards`, { query: { q, limit } }),
  alerts: (pipeline: string) => request<AlertRule[]>(`/api/pipelines/${enc(pipeline)}/alerts`),
  addAlert: (pipeline: string, rule: AlertRule) => request<AlertRule>(`/api/pipelines/${enc(pipeline)}/alerts`, { method: 'POST', json: rule }),
  updateAlert: (pipeline: string, name: string, rule: AlertRule) =>
    request<AlertRule>(`/api/pipelines/${enc(pipeline)}/alerts/${enc(name)}`, { method: 'PUT', json: rule }),
  removeAlert: (pipeline: string, name: string) => request<void>(`/api/pipelines/${enc(pipeline)}/alerts/${enc(name)}`, { method: 'DELETE' }),
  login: (username: string, password: string) =>
    request<{ token: string; username: string }>('/api/auth/login', { method: 'POST', json: { username, password } }),
};
