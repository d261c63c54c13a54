// Per-pipeline Kubernetes Services (doc 3, pipeline field `kubernetes`): in manager mode a stream
// whose source listens on a port or takes pushes on the worker ingress (as the source declares,
// SourcePlugin.resources) asks for a Service that brings outside traffic to the worker pods. The
// manager owns these Services by server-side apply (field manager `svc`), labels
// them so that the ones whose pipeline is gone can be found by label selector, and reports a
// refusal (a nodePort taken, missing RBAC) as a sentence saying what to change.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CoreV1Api, KubeConfig, V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Logger } from '../observability/log.js';
import { lazyModule } from '../plugins/connector-runtime/lazy.js';
import { sourceResources, type SourceLookup } from './source-resources.js';

// The client is large; the daemon loads it only when a pipeline asks for a Service.
const k8s = lazyModule(() => import('@kubernetes/client-node'));

export const FIELD_MANAGER = 'svc';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const PIPELINE_LABEL = 'svc.io/pipeline';
/** The full pipeline name: a label value is at most 63 characters, a pipeline name up to 128. */
export const PIPELINE_ANNOTATION = 'svc.io/pipeline-name';
/** The labels of the worker pods (the Helm chart's), which every Service selects. */
export const WORKER_SELECTOR: Readonly<Record<string, string>> = { 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/component': 'worker' };
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=svc`;
export const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** A `kubernetes` block that cannot be turned into a Service; the message says what to change. */
export class ServiceConfigError extends Error {}

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/** `s` if it fits in `max` characters, else its head and a hash of the whole (still unique). */
function fit(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max - 9).replace(/[^a-z0-9]+$/i, '')}-${shortHash(s)}`;
}

/** The default Service name: `svc-<pipeline>` as a DNS-1035 label (lower case, `-`, at most 63). */
export function defaultServiceName(pipeline: string): string {
  // Two pipelines that sanitize alike (a_b, a.b) are told apart by apply(), which refuses a
  // Service that belongs to another pipeline.
  return fit(
    `svc-${pipeline
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/-+/g, '-')
      .replace(/-$/, '')}`,
    63,
  );
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** The `svc.io/pipeline` label value: the name itself when it is a valid label value, else a unique stand-in. */
export function pipelineLabelValue(pipeline: string): string {
  if (pipeline.length <= 63 && LABEL_VALUE.test(pipeline)) return pipeline;
  return `${pipeline.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${shortHash(pipeline)}`;
}

/** The pipeline a managed Service belongs to. */
export function pipelineOf(s: V1Service): string | undefined {
  return s.metadata?.annotations?.[PIPELINE_ANNOTATION] ?? s.metadata?.labels?.[PIPELINE_LABEL];
}

const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The ports the Service exposes for this source, from what the source declares (SourcePlugin.resources):
 * the worker ingress port for pushes, each listening port as it is. [] for a source that receives nothing.
 */
function servicePorts(config: PipelineConfig, ingressPort: number, sources?: SourceLookup): { ports: V1ServicePort[]; ingressOnly: boolean } {
  const ports: V1ServicePort[] = [];
  let ingressOnly = true;
  for (const r of sourceResources(config.source, sources)) {
    if (r.kind === 'ingress') {
      if (!ports.some((p) => p.name === 'http')) ports.push({ name: 'http', protocol: 'TCP', port: ingressPort, targetPort: ingressPort });
      continue;
    }
    ingressOnly = false;
    const port = Number(r.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ServiceConfigError(`source port ${String(r.port)} cannot be exposed by a Service: set a fixed port (1-65535)`);
    }
    if (/^(127\.|::1$|localhost$)/.test(r.host)) {
      throw new ServiceConfigError(`source host ${r.host} listens on loopback only, which a Service cannot reach: set host 0.0.0.0 (or ::)`);
    }
    ports.push({ name: r.name, protocol: r.protocol === 'tcp' ? 'TCP' : 'UDP', port, targetPort: port });
  }
  return { ports, ingressOnly };
}

/**
 * The Service a pipeline needs, or undefined when it needs none (no `kubernetes` block or
 * `enabled: false`). Throws ServiceConfigError when the block asks for one that cannot be made.
 * `sources`: where the source's plugin is looked up (default: the plugin registry).
 */
export function serviceManifest(config: PipelineConfig, ingressPort: number, sources?: SourceLookup): V1Service | undefined {
  const kube = config.kubernetes;
  if (!kube?.enabled) return undefined;
  const { ports, ingressOnly } = servicePorts(config, ingressPort, sources);
  if (!ports.length) {
    throw new ServiceConfigError(
      `kubernetes.enabled: a ${config.source.type} source receives no traffic (it listens on no port and takes no pushes on the ingress), so it needs no Service: remove the kubernetes block`,
    );
  }
  const name = kube.service_name ?? defaultServiceName(config.name);
  if (name.length > 63 || !DNS_1035.test(name)) {
    throw new ServiceConfigError(
      `kubernetes.service_name ${JSON.stringify(name)} is not a valid Service name: use at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit`,
    );
  }
  const type = kube.service_type ?? 'NodePort';
  if (kube.node_port !== undefined) {
    if (ports.length > 1)
      throw new ServiceConfigError(
        `kubernetes.node_port sets one port, but this ${config.source.type} source receives on ${ports.length}: remove node_port (Kubernetes then picks them)`,
      );
    ports[0]!.nodePort = kube.node_port;
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      labels: { [MANAGED_BY_LABEL]: 'svc', [PIPELINE_LABEL]: pipelineLabelValue(config.name) },
      annotations: { [PIPELINE_ANNOTATION]: config.name },
    },
    spec: {
      type,
      selector: { ...WORKER_SELECTOR },
      ports,
      // Listeners (syslog, traps) see their sender in the source address (a v2c trap's agent_address):
      // Local keeps it from being rewritten to a node's address, at the cost of only nodes that run
      // a worker answering. HTTP senders on the ingress identify themselves in the request.
      externalTrafficPolicy: ingressOnly ? 'Cluster' : 'Local',
    },
  };
}

/**
 * The namespace the Services go in: `namespace` (SVC_POD_NAMESPACE from the settings), else the
 * SVC_POD_NAMESPACE variable, else the pod's service account namespace file.
 */
export function resolveNamespace(opts: { namespace?: string; env?: NodeJS.ProcessEnv; namespaceFile?: string } = {}): string {
  const explicit = opts.namespace || (opts.env ?? process.env).SVC_POD_NAMESPACE;
  if (explicit) return explicit;
  const file = opts.namespaceFile ?? SERVICE_ACCOUNT_NAMESPACE_FILE;
  try {
    const ns = readFileSync(file, 'utf8').trim();
    if (ns) return ns;
  } catch {
    // Not in a pod (or no service account mounted): said below.
  }
  throw new ServiceConfigError(
    `cannot tell the Kubernetes namespace: set SVC_POD_NAMESPACE (e.g. from the pod's metadata.namespace) or mount the service account (${file})`,
  );
}

export type ApplyResult = { ok: true; service: V1Service | undefined } | { ok: false; error: string };
export type RemoveResult = { ok: true; removed: string[] } | { ok: false; error: string };
export interface ReconcileResult {
  /** Per pipeline that asked for a Service (or whose block is wrong). */
  results: Record<string, ApplyResult>;
  /** Names of the Services deleted because their pipeline is gone or no longer wants one. */
  removed: string[];
  /** Set when the Services could not be listed at all (nothing was applied then). */
  error?: string;
}

export interface PipelineServicesOptions {
  /** Default: the in-cluster configuration (service account token and CA). */
  kubeConfig?: KubeConfig;
  /** Default: resolveNamespace() (SVC_POD_NAMESPACE, then the service account file). */
  namespace?: string;
  /** Where the service account namespace is read; tests point it elsewhere. */
  namespaceFile?: string;
  env?: NodeJS.ProcessEnv;
  /** The worker ingress port (SVC_WORKER_INGRESS_PORT), where webhook and remote-write traffic goes. */
  ingressPort: number;
  /** Where sources' plugins are looked up for what they declare (default: the plugin registry). */
  sources?: SourceLookup;
  log: Logger;
}

interface Ready {
  api: CoreV1Api;
  namespace: string;
  server: string;
}

/** The Services of a namespace's pipelines, kept as the pipelines say. */
export class PipelineServices {
  private ready?: Promise<Ready>;

  constructor(private readonly opts: PipelineServicesOptions) {}

  /** Creates or updates the pipeline's Service (or removes it when the pipeline needs none). */
  async apply(config: PipelineConfig): Promise<ApplyResult> {
    let manifest: V1Service | undefined;
    try {
      manifest = serviceManifest(config, this.opts.ingressPort, this.opts.sources);
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
    if (!manifest) {
      const r = await this.remove(config.name);
      return r.ok ? { ok: true, service: undefined } : r;
    }
    const name = manifest.metadata!.name!;
    let r: Ready | undefined;
    try {
      r = await this.connect();
      const current = await this.read(r, name);
      if (current && current.metadata?.labels?.[MANAGED_BY_LABEL] !== 'svc') {
        return {
          ok: false,
          error: `a Service named ${name} exists in namespace ${r.namespace} and is not managed by svc: set kubernetes.service_name to another name`,
        };
      }
      if (current && pipelineOf(current) !== config.name) {
        return { ok: false, error: `Service ${name} belongs to pipeline ${pipelineOf(current)}: set kubernetes.service_name to another name` };
      }
      const k = await k8s();
      const service = await r.api.patchNamespacedService(
        { name, namespace: r.namespace, body: manifest, fieldManager: FIELD_MANAGER, force: true },
        k.setHeaderOptions('Content-Type', k.PatchStrategy.ServerSideApply),
      );
      // A renamed Service (service_name changed) leaves the old one behind: it goes now.
      for (const old of await this.managed(r, config.name)) {
        if (old.metadata?.name !== name) await this.delete(r, old.metadata!.name!);
      }
      this.opts.log.info({ pipeline: config.name, service: name, namespace: r.namespace, node_ports: nodePorts(service) }, 'kubernetes service applied');
      return { ok: true, service };
    } catch (e) {
      return { ok: false, error: await this.explain(e, r, `apply Service ${name}`) };
    }
  }

  /** Deletes the Services of a pipeline (found by label). */
  async remove(pipeline: string): Promise<RemoveResult> {
    let r: Ready | undefined;
    try {
      r = await this.connect();
      const removed: string[] = [];
      for (const s of await this.managed(r, pipeline)) {
        await this.delete(r, s.metadata!.name!);
        removed.push(s.metadata!.name!);
      }
      if (removed.length) this.opts.log.info({ pipeline, services: removed, namespace: r.namespace }, 'kubernetes service removed');
      return { ok: true, removed };
    } catch (e) {
      return { ok: false, error: await this.explain(e, r, `remove the Service of pipeline ${pipeline}`) };
    }
  }

  /**
   * Applies the Service of every pipeline that asks for one and deletes the managed Services of
   * pipelines that are gone or ask for none. A pipeline whose block is wrong keeps what it has.
   */
  async reconcile(configs: PipelineConfig[]): Promise<ReconcileResult> {
    const out: ReconcileResult = { results: {}, removed: [] };
    let r: Ready | undefined;
    let existing: V1Service[];
    try {
      r = await this.connect();
      existing = (await r.api.listNamespacedService({ namespace: r.namespace, labelSelector: MANAGED_SELECTOR })).items;
    } catch (e) {
      out.error = await this.explain(e, r, 'list the Services svc manages');
      return out;
    }
    const keep = new Set<string>();
    for (const config of configs) {
      let wants: boolean;
      try {
        wants = serviceManifest(config, this.opts.ingressPort, this.opts.sources) !== undefined;
      } catch {
        wants = true;
      }
      if (!wants) continue;
      keep.add(config.name);
      out.results[config.name] = await this.apply(config);
    }
    for (const s of existing) {
      const pipeline = pipelineOf(s);
      if (pipeline !== undefined && keep.has(pipeline)) continue;
      const name = s.metadata!.name!;
      try {
        await this.delete(r, name);
        out.removed.push(name);
      } catch (e) {
        out.error = await this.explain(e, r, `delete the orphaned Service ${name}`);
      }
    }
    if (out.removed.length) this.opts.log.info({ services: out.removed, namespace: r.namespace }, 'kubernetes services of removed pipelines deleted');
    return out;
  }

  private connect(): Promise<Ready> {
    this.ready ??= this.load().catch((e) => {
      this.ready = undefined; // a later call tries again (the namespace file may appear, the env be fixed)
      throw e;
    });
    return this.ready;
  }

  private async load(): Promise<Ready> {
    const namespace = resolveNamespace(this.opts);
    const k = await k8s();
    let kc = this.opts.kubeConfig;
    if (!kc) {
      const env = this.opts.env ?? process.env;
      kc = new k.KubeConfig();
      // KUBECONFIG, as kubectl reads it (a manager outside the cluster); else the pod's service account.
      if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG);
      else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
      else
        throw new ServiceConfigError(
          'not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset) and KUBECONFIG is not set: pipeline Services are made only by a manager that can reach the cluster',
        );
    }
    return { api: kc.makeApiClient(k.CoreV1Api), namespace, server: kc.getCurrentCluster()?.server ?? '(no cluster)' };
  }

  private async read(r: Ready, name: string): Promise<V1Service | undefined> {
    try {
      return await r.api.readNamespacedService({ name, namespace: r.namespace });
    } catch (e) {
      if (statusCode(e) === 404) return undefined;
      throw e;
    }
  }

  private async managed(r: Ready, pipeline: string): Promise<V1Service[]> {
    const labelSelector = `${MANAGED_SELECTOR},${PIPELINE_LABEL}=${pipelineLabelValue(pipeline)}`;
    const list = await r.api.listNamespacedService({ namespace: r.namespace, labelSelector });
    return list.items.filter((s) => pipelineOf(s) === pipeline);
  }

  /** Deletes a Service; one already gone is fine. */
  private async delete(r: Ready, name: string): Promise<void> {
    try {
      await r.api.deleteNamespacedService({ name, namespace: r.namespace });
    } catch (e) {
      if (statusCode(e) !== 404) throw e;
    }
  }

  /** A refusal or failure as one sentence that says what to do. */
  private async explain(e: unknown, r: Ready | undefined, action: string): Promise<string> {
    if (e instanceof ServiceConfigError) return e.message;
    const code = statusCode(e);
    const ns = r?.namespace ?? '(unknown)';
    if (code === undefined) {
      return `cannot ${action}: the Kubernetes API at ${r?.server ?? '(unknown)'} did not answer (${(e as Error).message.split('\n')[0]})`;
    }
    const status = parseStatus((e as { body?: unknown }).body);
    const message = status?.message ?? `HTTP ${code}`;
    switch (code) {
      case 401:
        return `cannot ${action}: the Kubernetes API refused svc's credentials (401 Unauthorized): check that the pod mounts a current service account token (automountServiceAccountToken)`;
      case 403:
        return `cannot ${action}: ${message}: grant svc's service account get, list, create, patch and delete on services in namespace ${ns} (the Role svc-services of deploy/kubernetes/base/rbac.yaml)`;
      case 404:
        if (message.startsWith('namespaces "')) return `cannot ${action}: ${message}: set SVC_POD_NAMESPACE to the namespace svc runs in`;
        return `cannot ${action}: ${message}`;
      case 409:
        return `cannot ${action}: ${message}`;
      case 422:
        return `cannot ${action}: ${invalidHint(status) ?? message}`;
      default:
        return `cannot ${action}: the Kubernetes API answered ${code}: ${message}`;
    }
  }
}

interface Status {
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string; field?: string }[] };
}

function statusCode(e: unknown): number | undefined {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The Status object of an error answer (the client hands over the body as text). */
function parseStatus(body: unknown): Status | undefined {
  if (typeof body === 'object' && body !== null) return body as Status;
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body) as Status;
  } catch {
    return undefined;
  }
}

/** A 422 on a nodePort, in the terms of the pipeline's YAML. */
function invalidHint(status: Status | undefined): string | undefined {
  for (const c of status?.details?.causes ?? []) {
    if (!c.field?.endsWith('.nodePort')) continue;
    const port = /Invalid value: (\d+)/.exec(c.message ?? '')?.[1];
    if (/already allocated/.test(c.message ?? ''))
      return `nodePort ${port} is already allocated: choose another kubernetes.node_port (or leave it out to get a free one)`;
    if (/valid range/.test(c.message ?? ''))
      return `nodePort ${port} is outside the cluster's NodePort range (${c.message}): choose a kubernetes.node_port inside it`;
    return `nodePort ${port}: ${c.message}: change kubernetes.node_port`;
  }
  return undefined;
}

function nodePorts(s: V1Service): number[] {
  return (s.spec?.ports ?? []).flatMap((p) => (p.nodePort ? [p.nodePort] : []));
}
