// Preloaded (`--import`) into the daemons tests start as children: when the test process dies
// without its afterEach (a vitest worker killed on timeout), the daemon is re-parented and would
// run on, holding ports and the CPU. It notices the new parent and stops as on SIGTERM; a daemon
// that does not stop within 10 s is ended hard. Test-only: the product has no such behaviour.
const parent = process.ppid;
const timer = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(timer);
  setTimeout(() => process.exit(1), 10_000).unref();
  process.kill(process.pid, 'SIGTERM');
}, 1_000);
timer.unref();
