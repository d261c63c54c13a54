// `svc plugins [--json]`: the registered plugins.
import { pluginKeys, registry } from '../plugins/registry.js';

export function cmdPlugins(json: boolean): number {
  if (json) {
    process.stdout.write(JSON.stringify(pluginKeys(), null, 2) + '\n');
    return 0;
  }
  for (const [kind, plugins] of Object.entries(registry)) {
    process.stdout.write(`${kind}s:\n`);
    for (const p of plugins.values()) process.stdout.write(`  ${p.key.padEnd(16)} ${p.summary}\n`);
  }
  return 0;
}
