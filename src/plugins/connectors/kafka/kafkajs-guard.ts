// A guard around a kafkajs 2.2.4 bug (its last release; the fallback engine). When a fetcher fails
// with KafkaJSFetcherRebalanceError (the brokers' node ids changed: a broker restart) while the
// consumer is being stopped, kafkajs's FetchManager creates new fetchers after the stop. Their
// loop calls Runner.fetch(), which returns [] at once for a stopped runner: an endless chain of
// resolved promises that starves the event loop (100% CPU, no timer fires, the process hangs).
// Seen here in the conformance restart test (a JS stack taken from the hung worker: fetcher.js
// `while (isRunning) { await fetch(nodeId) }`). The guard makes that fetch fail instead: the
// fetcher ends, and kafkajs's runner, not running any more, ends its fetch loop.
import { createRequire } from 'node:module';

interface RunnerLike {
  running: boolean;
}
type Fetch = (this: RunnerLike, nodeId: number) => Promise<unknown[]>;

let installed = false;

export function guardKafkajsFetch() {
  if (installed) return;
  installed = true;
  const require = createRequire(import.meta.url);
  const Runner = require('kafkajs/src/consumer/runner.js') as { prototype: { fetch: Fetch } };
  const fetch = Runner.prototype.fetch;
  Runner.prototype.fetch = async function (this: RunnerLike, nodeId: number) {
    if (!this.running) throw new Error('kafkajs: the consumer was stopped; this fetcher ends (svc guard, see kafkajs-guard.ts)');
    return fetch.call(this, nodeId);
  };
}
