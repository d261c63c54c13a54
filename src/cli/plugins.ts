// `svc plugins [--json]`: the registered plugins.
import { pluginKeys, registry } from '../plugins/registry.js';

export function cmdPlugins(json: boolean): number {
  if (json) {
    process.stdout.write(JSON.stringify(pluginKeys(), null, 2) + '\n');
    return 0;
  }
  for (const [kind, plugins] of Object.entries(registry)) {
    process.stdout.write(`${kind}s:\n`);
    for (const p of plugins.values()) {
      process.stdout.write(`  ${p.key.padEnd(16)} ${p.summary}\n`);
      // The client a connector runs on here, when it has a choice (kafka: librdkafka or kafkajs).
      if ((p.kind === 'source' || p.kind === 'sink') && p.engine) process.stdout.write(`  ${''.padEnd(16)} engine: ${p.engine().note}\n`);
    }
  }
  return 0;
}
