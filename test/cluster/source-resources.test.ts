// Adding a listening source touches only its folder, the registry line and its docs: example sources
// of the tests (helpers/listening-sources.ts), registered into a registry the test builds, get their
// Kubernetes Service and their stream placement from what they declare (SourcePlugin.resources),
// with no edit in src/cluster.
import { Registry as PromRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { serviceManifest } from '../../src/cluster/kubernetes.js';
import { clusterMetrics } from '../../src/cluster/metrics.js';
import type { SqlPlacementStore } from '../../src/cluster/placement-store.js';
import { StreamPlacements } from '../../src/cluster/placements.js';
import { sourceResources, takesIngressPushes } from '../../src/cluster/source-resources.js';
import { loadPipelineText } from '../../src/config/load.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import type { RunJob } from '../../src/pipelines/executor.js';
import { silentLogger } from '../../src/observability/log.js';
import { listeningRegistry } from '../helpers/listening-sources.js';

const INGRESS = 8767;
const sources = listeningRegistry.source;

/** The pipeline as the daemon holds it: validated against the test's registry, defaults applied. */
function pipeline(source: string, kubernetes = '{ enabled: true }'): { yaml: string; config: PipelineConfig } {
  const yaml = [
    'version: "1"',
    'pipeline:',
    '  name: flows-in',
    '  schedule: { type: stream }',
    `  source: ${source}`,
    '  serializer_in: { type: json }',
    '  serializer_out: { type: ndjson }',
    '  sinks:',
    '    - { type: local, path: /tmp/unused }',
    `  kubernetes: ${kubernetes}`,
    '',
  ].join('\n');
  const { config, diagnostics } = loadPipelineText(yaml, { registry: listeningRegistry });
  expect(diagnostics).toEqual([]);
  return { yaml, config: config! };
}

describe('a source declares what it needs from the deployment', () => {
  it('the declaration is read with the schema defaults applied', () => {
    expect(sourceResources({ type: 'flows' }, sources)).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 4739, name: 'ipfix' }]);
    expect(sourceResources({ type: 'flows', port: 2055 }, sources)).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 2055, name: 'ipfix' }]);
    // The built-in listeners declare theirs too, from their own schema defaults.
    expect(sourceResources({ type: 'syslog' })).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 514, name: 'syslog' }]);
    expect(sourceResources({ type: 'snmp_trap' })).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 162, name: 'snmp-trap' }]);
    expect(sourceResources({ type: 'flow' })).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 2055, name: 'flow' }]);
    expect(sourceResources({ type: 'flow', protocol: 'sflow' })).toEqual([{ kind: 'listen', protocol: 'udp', host: '0.0.0.0', port: 6343, name: 'flow' }]);
    expect(sourceResources({ type: 'webhook', path: 'ves' })).toEqual([{ kind: 'ingress', path: 'ves' }]);
    expect(sourceResources({ type: 'kafka', brokers: ['b:9092'], topic: 't' })).toEqual([]);
    // Unknown to the registry in use: nothing.
    expect(sourceResources({ type: 'flows' })).toEqual([]);
  });

  it('the Kubernetes Service exposes the ports the source declares', () => {
    const flows = serviceManifest(pipeline('{ type: flows }').config, INGRESS, sources)!;
    expect(flows.spec!.ports).toEqual([{ name: 'ipfix', protocol: 'UDP', port: 4739, targetPort: 4739 }]);
    expect(flows.spec!.externalTrafficPolicy).toBe('Local');
    const fixed = serviceManifest(pipeline('{ type: flows, port: 2055 }', '{ enabled: true, node_port: 32055 }').config, INGRESS, sources)!;
    expect(fixed.spec!.ports).toEqual([{ name: 'ipfix', protocol: 'UDP', port: 2055, targetPort: 2055, nodePort: 32055 }]);

    const push = serviceManifest(pipeline('{ type: push, path: events }').config, INGRESS, sources)!;
    expect(push.spec!.ports).toEqual([{ name: 'http', protocol: 'TCP', port: INGRESS, targetPort: INGRESS }]);
    expect(push.spec!.externalTrafficPolicy).toBe('Cluster');

    // Two resources: both ports; one node_port cannot serve both.
    const otlp = serviceManifest(pipeline('{ type: otlp }').config, INGRESS, sources)!;
    expect(otlp.spec!.ports).toEqual([
      { name: 'otlp-grpc', protocol: 'TCP', port: 4317, targetPort: 4317 },
      { name: 'http', protocol: 'TCP', port: INGRESS, targetPort: INGRESS },
    ]);
    expect(otlp.spec!.externalTrafficPolicy).toBe('Local');
    expect(() => serviceManifest(pipeline('{ type: otlp }', '{ enabled: true, node_port: 30317 }').config, INGRESS, sources)).toThrow(
      /node_port sets one port, but this otlp source receives on 2/,
    );

    // The cluster's own checks apply to a declared port as to a built-in one.
    expect(() => serviceManifest(pipeline('{ type: flows, port: 0 }').config, INGRESS, sources)).toThrow(
      /source port 0 cannot be exposed by a Service: set a fixed port/,
    );
    expect(() => serviceManifest(pipeline('{ type: flows, host: 127.0.0.1 }').config, INGRESS, sources)).toThrow(/loopback only/);
  });

  it('a stream that takes pushes on the ingress gets a slot on every worker; a listener one slot', async () => {
    expect(takesIngressPushes({ type: 'push', path: 'p' }, sources)).toBe(true);
    expect(takesIngressPushes({ type: 'otlp' }, sources)).toBe(true);
    expect(takesIngressPushes({ type: 'flows' }, sources)).toBe(false);
    // The built-in flow collector is a listener: one slot, as syslog and snmp_trap.
    expect(takesIngressPushes({ type: 'flow' })).toBe(false);
    expect(takesIngressPushes({ type: 'syslog' })).toBe(false);

    // The placements ask every available worker for an `all` group, one picked worker for a one-slot group.
    const asked: string[] = [];
    const placements = new StreamPlacements({
      workers: {
        available: () => (asked.push('every worker'), []),
        pick: () => (asked.push('one worker'), undefined),
        healthy: () => true,
        noteDispatched: () => {},
      },
      store: { remove: async () => {}, save: async () => {} } as unknown as SqlPlacementStore,
      metrics: clusterMetrics(new PromRegistry()),
      log: silentLogger,
      call: () => ({}),
      statsIntervalMs: 1000,
      singlePlacement: false,
      nodeId: 'manager',
      sources,
    });
    const job = (source: string): RunJob => {
      const { yaml, config } = pipeline(source, '{ enabled: false }');
      return {
        name: 'flows-in',
        yaml,
        config,
        runId: '6f1c2f0e-8a51-4c3e-9d7a-1b2c3d4e5f60',
        signal: new AbortController().signal,
        log: silentLogger,
        started: async () => {},
      };
    };
    // Without SVC_STREAM_SINGLE_PLACEMENT only the push streams are placements.
    expect(placements.applies(job('{ type: push, path: events }'))).toBe(true);
    expect(placements.applies(job('{ type: otlp }'))).toBe(true);
    expect(placements.applies(job('{ type: flows }'))).toBe(false);

    for (const [source, want] of [
      ['{ type: push, path: events }', 'every worker'],
      ['{ type: otlp }', 'every worker'],
      ['{ type: flows }', 'one worker'],
    ] as const) {
      asked.length = 0;
      const record = await placements.execute(job(source));
      expect(record.status).toBe('failed');
      expect(asked[0]).toBe(want);
    }
  });
});
