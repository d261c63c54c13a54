#!/usr/bin/env bash
# Runs the tests on one given Node.js: scripts/test-on-node.sh VERSION [vitest paths...] (no path:
# the whole suite), e.g. `bash scripts/test-on-node.sh 24.21.0 test/store test/daemon`.
#
# That Node comes from the npm registry's `node-<platform>-<arch>` package, fetched fresh into
# ~/.cache/svc/node/VERSION/ by scripts/supported-node.mjs (binary and headers), so this checkout's
# Node stays as it is. The tests run in a temporary copy of the working tree whose node_modules links
# every package of this checkout except those with a native addon: those are copied and, where their
# addon does not load on VERSION, rebuilt there against VERSION's own headers (supported-node.mjs
# --addons: the npm configuration's nodedir may point at other headers, and no prebuilt binary can be
# downloaded here); rebuilding in place would break this checkout's own Node.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { echo "usage: scripts/test-on-node.sh VERSION [vitest paths...]" >&2; exit 2; }
version=${1#v}
shift
start=$SECONDS

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# mktemp's 0700 would lock out tests that drop privileges to nobody when root.
chmod 755 "$tmp"
tar --exclude=./node_modules --exclude=./.git -cf - . | tar -C "$tmp" -xf -

# Packages holding a native addon (a binding.gyp), top level or scoped: copied, not linked.
native=$(find node_modules -mindepth 2 -maxdepth 6 -name binding.gyp -not -path '*/test/*' 2>/dev/null |
  sed -E 's#^node_modules/((@[^/]+/)?[^/]+)/.*#\1#' | sort -u)
mkdir "$tmp/node_modules"
for entry in node_modules/* node_modules/.bin; do
  case "$entry" in
    node_modules/@*)
      mkdir -p "$tmp/$entry"
      for scoped in "$entry"/*; do
        if printf '%s\n' "$native" | grep -qxF "${scoped#node_modules/}"; then cp -R "$scoped" "$tmp/$scoped"; else ln -s "$PWD/$scoped" "$tmp/$scoped"; fi
      done
      ;;
    *)
      if printf '%s\n' "$native" | grep -qxF "${entry#node_modules/}"; then cp -R "$entry" "$tmp/$entry"; else ln -s "$PWD/$entry" "$tmp/$entry"; fi
      ;;
  esac
done

cd "$tmp"
# The kafka connector's native client is optional. With SVC_ADDONS_SKIP naming it (.ci/run's Node 24
# leg: its rebuild takes 3 minutes), the copy leaves it out altogether, so the run covers the kafkajs
# fallback as a machine where its build could not happen installs it. Otherwise, where this checkout
# has it built, it must load on VERSION too (the rebuild happens here), so the run covers both engines.
kafka_native=node_modules/@confluentinc/kafka-javascript
if [[ ",${SVC_ADDONS_SKIP:-}," == *",@confluentinc/kafka-javascript,"* ]]; then
  rm -rf "$kafka_native"
elif [ -f "$kafka_native/build/Release/confluent-kafka-javascript.node" ]; then
  node scripts/supported-node.mjs --node "$version" --addons node -e "require('@confluentinc/kafka-javascript')" ||
    { echo "the kafka connector's native client (@confluentinc/kafka-javascript) did not build for Node $version" >&2; exit 1; }
fi
# A file vitest could not start a fork for runs again on its own (scripts/rerun-unstarted.sh).
test_log=$(mktemp)
set +e
node scripts/supported-node.mjs --node "$version" --addons node node_modules/vitest/vitest.mjs run "$@" 2>&1 | tee "$test_log"
status=${PIPESTATUS[0]}
set -e
bash scripts/rerun-unstarted.sh "$status" "$test_log" node scripts/supported-node.mjs --node "$version" --addons node node_modules/vitest/vitest.mjs run
rm -f "$test_log"
echo "tests on Node $version: passed in $((SECONDS - start)) s"
