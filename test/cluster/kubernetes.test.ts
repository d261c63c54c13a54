// Per-pipeline Services: the manifests (pure), then the client against the wire-level fake API
// server of k8s-api-fake.ts (no Kubernetes API server can run here).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultServiceName,
  MANAGED_BY_LABEL,
  PIPELINE_LABEL,
  PipelineServices,
  pipelineLabelValue,
  resolveNamespace,
  serviceManifest,
  type ApplyResult,
} from '../../src/cluster/kubernetes.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import { silentLogger } from '../../src/observability/log.js';
import { freePort } from '../helpers/net.js';
import { APPLY_PATCH, FakeKubeApi, parseSelector } from './k8s-api-fake.js';

const INGRESS = 8767;
const TOKEN = 'test-token';
const NS = 'telecom';

function pipeline(name: string, source: Record<string, unknown>, kubernetes?: Record<string, unknown>): PipelineConfig {
  return {
    name,
    enabled: true,
    schedule: { type: 'stream' },
    source: source as PipelineConfig['source'],
    serializer_in: { type: 'json' },
    serializer_out: { type: 'json' },
    transforms: [],
    sinks: [{ type: 'null', retry_count: 0, retry_delay_seconds: 1, transforms: [] }],
    on_error: 'continue',
    thread_workers: 1,
    skip_processed: false,
    parallel_sinks: false,
    post_batch_cleanup: true,
    ...(kubernetes ? { kubernetes: kubernetes as PipelineConfig['kubernetes'] } : {}),
  } as PipelineConfig;
}
const on = (extra: Record<string, unknown> = {}) => ({ enabled: true, ...extra });

function kubeConfig(server: string, token = TOKEN): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'svc', token }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'svc' }],
    currentContext: 'fake',
  });
  return kc;
}

function failed(r: ApplyResult | { ok: boolean; error?: string }): string {
  expect(r.ok).toBe(false);
  return (r as { error: string }).error;
}

describe('serviceManifest', () => {
  it('webhook and prometheus_rw go to the worker ingress port over TCP, NodePort by default', () => {
    const s = serviceManifest(pipeline('ves-in', { type: 'webhook', path: 'ves' }, on()), INGRESS)!;
    expect(s.metadata).toEqual({
      name: 'svc-ves-in',
      labels: { 'app.kubernetes.io/managed-by': 'svc', 'svc.io/pipeline': 'ves-in' },
      annotations: { 'svc.io/pipeline-name': 'ves-in' },
    });
    expect(s.spec).toEqual({
      type: 'NodePort',
      selector: { 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/component': 'worker' },
      ports: [{ name: 'http', protocol: 'TCP', port: INGRESS, targetPort: INGRESS }],
      externalTrafficPolicy: 'Cluster',
    });
    const rw = serviceManifest(pipeline('prom', { type: 'prometheus_rw', path: 'rw' }, on({ service_type: 'LoadBalancer', node_port: 30090 })), 9000)!;
    expect(rw.spec!.type).toBe('LoadBalancer');
    expect(rw.spec!.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30090 }]);
  });

  it('syslog uses its own port, UDP by default and TCP when it listens on TCP; sender addresses are kept (Local)', () => {
    const udp = serviceManifest(pipeline('logs', { type: 'syslog' }, on()), INGRESS)!;
    expect(udp.spec!.ports).toEqual([{ name: 'syslog', protocol: 'UDP', port: 514, targetPort: 514 }]);
    expect(udp.spec!.externalTrafficPolicy).toBe('Local');
    const tcp = serviceManifest(pipeline('logs', { type: 'syslog', protocol: 'tcp', port: 6514 }, on({ node_port: 30514 })), INGRESS)!;
    expect(tcp.spec!.ports).toEqual([{ name: 'syslog', protocol: 'TCP', port: 6514, targetPort: 6514, nodePort: 30514 }]);
  });

  it('snmp_trap is UDP on its port (162 by default)', () => {
    expect(serviceManifest(pipeline('traps', { type: 'snmp_trap' }, on()), INGRESS)!.spec!.ports).toEqual([
      { name: 'snmp-trap', protocol: 'UDP', port: 162, targetPort: 162 },
    ]);
    const lb = serviceManifest(pipeline('traps', { type: 'snmp_trap', port: 1162 }, on({ service_type: 'LoadBalancer' })), INGRESS)!;
    expect(lb.spec!.type).toBe('LoadBalancer');
    expect(lb.spec!.ports![0]).toMatchObject({ protocol: 'UDP', port: 1162 });
  });

  it('flow is UDP on the port of its protocol (2055, IPFIX 4739, sFlow 6343); exporter addresses are kept (Local)', () => {
    const auto = serviceManifest(pipeline('flows', { type: 'flow' }, on()), INGRESS)!;
    expect(auto.spec!.ports).toEqual([{ name: 'flow', protocol: 'UDP', port: 2055, targetPort: 2055 }]);
    // The exporter is the datagram's source address: Cluster would replace it with a node's, and
    // templates, sequence numbers and interface names are kept per exporter.
    expect(auto.spec!.externalTrafficPolicy).toBe('Local');
    expect(serviceManifest(pipeline('ipfix', { type: 'flow', protocol: 'ipfix' }, on()), INGRESS)!.spec!.ports).toEqual([
      { name: 'flow', protocol: 'UDP', port: 4739, targetPort: 4739 },
    ]);
    const sflow = serviceManifest(pipeline('sflow', { type: 'flow', protocol: 'sflow' }, on({ node_port: 30643 })), INGRESS)!;
    expect(sflow.spec!.ports).toEqual([{ name: 'flow', protocol: 'UDP', port: 6343, targetPort: 6343, nodePort: 30643 }]);
    expect(() => serviceManifest(pipeline('f', { type: 'flow', host: '127.0.0.1' }, on()), INGRESS)).toThrow(/loopback only/);
  });

  it('needs none without the block or with enabled false', () => {
    expect(serviceManifest(pipeline('a', { type: 'webhook', path: 'a' }), INGRESS)).toBeUndefined();
    expect(serviceManifest(pipeline('a', { type: 'webhook', path: 'a' }, { enabled: false }), INGRESS)).toBeUndefined();
  });

  it('refuses what cannot be a Service, saying what to change', () => {
    expect(() => serviceManifest(pipeline('k', { type: 'kafka', brokers: ['b:9092'], topic: 't' }, on()), INGRESS)).toThrow(
      /kafka source receives no traffic.*remove the kubernetes block/,
    );
    expect(() => serviceManifest(pipeline('t', { type: 'snmp_trap', port: 0 }, on()), INGRESS)).toThrow(/set a fixed port/);
    expect(() => serviceManifest(pipeline('s', { type: 'syslog', host: '127.0.0.1' }, on()), INGRESS)).toThrow(/loopback only.*host 0\.0\.0\.0/);
    expect(() => serviceManifest(pipeline('s', { type: 'syslog' }, on({ service_name: 'Bad_Name' })), INGRESS)).toThrow(
      /kubernetes.service_name "Bad_Name" is not a valid Service name/,
    );
  });

  it('names: service_name wins; the default is DNS-1035 and at most 63 characters; long or odd names get valid labels', () => {
    expect(serviceManifest(pipeline('x', { type: 'syslog' }, on({ service_name: 'syslog-edge' })), INGRESS)!.metadata!.name).toBe('syslog-edge');
    expect(defaultServiceName('Core_Traps.v2')).toBe('svc-core-traps-v2');
    const long = `p${'x'.repeat(120)}`;
    const name = defaultServiceName(long);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
    expect(defaultServiceName(`${long}y`)).not.toBe(name);
    for (const p of [long, 'ends-with-dot.']) {
      const v = pipelineLabelValue(p);
      expect(v.length).toBeLessThanOrEqual(63);
      expect(v).toMatch(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
    }
    const s = serviceManifest(pipeline(long, { type: 'syslog' }, on()), INGRESS)!;
    expect(s.metadata!.annotations!['svc.io/pipeline-name']).toBe(long);
  });
});

describe('resolveNamespace', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-k8s-ns-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the setting, then SVC_POD_NAMESPACE, then the service account file', () => {
    const file = join(dir, 'namespace');
    writeFileSync(file, 'from-file\n');
    expect(resolveNamespace({ namespace: 'explicit', env: { SVC_POD_NAMESPACE: 'env' }, namespaceFile: file })).toBe('explicit');
    expect(resolveNamespace({ env: { SVC_POD_NAMESPACE: 'env' }, namespaceFile: file })).toBe('env');
    expect(resolveNamespace({ env: {}, namespaceFile: file })).toBe('from-file');
  });

  it('says what to set when there is none', () => {
    expect(() => resolveNamespace({ env: {}, namespaceFile: join(dir, 'missing') })).toThrow(/set SVC_POD_NAMESPACE/);
  });
});

describe('PipelineServices against the fake API server', () => {
  let fake: FakeKubeApi;
  let services: PipelineServices;
  const make = (opts: { token?: string; namespace?: string; namespaceFile?: string } = {}) =>
    new PipelineServices({
      kubeConfig: kubeConfig(fake.url, opts.token),
      namespace: opts.namespaceFile ? undefined : (opts.namespace ?? NS),
      namespaceFile: opts.namespaceFile,
      env: {},
      ingressPort: INGRESS,
      log: silentLogger,
    });

  beforeAll(async () => {
    fake = await FakeKubeApi.start({ token: TOKEN, namespaces: [NS, 'other'] });
  });
  afterAll(() => fake.close());
  afterEach(async () => {
    // Each case starts from an empty namespace.
    for (const s of fake.services(NS))
      await fetch(`${fake.url}/api/v1/namespaces/${NS}/services/${s.metadata.name}`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
    fake.requests.length = 0;
  });
  beforeAll(() => {
    services = make();
  });

  it('creates by server-side apply and applying twice changes nothing', async () => {
    const config = pipeline('ves-in', { type: 'webhook', path: 'ves' }, on());
    const first = await services.apply(config);
    expect(first.ok).toBe(true);
    const created = (first as unknown as { service: { metadata: Record<string, string>; spec: { ports: { nodePort: number }[]; clusterIP: string } } }).service;
    expect(created.spec.ports[0]!.nodePort).toBeGreaterThanOrEqual(30000);
    const patch = fake.requests.find((r) => r.method === 'PATCH')!;
    expect(patch).toMatchObject({ path: `/api/v1/namespaces/${NS}/services/svc-ves-in`, contentType: APPLY_PATCH, status: 201 });
    expect(patch.query).toMatchObject({ fieldManager: 'svc', force: 'true' });

    fake.requests.length = 0;
    const second = await services.apply(config);
    expect(second.ok).toBe(true);
    const again = (second as unknown as { service: typeof created }).service;
    expect(fake.requests.find((r) => r.method === 'PATCH')!.status).toBe(200);
    expect(again.metadata.uid).toBe(created.metadata.uid);
    expect(again.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    expect(again.spec.ports[0]!.nodePort).toBe(created.spec.ports[0]!.nodePort);
    expect(again.spec.clusterIP).toBe(created.spec.clusterIP);
    expect(fake.services(NS)).toHaveLength(1);
  });

  it('a nodePort already allocated surfaces as what to change', async () => {
    expect((await services.apply(pipeline('traps', { type: 'snmp_trap', port: 1162 }, on({ node_port: 30080 })))).ok).toBe(true);
    const error = failed(await services.apply(pipeline('logs', { type: 'syslog', port: 5514 }, on({ node_port: 30080 }))));
    expect(error).toBe(
      'cannot apply Service svc-logs: nodePort 30080 is already allocated: choose another kubernetes.node_port (or leave it out to get a free one)',
    );
    const range = failed(await services.apply(pipeline('logs', { type: 'syslog', port: 5514 }, on({ node_port: 514 }))));
    expect(range).toMatch(/nodePort 514 is outside the cluster's NodePort range \(.*30000-32767\): choose a kubernetes.node_port inside it/);
    expect(fake.services(NS).map((s) => s.metadata.name)).toEqual(['svc-traps']);
  });

  it('a flow pipeline gets its UDP Service, applied and found by its pipeline label', async () => {
    expect((await services.apply(pipeline('edge-flows', { type: 'flow', protocol: 'ipfix' }, on()))).ok).toBe(true);
    const [svc] = fake.services(NS);
    expect(svc!.metadata.name).toBe('svc-edge-flows');
    expect(svc!.metadata.labels).toMatchObject({ [PIPELINE_LABEL]: 'edge-flows', [MANAGED_BY_LABEL]: 'svc' });
    expect(svc!.spec).toMatchObject({
      type: 'NodePort',
      externalTrafficPolicy: 'Local',
      ports: [{ name: 'flow', protocol: 'UDP', port: 4739, targetPort: 4739 }],
    });
  });

  it('reconcile deletes the managed Services of pipelines that are gone, by label, and leaves others alone', async () => {
    const a = pipeline('a', { type: 'syslog', port: 5514 }, on());
    const b = pipeline('b', { type: 'webhook', path: 'b' }, on({ service_type: 'LoadBalancer' }));
    fake.put(NS, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'svc-api', labels: { 'app.kubernetes.io/name': 'svc' } },
      spec: { type: 'ClusterIP', ports: [{ port: 8765 }] },
    });
    fake.put('other', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'svc-c', labels: { [MANAGED_BY_LABEL]: 'svc', [PIPELINE_LABEL]: 'c' } },
      spec: { type: 'ClusterIP', ports: [{ port: 1 }] },
    });
    const first = await services.reconcile([a, b, pipeline('batch', { type: 'local', path: '/in' })]);
    expect(first.error).toBeUndefined();
    expect(Object.keys(first.results)).toEqual(['a', 'b']);
    expect(first.removed).toEqual([]);
    expect(
      fake
        .services(NS)
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(['svc-a', 'svc-api', 'svc-b']);

    fake.requests.length = 0;
    // A pipeline whose block is wrong is reported and keeps what it has.
    const broken = pipeline('k', { type: 'kafka', brokers: ['b:9092'], topic: 't' }, on());
    const second = await services.reconcile([a, broken]);
    expect(second).toEqual({
      results: { a: expect.objectContaining({ ok: true }), k: { ok: false, error: expect.stringMatching(/kafka source receives no traffic/) } },
      removed: ['svc-b'],
    });
    expect(fake.requests[0]).toMatchObject({
      method: 'GET',
      path: `/api/v1/namespaces/${NS}/services`,
      query: { labelSelector: 'app.kubernetes.io/managed-by=svc' },
    });
    expect(
      fake
        .services(NS)
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(['svc-a', 'svc-api']);
    expect(fake.services('other')).toHaveLength(1); // another namespace is not ours
  });

  it('remove(), turning the block off, and renaming take the old Service away', async () => {
    const cfg = (k?: Record<string, unknown>) => pipeline('edge', { type: 'syslog', protocol: 'tcp', port: 6514 }, k);
    expect((await services.apply(cfg(on()))).ok).toBe(true);
    expect((await services.apply(cfg(on({ service_name: 'syslog-edge' })))).ok).toBe(true);
    expect(fake.services(NS).map((s) => s.metadata.name)).toEqual(['syslog-edge']);
    expect(await services.apply(cfg({ enabled: false }))).toEqual({ ok: true, service: undefined });
    expect(fake.services(NS)).toEqual([]);
    expect((await services.apply(cfg(on()))).ok).toBe(true);
    expect(await services.remove('edge')).toEqual({ ok: true, removed: ['svc-edge'] });
    expect(await services.remove('edge')).toEqual({ ok: true, removed: [] });
  });

  it('never takes over a Service it does not own', async () => {
    fake.put(NS, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc-mine' }, spec: { type: 'ClusterIP', ports: [{ port: 80 }] } });
    expect(failed(await services.apply(pipeline('mine', { type: 'syslog' }, on())))).toMatch(
      /a Service named svc-mine exists in namespace telecom and is not managed by svc: set kubernetes.service_name/,
    );
    expect((await services.apply(pipeline('a_b', { type: 'syslog' }, on()))).ok).toBe(true);
    expect(failed(await services.apply(pipeline('a.b', { type: 'syslog' }, on())))).toBe(
      'Service svc-a-b belongs to pipeline a_b: set kubernetes.service_name to another name',
    );
  });

  it('takes back fields another manager changed (force), where a plain apply gets 409', async () => {
    const config = pipeline('traps', { type: 'snmp_trap', port: 1162 }, on());
    expect((await services.apply(config)).ok).toBe(true);
    const current = fake.services(NS)[0]!;
    fake.put(NS, { ...current, spec: { ...current.spec, type: 'LoadBalancer' } }, 'kubectl-edit');
    const manifest = serviceManifest(config, INGRESS)!;
    const plain = await fetch(`${fake.url}/api/v1/namespaces/${NS}/services/svc-traps?fieldManager=svc`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': APPLY_PATCH },
      body: JSON.stringify(manifest),
    });
    expect(plain.status).toBe(409);
    expect(await plain.json()).toMatchObject({ kind: 'Status', reason: 'Conflict', message: expect.stringContaining('conflict with "kubectl-edit" using v1') });
    expect((await services.apply(config)).ok).toBe(true);
    expect(fake.services(NS)[0]!.spec.type).toBe('NodePort');
  });

  it('a wrong token, missing RBAC, a missing namespace and an unreachable API are clear errors', async () => {
    const config = pipeline('logs', { type: 'syslog' }, on());
    expect(failed(await make({ token: 'stale' }).apply(config))).toMatch(
      /refused svc's credentials \(401 Unauthorized\): check that the pod mounts a current service account token/,
    );
    expect(failed(await make({ namespace: 'gone' }).apply(config))).toBe(
      'cannot apply Service svc-logs: namespaces "gone" not found: set SVC_POD_NAMESPACE to the namespace svc runs in',
    );
    const denied = await FakeKubeApi.start({ token: TOKEN, namespaces: [NS], forbid: ['patch'], user: 'system:serviceaccount:telecom:svc' });
    try {
      const s = new PipelineServices({ kubeConfig: kubeConfig(denied.url), namespace: NS, ingressPort: INGRESS, log: silentLogger });
      expect(failed(await s.apply(config))).toBe(
        'cannot apply Service svc-logs: services "svc-logs" is forbidden: User "system:serviceaccount:telecom:svc" cannot patch resource "services" in API group "" in the namespace "telecom": grant svc\'s service account get, list, create, patch and delete on services in namespace telecom (the Role svc-services of deploy/kubernetes/base/rbac.yaml)',
      );
    } finally {
      await denied.close();
    }
    const port = await freePort();
    const gone = new PipelineServices({ kubeConfig: kubeConfig(`http://127.0.0.1:${port}`), namespace: NS, ingressPort: INGRESS, log: silentLogger });
    expect(failed(await gone.apply(config))).toMatch(
      new RegExp(`cannot apply Service svc-logs: the Kubernetes API at http://127.0.0.1:${port} did not answer`),
    );
    expect((await gone.reconcile([config])).error).toMatch(/cannot list the Services svc manages: the Kubernetes API .* did not answer/);
  });

  it('works in the namespace of the service account file, and without one says what to set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-k8s-sa-'));
    try {
      writeFileSync(join(dir, 'namespace'), 'other');
      expect((await make({ namespaceFile: join(dir, 'namespace') }).apply(pipeline('traps', { type: 'snmp_trap' }, on()))).ok).toBe(true);
      expect(fake.services('other').map((s) => s.metadata.name)).toContain('svc-traps');
      expect(failed(await make({ namespaceFile: join(dir, 'missing') }).apply(pipeline('traps', { type: 'snmp_trap' }, on())))).toMatch(
        /cannot tell the Kubernetes namespace: set SVC_POD_NAMESPACE/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(
      failed(
        await new PipelineServices({ namespace: NS, env: {}, ingressPort: INGRESS, log: silentLogger }).apply(pipeline('traps', { type: 'snmp_trap' }, on())),
      ),
    ).toMatch(/not running in a Kubernetes pod \(KUBERNETES_SERVICE_HOST is unset\)/);
  });
});

describe('the fake answers as the API server does', () => {
  let fake: FakeKubeApi;
  beforeAll(async () => {
    fake = await FakeKubeApi.start({ token: TOKEN, namespaces: [NS] });
  });
  afterAll(() => fake.close());
  const call = async (method: string, path: string, opts: { body?: unknown; contentType?: string; token?: string } = {}) => {
    const res = await fetch(`${fake.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${opts.token ?? TOKEN}`, ...(opts.contentType ? { 'content-type': opts.contentType } : {}) },
      body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const svc = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec });
  const base = `/api/v1/namespaces/${NS}/services`;

  it('401 without the token, 404 for an unknown Service or namespace', async () => {
    expect(await call('GET', base, { token: 'x' })).toEqual({
      status: 401,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 },
    });
    expect(await call('GET', `${base}/nope`)).toEqual({
      status: 404,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'services "nope" not found',
        reason: 'NotFound',
        details: { name: 'nope', kind: 'services' },
        code: 404,
      },
    });
    expect((await call('DELETE', `${base}/nope`)).status).toBe(404);
    expect((await call('GET', '/api/v1/namespaces/none/services')).body).toMatchObject({ kind: 'ServiceList', items: [] });
    expect((await call('GET', '/api/v1/namespaces/none/services/a')).body.message).toBe('services "a" not found');
    const create = await call('POST', '/api/v1/namespaces/none/services', { body: svc('a', { ports: [{ port: 80 }] }), contentType: 'application/json' });
    expect(create).toMatchObject({
      status: 404,
      body: { reason: 'NotFound', message: 'namespaces "none" not found', details: { name: 'none', kind: 'namespaces' } },
    });
  });

  it('apply: 415 for another content type, 422 without fieldManager, 400 for a name that is not the URL one, YAML accepted', async () => {
    const s = svc('a', { type: 'NodePort', ports: [{ port: 80 }] });
    const wrongType = await call('PATCH', `${base}/a?fieldManager=t`, { body: s, contentType: 'application/merge-patch+json' });
    expect(wrongType).toMatchObject({ status: 415, body: { reason: 'UnsupportedMediaType' } });
    const noManager = await call('PATCH', `${base}/a`, { body: s, contentType: APPLY_PATCH });
    expect(noManager).toMatchObject({
      status: 422,
      body: {
        reason: 'Invalid',
        message: 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        details: { kind: 'PatchOptions' },
      },
    });
    expect((await call('PATCH', `${base}/b?fieldManager=t`, { body: s, contentType: APPLY_PATCH })).body.message).toBe(
      'the name of the object (a) does not match the name on the URL (b)',
    );
    const yaml = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: y\nspec:\n  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 30001\n';
    expect((await call('PATCH', `${base}/y?fieldManager=t`, { body: yaml, contentType: APPLY_PATCH })).status).toBe(201);
    expect((await call('PATCH', `${base}/y?fieldManager=t`, { body: yaml, contentType: APPLY_PATCH })).status).toBe(200);
  });

  it('create: 201 then 409; validation is a 422 Status with causes; delete answers the deleted Service', async () => {
    expect(
      (await call('POST', base, { body: svc('c', { type: 'NodePort', ports: [{ port: 80, nodePort: 30002 }] }), contentType: 'application/json' })).status,
    ).toBe(201);
    expect(await call('POST', base, { body: svc('c', { ports: [{ port: 80 }] }), contentType: 'application/json' })).toMatchObject({
      status: 409,
      body: { reason: 'AlreadyExists', message: 'services "c" already exists' },
    });
    const taken = await call('POST', base, { body: svc('d', { type: 'NodePort', ports: [{ port: 81, nodePort: 30002 }] }), contentType: 'application/json' });
    expect(taken).toEqual({
      status: 422,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Service "d" is invalid: spec.ports[0].nodePort: Invalid value: 30002: provided port is already allocated',
        reason: 'Invalid',
        details: {
          name: 'd',
          kind: 'Service',
          causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 30002: provided port is already allocated', field: 'spec.ports[0].nodePort' }],
        },
        code: 422,
      },
    });
    const bad = await call('POST', base, { body: svc('Bad', { type: 'ClusterIP', ports: [{ port: 80, nodePort: 30003 }] }), contentType: 'application/json' });
    expect(bad.status).toBe(422);
    expect((bad.body.details as { causes: { field: string }[] }).causes.map((c) => c.field)).toEqual(['metadata.name', 'spec.ports[0].nodePort']);
    const deleted = await call('DELETE', `${base}/c`);
    expect(deleted).toMatchObject({ status: 200, body: { kind: 'Service', metadata: { name: 'c' } } });
  });

  it('label selectors: equality, inequality, sets and existence', () => {
    const labels = { app: 'svc', tier: 'worker' };
    const m = (s: string) => {
      const f = parseSelector(s);
      if (typeof f !== 'function') throw f;
      return f(labels);
    };
    expect(m('app=svc,tier==worker')).toBe(true);
    expect(m('app!=svc')).toBe(false);
    expect(m('tier in (worker, manager),app')).toBe(true);
    expect(m('tier notin (worker)')).toBe(false);
    expect(m('!gone')).toBe(true);
    expect(m('')).toBe(true);
    expect(typeof parseSelector('a=(b')).not.toBe('function');
  });
});
