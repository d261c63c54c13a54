// Example listening sources, written as a new connector would be: a schema with its default port,
// and a `resources` declaration of what it needs from the deployment. Registered into a registry
// the test builds (no line in src/plugins/registry.ts), they show that the cluster (its Kubernetes
// Service, its stream placements) follows a source's declaration with no edit in src/cluster.
import { Type } from '@sinclair/typebox';
import { registry } from '../../src/plugins/registry.js';
import type { Registry } from '../../src/config/load.js';
import { defineSource } from '../../src/plugins/types.js';

const idle = () => ({
  async *units(signal: AbortSignal) {
    await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
    yield* []; // no units: the source idles until stopped
  },
});

/** A flow collector (IPFIX) on a UDP port: 4739 unless told. */
export const flowsSource = defineSource({
  key: 'flows',
  summary: 'Test source: IPFIX flow records on a UDP port.',
  mode: 'stream',
  delivery: { guarantee: 'at-most-once', why: 'test source' },
  config: Type.Object(
    {
      host: Type.String({ default: '0.0.0.0', description: 'Address to listen on.' }),
      port: Type.Integer({ minimum: 0, maximum: 65535, default: 4739, description: 'UDP port to listen on.' }),
    },
    { additionalProperties: false },
  ),
  resources: (c) => [{ kind: 'listen', protocol: 'udp', host: c.host, port: c.port, name: 'ipfix' }],
  examples: [],
  test: async () => {},
  create: idle,
});

/** An OTLP receiver: gRPC on its own TCP port, and HTTP pushes on the worker ingress. */
export const otlpSource = defineSource({
  key: 'otlp',
  summary: 'Test source: OTLP over gRPC on a TCP port and over HTTP on the ingress.',
  mode: 'stream',
  delivery: { guarantee: 'at-least-once', why: 'test source' },
  config: Type.Object(
    {
      host: Type.String({ default: '0.0.0.0', description: 'Address the gRPC server listens on.' }),
      grpc_port: Type.Integer({ minimum: 1, maximum: 65535, default: 4317, description: 'gRPC port.' }),
      path: Type.String({ default: 'otlp', description: 'Served at POST /webhooks/<path>.' }),
    },
    { additionalProperties: false },
  ),
  resources: (c) => [
    { kind: 'listen', protocol: 'tcp', host: c.host, port: c.grpc_port, name: 'otlp-grpc' },
    { kind: 'ingress', path: c.path },
  ],
  examples: [],
  test: async () => {},
  create: idle,
});

/** A source that only takes pushes on the ingress (as webhook does). */
export const pushSource = defineSource({
  key: 'push',
  summary: 'Test source: HTTP pushes on the ingress.',
  mode: 'stream',
  delivery: { guarantee: 'at-least-once', why: 'test source' },
  config: Type.Object({ path: Type.String({ minLength: 1, description: 'Served at POST /webhooks/<path>.' }) }, { additionalProperties: false }),
  resources: (c) => [{ kind: 'ingress', path: c.path }],
  examples: [],
  test: async () => {},
  create: idle,
});

/** The real registry with the example sources added: what one registry line each would do. */
export const listeningRegistry: Registry = {
  ...registry,
  source: new Map([...registry.source, ['flows', flowsSource], ['otlp', otlpSource], ['push', pushSource]]),
};
