// Renders the kustomize overlays of deploy/kubernetes/ with `kubectl kustomize` (no cluster needed)
// and gives the tests typed views of the objects: workloads with their pod templates, containers,
// env and probes.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const OVERLAYS = ['standalone', 'cluster'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** Why the rendering tests cannot run (kubectl missing), or undefined when they can. */
export function kubectlMissing(): string | undefined {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8', timeout: 20_000 });
  if (r.error) return `kubectl not found (${r.error.message}); Debian's kubernetes-client package provides it`;
  if (r.status !== 0) return `kubectl version --client failed: ${r.stderr.trim()}`;
  return undefined;
}

// Loose shapes of what the tests read; the schema check is kubernetes-models' job.
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
export interface Probe {
  httpGet?: { path: string; port: string | number; scheme?: string };
}
export interface Container {
  name: string;
  image: string;
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
export interface PodSpec {
  serviceAccountName?: string;
  enableServiceLinks?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string }; emptyDir?: object }[];
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: unknown[];
}
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    serviceName?: string;
    selector: LabelSelector;
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}

/** The objects of one overlay, as `kubectl kustomize` prints them. */
export function render(overlay: Overlay): K8sObject[] {
  const out = execFileSync('kubectl', ['kustomize', `deploy/kubernetes/overlays/${overlay}`], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    // Newer kustomize warns on stderr about `bases` (kept for Debian's kubectl 1.20).
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(out).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${overlay}: ${doc.errors[0]!.message}`);
    return doc.toJS() as K8sObject;
  });
}

export const isWorkload = (o: K8sObject): o is Workload => o.kind === 'Deployment' || o.kind === 'StatefulSet';

export const workloads = (objects: K8sObject[]): Workload[] => objects.filter(isWorkload);

/** True when every label the selector asks for is on the pod (matchLabels: all the tests use). */
export function selects(selector: Record<string, string>, podLabels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => podLabels[k] === v);
}

export const envOf = (c: Container): Map<string, EnvVar> => new Map((c.env ?? []).map((e) => [e.name, e]));

export const probesOf = (c: Container): Probe[] => [c.startupProbe, c.livenessProbe, c.readinessProbe].filter((p): p is Probe => p !== undefined);

/** The container port a Service or probe names (by port name or number), if the container has it. */
export const containerPort = (c: Container, port: string | number): number | undefined =>
  c.ports?.find((p) => (typeof port === 'number' ? p.containerPort === port : p.name === port))?.containerPort;
