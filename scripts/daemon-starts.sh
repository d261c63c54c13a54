#!/usr/bin/env bash
# The README's example, N times (issue 35's "no abort in 20 daemon starts"): each round starts
# `svc serve` (dist/, as `npm start` does) on free loopback ports with a fresh SQLite database,
# registers examples/interfaces.yaml, runs it, waits for its run record to say success, reads
# /api/runs, then sends SIGTERM and requires exit status 0 (an abort is 134, a crash in native code
# at teardown shows there). Runs on the Node that scripts/supported-node.mjs picks; `--node VERSION`
# picks another one, as in supported-node.mjs.
#   bash scripts/daemon-starts.sh [--node VERSION] [N]     (N: 20)
set -euo pipefail
cd "$(dirname "$0")/.."
node_args=()
if [ "${1:-}" = --node ]; then node_args=(--node "$2"); shift 2; fi
rounds=${1:-20}
[ -f dist/cli/main.js ] || { echo "dist/ is missing: npm install builds it" >&2; exit 1; }

work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
wait_for() { # url, seconds
  local deadline=$((SECONDS + $2))
  until curl -fsS "$1" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
}

passed=0
for i in $(seq 1 "$rounds"); do
  dir="$work/$i"
  mkdir -p "$dir/pipelines" "$dir/out"
  port=$(free_port)
  console=$(free_port)
  SVC_HOST=127.0.0.1 SVC_PORT=$port SVC_CONSOLE_PORT=$console SVC_DB_PATH="$dir/svc.db" SVC_STATE_DIR="$dir/state" \
    SVC_PIPELINE_DIR="$dir/pipelines" SVC_DATA_DIR="$dir" SVC_MIB_DIR="$dir/mibs" SVC_SCHEMA_DIR="$dir/schemas" SVC_LOG_LEVEL=WARNING \
    EXAMPLE_OUT="$dir/out" \
    node scripts/supported-node.mjs "${node_args[@]}" --addons node dist/cli/main.js serve >"$dir/log" 2>&1 &
  pid=$!
  api=http://127.0.0.1:$port/api
  wait_for "$api/health" 120 || { echo "round $i: the daemon did not come up"; tail -20 "$dir/log"; exit 1; }
  curl -fsS -X POST -H 'content-type: application/yaml' --data-binary @examples/interfaces.yaml "$api/pipelines" >/dev/null
  curl -fsS -X POST "$api/pipelines/interfaces-up/run" >/dev/null
  deadline=$((SECONDS + 60))
  until curl -fsS "$api/runs" | grep -q '"status":"success"'; do
    [ $SECONDS -lt $deadline ] || { echo "round $i: the run did not succeed"; curl -sS "$api/runs"; exit 1; }
    sleep 0.2
  done
  [ -n "$(ls "$dir/out")" ] || { echo "round $i: nothing written to out/"; exit 1; }
  kill -TERM "$pid"
  set +e
  wait "$pid"
  status=$?
  set -e
  pid=
  if [ "$status" -ne 0 ]; then
    echo "round $i: exit status $status after SIGTERM"
    tail -20 "$dir/log"
    exit 1
  fi
  passed=$((passed + 1))
done
echo "daemon starts: $passed of $rounds started, ran the README's example and exited 0 on SIGTERM ($(node scripts/supported-node.mjs "${node_args[@]}" node --version))"
