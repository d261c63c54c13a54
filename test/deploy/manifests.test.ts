// The container image and the Kubernetes manifests (issue 15, "Packaging"). The overlays are
// rendered with `kubectl kustomize` (no cluster) and every object is checked against its
// Kubernetes schema (kubernetes-models), and against the code: labels that selectors and others'
// code rely on, probe paths the routers serve, SVC_* names and values that src/settings.ts accepts.
// The Dockerfile is checked statically (Docker need not run here).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { loadSettings, SETTINGS } from '../../src/settings.js';
import {
  containerPort,
  envOf,
  kubectlMissing,
  OVERLAYS,
  probesOf,
  render,
  ROOT,
  selects,
  workloads,
  type K8sObject,
  type Overlay,
  type Workload,
} from './manifests.js';

// Each kind the overlays may contain, with the model that validates it; another kind fails the test.
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'v1/Service': Service,
  'v1/Secret': Secret,
  'v1/ServiceAccount': ServiceAccount,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
};

// The pod labels others' code selects on (brief of issue 15); exact values.
const NAME_LABEL = 'app.kubernetes.io/name';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const COMPONENTS: Record<Overlay, Record<string, string>> = {
  standalone: { Deployment: 'standalone' },
  cluster: { Deployment: 'manager', StatefulSet: 'worker' },
};
const WORKER_SERVICE = 'svc-worker';

/** GET paths the API's routers register (`app.get('/api/...'`). */
function apiGetRoutes(): Set<string> {
  const dir = join(ROOT, 'src/api/routes');
  const paths = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/app\.get\(\s*'([^']+)'/g)) paths.add(m[1]!);
  }
  return paths;
}

/** GET paths the worker agent registers (`.get('/agent/...'` in src/cluster/). */
function agentGetRoutes(): Set<string> {
  const dir = join(ROOT, 'src/cluster');
  const paths = new Set<string>();
  for (const file of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.ts')) : []) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/\.get\(\s*'(\/agent\/[^']+)'/g)) paths.add(m[1]!);
  }
  return paths;
}
// TODO(src/cluster/agent.ts): the brief's home of the worker agent, which does not exist (the agent
// is being written in src/cluster/, today worker.ts). While no file of src/cluster/ registers an
// /agent/ route, the probe path is checked against the list of spec doc 2 (section 4, worker agent).
const AGENT_GET_ROUTES_OF_SPEC = new Set(['/agent/health']);

/** SVC_* settings whose default is on the image's root filesystem, read-only in the manifests. */
const WRITABLE_SETTINGS = ['STATE_DIR', 'PIPELINE_DIR', 'MIB_DIR', 'MIB_SOURCE_DIR', 'SCHEMA_DIR'];

const settingName = (env: string): string | undefined => (env.startsWith('SVC_') ? env.slice(4) : undefined);
const isSetting = (env: string): boolean => Object.hasOwn(SETTINGS, settingName(env) ?? '');

const missing = kubectlMissing();
if (missing) console.warn(`test/deploy/manifests.test.ts: skipping the Kubernetes manifest tests: ${missing}`);

describe.skipIf(missing !== undefined)('Kubernetes manifests (kubectl kustomize)', () => {
  const rendered = new Map<Overlay, K8sObject[]>();
  const objectsOf = (overlay: Overlay): K8sObject[] => {
    if (!rendered.has(overlay)) rendered.set(overlay, render(overlay));
    return rendered.get(overlay)!;
  };
  const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

  it('the schema check rejects an invalid object (so that passing it means something)', () => {
    const bad = new Deployment({ metadata: { name: 'x' }, spec: { replicas: 'two', selector: {}, template: {} } } as never);
    expect(() => bad.validate()).toThrow();
  });

  describe.each(OVERLAYS)('overlay %s', (overlay) => {
    it('renders, and every object validates against its Kubernetes schema', () => {
      const objects = objectsOf(overlay);
      expect(objects.length).toBeGreaterThan(0);
      for (const o of objects) {
        const Model = MODELS[`${o.apiVersion}/${o.kind}`];
        expect(Model, `no schema known for ${o.apiVersion} ${o.kind} ${o.metadata.name}`).toBeDefined();
        expect(() => new Model!(o as never).validate(), `${o.kind} ${o.metadata.name}`).not.toThrow();
        expect(o.metadata.namespace, `${o.kind} ${o.metadata.name} has the overlay's namespace`).toBe('svc');
      }
    });

    it('pods carry the exact labels others select on, and each workload selects its own pods', () => {
      const list = workloads(objectsOf(overlay));
      expect(list.map((w) => w.kind).sort()).toEqual(Object.keys(COMPONENTS[overlay]).sort());
      for (const w of list) {
        const labels = w.spec.template.metadata.labels;
        expect(labels[NAME_LABEL], `${w.kind} ${w.metadata.name}`).toBe('svc');
        expect(labels[COMPONENT_LABEL], `${w.kind} ${w.metadata.name}`).toBe(COMPONENTS[overlay][w.kind]);
        expect(w.spec.selector.matchExpressions, 'selectors use matchLabels only').toBeUndefined();
        expect(selects(w.spec.selector.matchLabels ?? {}, labels), `${w.kind} ${w.metadata.name} selects its template`).toBe(true);
        // Its selector must not also take the pods of another workload.
        for (const other of list.filter((x) => x !== w)) {
          expect(selects(w.spec.selector.matchLabels ?? {}, other.spec.template.metadata.labels)).toBe(false);
        }
      }
    });

    it('every Service and PodDisruptionBudget selects some pod template, on ports its containers have', () => {
      const objects = objectsOf(overlay);
      const list = workloads(objects);
      for (const o of objects.filter((x) => x.kind === 'Service' || x.kind === 'PodDisruptionBudget')) {
        const spec = o.spec as {
          selector?: Record<string, string> & { matchLabels?: Record<string, string> };
          ports?: { targetPort?: string | number; port: number }[];
        };
        const selector = o.kind === 'Service' ? spec.selector : spec.selector?.matchLabels;
        expect(selector && Object.keys(selector).length > 0, `${o.kind} ${o.metadata.name} has a selector`).toBe(true);
        const targets = list.filter((w) => selects(selector!, w.spec.template.metadata.labels));
        expect(targets.length, `${o.kind} ${o.metadata.name} selects a pod template`).toBeGreaterThan(0);
        for (const port of o.kind === 'Service' ? (spec.ports ?? []) : []) {
          for (const w of targets) {
            const target = port.targetPort ?? port.port;
            expect(containerPort(w.spec.template.spec.containers[0]!, target), `${o.metadata.name} port ${target} on ${w.metadata.name}`).toBeDefined();
          }
        }
      }
    });

    it('probes use paths the routers serve, on ports the containers open', () => {
      const apiRoutes = apiGetRoutes();
      expect(apiRoutes).toContain('/api/health');
      const agentRoutes = agentGetRoutes().size > 0 ? agentGetRoutes() : AGENT_GET_ROUTES_OF_SPEC;
      for (const w of workloads(objectsOf(overlay))) {
        for (const c of w.spec.template.spec.containers) {
          const probes = probesOf(c);
          expect(probes.length, `${w.metadata.name} has probes`).toBe(3);
          for (const p of probes) {
            const path = p.httpGet?.path ?? '';
            expect(containerPort(c, p.httpGet!.port), `${w.metadata.name} probe port ${p.httpGet!.port}`).toBeDefined();
            expect(path.startsWith('/agent/') ? agentRoutes : apiRoutes, `${w.metadata.name} probe ${path}`).toContain(path);
          }
        }
      }
    });

    it('env names are settings of src/settings.ts and literal values are ones it accepts', () => {
      for (const w of workloads(objectsOf(overlay))) {
        for (const c of w.spec.template.spec.containers) {
          const literal: Record<string, string> = {};
          for (const e of c.env ?? []) {
            expect(isSetting(e.name), `${w.metadata.name}: ${e.name} is in SETTINGS`).toBe(true);
            if (e.value !== undefined) literal[e.name] = e.value;
          }
          expect(() => loadSettings(literal), `${w.metadata.name}'s env`).not.toThrow();
          // The container ports are the ones the daemon listens on in that pod.
          const settings = loadSettings(literal);
          for (const p of c.ports ?? []) {
            const listening = { http: settings.PORT, agent: settings.WORKER_PORT, ingress: settings.WORKER_INGRESS_PORT }[p.name ?? ''];
            expect(p.containerPort, `${w.metadata.name} port ${p.name}`).toBe(listening);
          }
        }
      }
    });

    it('every secret reference names a key of the Secret, whose values are marked as examples to replace', () => {
      const objects = objectsOf(overlay);
      const secrets = objects.filter((o) => o.kind === 'Secret');
      for (const s of secrets) {
        for (const [key, value] of Object.entries((s as { stringData?: Record<string, string> }).stringData ?? {})) {
          expect(value, `${s.metadata.name}.${key}`).toContain('REPLACE-ME');
        }
      }
      for (const w of workloads(objects)) {
        for (const e of w.spec.template.spec.containers.flatMap((c) => c.env ?? [])) {
          const ref = e.valueFrom?.secretKeyRef;
          if (!ref) continue;
          const secret = find(objects, 'Secret', ref.name) as { stringData?: Record<string, string>; data?: Record<string, string> } | undefined;
          expect(secret, `${w.metadata.name}: Secret ${ref.name}`).toBeDefined();
          expect({ ...secret!.data, ...secret!.stringData }, `${w.metadata.name}: ${ref.name}.${ref.key}`).toHaveProperty([ref.key]);
        }
      }
    });

    it('pods run as the service account the Role for Services is bound to', () => {
      const objects = objectsOf(overlay);
      const role = find(objects, 'Role', 'svc-services') as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] } | undefined;
      expect(role).toBeDefined();
      const rule = role!.rules.find((r) => r.apiGroups.includes('') && r.resources.includes('services'));
      expect(rule?.verbs).toEqual(expect.arrayContaining(['get', 'list', 'create', 'patch', 'delete']));
      const binding = objects.find((o) => o.kind === 'RoleBinding') as
        | (K8sObject & { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace?: string }[] })
        | undefined;
      expect(binding?.roleRef).toMatchObject({ kind: 'Role', name: 'svc-services' });
      const subject = binding!.subjects.find((s) => s.kind === 'ServiceAccount')!;
      expect(subject.namespace, 'the subject is in the namespace of the objects').toBe(binding!.metadata.namespace);
      expect(find(objects, 'ServiceAccount', subject.name)).toBeDefined();
      for (const w of workloads(objects)) expect(w.spec.template.spec.serviceAccountName, w.metadata.name).toBe(subject.name);
    });

    it('pods run as non-root on a read-only root filesystem, writing only to volumes, without service links', () => {
      for (const w of workloads(objectsOf(overlay))) {
        const pod = w.spec.template.spec;
        // Service links would set e.g. SVC_PORT=tcp://... for a Service named svc: settings named SVC_*.
        expect(pod.enableServiceLinks, w.metadata.name).toBe(false);
        expect(pod.securityContext?.runAsNonRoot, w.metadata.name).toBe(true);
        for (const c of pod.containers) {
          expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
          const env = envOf(c);
          const mounts = (c.volumeMounts ?? []).map((m) => m.mountPath);
          const written = [...WRITABLE_SETTINGS, ...(env.has('SVC_DB_URL') ? [] : ['DB_PATH'])];
          for (const name of written) {
            const value = env.get(`SVC_${name}`)?.value;
            expect(value, `${w.metadata.name} sets SVC_${name} (its default is on the read-only image)`).toBeDefined();
            expect(
              mounts.some((m) => value === m || value!.startsWith(`${m}/`)),
              `${w.metadata.name}: SVC_${name}=${value} is on a volume`,
            ).toBe(true);
          }
        }
      }
    });
  });

  it('standalone: one pod, replaced not rolled, with its SQLite file on a claimed volume', () => {
    const objects = objectsOf('standalone');
    const [w] = workloads(objects) as [Workload & { spec: { strategy?: { type: string } } }];
    expect(w.spec.replicas).toBe(1);
    expect(w.spec.strategy?.type).toBe('Recreate');
    const c = w.spec.template.spec.containers[0]!;
    const env = envOf(c);
    expect(env.get('SVC_MODE')?.value).toBe('standalone');
    expect(env.has('SVC_DB_URL'), 'standalone uses SQLite').toBe(false);
    const dbDir = posix.dirname(env.get('SVC_DB_PATH')!.value!);
    const mount = c.volumeMounts!.find((m) => m.mountPath === dbDir)!;
    const claim = w.spec.template.spec.volumes!.find((v) => v.name === mount.name)?.persistentVolumeClaim?.claimName;
    expect(claim && find(objects, 'PersistentVolumeClaim', claim), `the volume at ${dbDir} is a claim of the overlay`).toBeTruthy();
  });

  it('cluster: the manager finds every worker through the headless Service and is called back through its own', () => {
    const objects = objectsOf('cluster');
    const manager = workloads(objects).find((w) => w.kind === 'Deployment')!;
    const worker = workloads(objects).find((w) => w.kind === 'StatefulSet')!;
    const managerEnv = envOf(manager.spec.template.spec.containers[0]!);
    const workerEnv = envOf(worker.spec.template.spec.containers[0]!);
    expect(managerEnv.get('SVC_MODE')?.value).toBe('manager');
    expect(workerEnv.get('SVC_MODE')?.value).toBe('worker');
    for (const env of [managerEnv, workerEnv]) expect(env.get('SVC_INTERNAL_AUTH_MODE')?.value).toBe('enforce');
    expect(managerEnv.get('SVC_DB_URL')?.valueFrom?.secretKeyRef?.key).toBe('SVC_DB_URL');

    // DNS discovery: <service>-<i>.<service>.<namespace>.svc for i < SVC_WORKER_REPLICAS.
    expect(worker.metadata.name).toBe(WORKER_SERVICE);
    expect(worker.spec.serviceName).toBe(WORKER_SERVICE);
    expect(managerEnv.get('SVC_WORKER_SERVICE')?.value).toBe(WORKER_SERVICE);
    expect(Number(managerEnv.get('SVC_WORKER_REPLICAS')?.value)).toBe(worker.spec.replicas);
    expect(managerEnv.get('SVC_WORKER_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
    expect(managerEnv.get('SVC_WORKER_PORT')?.value).toBe(workerEnv.get('SVC_WORKER_PORT')?.value);
    const headless = find(objects, 'Service', WORKER_SERVICE) as K8sObject & { spec: { clusterIP?: string; selector: Record<string, string> } };
    expect(headless?.spec.clusterIP).toBe('None');
    expect(selects(headless.spec.selector, worker.spec.template.metadata.labels)).toBe(true);

    // Callbacks: SVC_MANAGER_URL is a Service of the overlay that selects the managers, on their API port.
    const url = new URL(workerEnv.get('SVC_MANAGER_URL')!.value!);
    const api = find(objects, 'Service', url.hostname) as K8sObject & { spec: { selector: Record<string, string>; ports: { port: number }[] } };
    expect(api, `Service ${url.hostname}`).toBeDefined();
    expect(selects(api.spec.selector, manager.spec.template.metadata.labels)).toBe(true);
    expect(api.spec.ports.map((p) => p.port)).toContain(Number(url.port));

    // Spool and outbox on a per-worker claim mounted at SVC_DATA_DIR.
    const claim = worker.spec.volumeClaimTemplates?.[0]?.metadata.name;
    const mount = worker.spec.template.spec.containers[0]!.volumeMounts!.find((m) => m.name === claim);
    expect(mount?.mountPath).toBe('/data');
    expect(workerEnv.get('SVC_DATA_DIR')?.value).toBe(mount?.mountPath);
    expect(workerEnv.get('SVC_STATE_DIR')?.value?.startsWith(`${mount?.mountPath}/`)).toBe(true);

    // Workers are drained one at a time.
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget') as K8sObject & {
      spec: { maxUnavailable?: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(selects(pdb.spec.selector.matchLabels, worker.spec.template.metadata.labels)).toBe(true);
    expect(pdb.spec.maxUnavailable).toBe(1);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const instructions = dockerfile
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args = (op: string) => instructions.filter((l) => l.toUpperCase().startsWith(`${op} `)).map((l) => l.slice(op.length + 1).trim());
  const stages = args('FROM');

  it('builds on the newest Node LTS image (node:26, Debian bookworm slim) in every stage', () => {
    const argDefaults = new Map(args('ARG').map((a) => a.split('=') as [string, string]));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      const image = stage.split(/\s+/)[0]!.replace(/^\$\{(\w+)\}$/, (_, name: string) => argDefaults.get(name) ?? '');
      const m = /^node:(\d+)-bookworm-slim$/.exec(image);
      expect(m, `FROM ${stage}`).not.toBeNull();
      // An LTS line is even-numbered; 26 is the newest (package.json's engines: ^22.19 || ^24 || >=26).
      expect(Number(m![1]) % 2, `FROM ${stage}`).toBe(0);
      expect(Number(m![1]), `FROM ${stage}`).toBeGreaterThanOrEqual(26);
    }
  });

  it('runs `svc serve` as a non-root user, with /data as a volume and the three ports exposed', () => {
    expect(JSON.parse(args('CMD').at(-1)!)).toEqual(['svc', 'serve']);
    expect(instructions.some((l) => l.toUpperCase().startsWith('ENTRYPOINT '))).toBe(false);
    const user = args('USER').at(-1)!;
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(user.split(':')[0]).not.toBe('0');
    expect(args('VOLUME')).toContain('/data');
    const exposed = args('EXPOSE')
      .flatMap((a) => a.split(/\s+/))
      .map(Number);
    const defaults = loadSettings({});
    expect(exposed.sort()).toEqual([defaults.PORT, defaults.WORKER_PORT, defaults.WORKER_INGRESS_PORT].sort());
    expect(instructions.join('\n')).toMatch(/npm ci\b/);
    expect(instructions.join('\n')).toMatch(/npm run build\b/);
    expect(instructions.join('\n')).toMatch(/npm prune --omit=dev\b/);
  });

  it('sets only SVC_* variables that src/settings.ts knows, to values it accepts', () => {
    const env: Record<string, string> = {};
    for (const a of args('ENV')) for (const m of a.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
    const svcNames = Object.keys(env).filter((k) => k.startsWith('SVC_'));
    expect(svcNames.length).toBeGreaterThan(0);
    for (const name of svcNames) expect(isSetting(name), name).toBe(true);
    expect(() => loadSettings(env)).not.toThrow();
  });

  it("keeps doc 2's MIB folders: SVC_MIB_DIR=/mibs and SVC_MIB_SOURCE_DIR=/mib-sources set (never the ~/.svc fallback), created and owned by the user", () => {
    const env: Record<string, string> = {};
    for (const a of args('ENV')) for (const m of a.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
    expect(env).toMatchObject({ SVC_MIB_DIR: '/mibs', SVC_MIB_SOURCE_DIR: '/mib-sources' });
    expect(loadSettings(env).defaulted).not.toContain('MIB_DIR');
    expect(loadSettings(env).defaulted).not.toContain('MIB_SOURCE_DIR');
    const run = args('RUN').join('\n');
    expect(run).toMatch(/mkdir -p [^\n]*\/mibs \/mib-sources/);
    expect(run).toMatch(/chown 1000:1000 [^\n]*\/mibs \/mib-sources/);
  });

  it('.dockerignore keeps the local node_modules and dist out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
    // What the Dockerfile copies from the context must not be ignored.
    for (const copied of args('COPY')
      .filter((a) => !a.startsWith('--from'))
      .flatMap((a) => a.split(/\s+/).slice(0, -1))) {
      expect(ignored, `COPY ${copied}`).not.toContain(copied);
    }
  });
});
