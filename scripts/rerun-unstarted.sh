#!/usr/bin/env bash
# scripts/rerun-unstarted.sh STATUS LOG COMMAND...: after a test run that exited with STATUS and
# printed LOG, decides whether it failed only because vitest could not start a fork for some test
# files ("Failed to start forks worker ... Timeout waiting for worker to respond",
# vitest-dev/vitest#8968): those files never ran, although every test that ran passed. Only in that
# case it runs them again on their own with COMMAND (given the paths as its last arguments) and
# exits with that run's status; a failed test, or any other error, exits with STATUS.
# Used by .ci/run for both of its whole-suite legs (Node 26 and, through test-on-node.sh, Node 24).
set -uo pipefail
status=$1
log=$2
shift 2
[ "$status" -eq 0 ] && exit 0
plain=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
unstarted=$(printf '%s\n' "$plain" | grep -o 'Failed to start forks worker for test files [^ ]*' | sed 's/.*test files //; s/\.$//' | sort -u || true)
errors=$(printf '%s\n' "$plain" | grep -cE '^ *Errors +[0-9]+ errors?' || true)
failed=$(printf '%s\n' "$plain" | grep -cE '^ *Test Files .*[0-9]+ failed' || true)
vitest_errors=$(printf '%s\n' "$plain" | grep -c 'Unhandled Error ' || true)
if [ -n "$unstarted" ] && [ "$failed" -eq 0 ] && [ "$errors" -eq 1 ] && [ "$vitest_errors" -eq "$(printf '%s\n' "$unstarted" | wc -l)" ]; then
  echo "vitest could not start a worker for: $unstarted; running them again on their own"
  # shellcheck disable=SC2086 # one path per word
  "$@" $unstarted
  exit $?
fi
exit "$status"
