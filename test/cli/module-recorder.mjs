// A module loader hook for test/cli/lazy-commands.test.ts: appends every URL the process resolves
// to the file named by SVC_TEST_MODULE_LOG, one a line. Registered after tsx, so it sees the .ts
// files tsx resolves to. Plain JavaScript: it runs in the loader's own thread.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const log = process.env.SVC_TEST_MODULE_LOG;

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (log) appendFileSync(log, r.url + '\n');
  return r;
}

// Imported with --import on the main thread: register this very file as the hook; the loader's
// thread then imports it again, only for `resolve`.
if (isMainThread && log) register(import.meta.url);
