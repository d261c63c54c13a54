// The README's MQTT walk-through, as a user runs it: examples/mqtt-alarms.yaml registered with a
// daemon, alarms published with mosquitto_pub on the machine's broker, the major one in the file.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { quiet, until } from '../helpers/wait.js';

const run = promisify(execFile);
const example = readFileSync(join(import.meta.dirname, '..', '..', 'examples', 'mqtt-alarms.yaml'), 'utf8');
const saved = process.env.EXAMPLE_OUT;
afterEach(() => {
  if (saved === undefined) delete process.env.EXAMPLE_OUT;
  else process.env.EXAMPLE_OUT = saved;
});

describe('README: MQTT alarms into a file', () => {
  it('keeps the major alarm, drops the minor one, and labels it with its topic', async () => {
    const d = await testDaemon();
    process.env.EXAMPLE_OUT = join(d.dir, 'out');
    const topic = `alarms/core/gnb-${process.pid}`;
    expect((await d.call('POST', '/api/pipelines', { yaml: example })).status).toBe(201);
    const check = await d.call('POST', '/api/connectors/test', { body: { type: 'mqtt', host: 'localhost', topic: 'alarms/#' } });
    expect(check.body).toMatchObject({ ok: true, error: null });
    await until(
      async () =>
        (await d.call('GET', '/metrics')).text.includes('svc_connector_state{pipeline="mqtt-alarms",component="source",type="mqtt",state="connected"} 1')
          ? true
          : undefined,
      15_000,
    );
    await run('mosquitto_pub', ['-h', 'localhost', '-q', '1', '-t', topic, '-m', JSON.stringify({ severity: 'minor', node: 'gnb-17', text: 'fan speed' })]);
    await run('mosquitto_pub', ['-h', 'localhost', '-q', '1', '-t', topic, '-m', JSON.stringify({ severity: 'major', node: 'gnb-17', text: 'S1 link down' })]);
    const file = join(d.dir, 'out', 'mqtt-alarms.ndjson');
    // The example's persistent session may hand on what an earlier run left: only this run's topic counts.
    const ours = () =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
            .filter((r) => r.topic === topic)
        : [];
    await until(() => ours().length > 0 || undefined, 15_000);
    await quiet(200); // the minor one, had it passed the filter, would be here too
    expect(ours()).toEqual([{ severity: 'major', node: 'gnb-17', text: 'S1 link down', topic }]);
    expect((await d.call('DELETE', '/api/pipelines/mqtt-alarms')).status).toBe(204);
  });
});
