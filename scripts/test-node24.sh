#!/usr/bin/env bash
# Runs tests on Node 24 LTS (issues 15 and 17: the container image
# may use node:24). Node 24 comes from the npm registry's `node` package, so the machine keeps its
# Node 20. The tests run in a temporary copy of the working tree whose node_modules links every
# package of this checkout except better-sqlite3: that one is native (not N-API), so it is copied and
# rebuilt for Node 24's ABI there; rebuilding it in place would break this checkout's Node 20.
# Usage: scripts/test-node24.sh [vitest paths...]   (default: test/engine test/daemon test/pipelines test/api; `test`: all)
# SVC_TEST_NODE_PACKAGE picks another Node, e.g. node@24.18.0: better-sqlite3 12 aborts on 24.19
# and later when a statement is finalized at teardown (nodejs/node#65446), which the daemon tests show.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_PACKAGE=${SVC_TEST_NODE_PACKAGE:-node@24}
node24() { npm exec --yes --package="$NODE_PACKAGE" -- "$@"; }
[ $# -gt 0 ] || set -- test/engine test/daemon test/pipelines test/api

start=$SECONDS

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# mktemp's 0700 would lock out tests that drop privileges to nobody when root.
chmod 755 "$tmp"
tar --exclude=./node_modules --exclude=./.git -cf - . | tar -C "$tmp" -xf -

mkdir "$tmp/node_modules"
for entry in node_modules/* node_modules/.bin; do
  [ "$entry" = node_modules/better-sqlite3 ] || ln -s "$PWD/$entry" "$tmp/$entry"
done
# The rebuilt copy is cached per better-sqlite3 and Node version: a source build takes a minute.
# No prebuilt binary can be downloaded here, and node-gyp would compile against the npmrc's nodedir
# (the machine's Node 20 headers): the headers come from the npm package of the same Node build.
node_version=$(node24 node --version)
sqlite_version=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
cache="${XDG_CACHE_HOME:-$HOME/.cache}/svc-test-node24/better-sqlite3-$sqlite_version-node-$node_version"
if [ ! -f "$cache/build/Release/better_sqlite3.node" ]; then
  rm -rf "$cache.tmp" && mkdir -p "$cache.tmp/headers"
  dist="node-$(node -p 'process.platform')-$(node -p 'process.arch')@${node_version#v}"
  (cd "$cache.tmp/headers" && npm pack "$dist" --silent >/dev/null && tar xzf ./*.tgz package/include && rm ./*.tgz)
  cp -R node_modules/better-sqlite3 "$cache.tmp/better-sqlite3"
  rm -rf "$cache.tmp/better-sqlite3/build"
  # better-sqlite3's own install script (prebuild-install is not on its PATH: straight to node-gyp).
  (cd "$cache.tmp/better-sqlite3" && npm_config_nodedir="$cache.tmp/headers/package" node24 npm run install --silent >/dev/null 2>&1) \
    || { echo "building better-sqlite3 for Node $node_version failed" >&2; exit 1; }
  rm -rf "$cache" && mv "$cache.tmp/better-sqlite3" "$cache" && rm -rf "$cache.tmp"
  echo "better-sqlite3 $sqlite_version built for Node $node_version ($((SECONDS - start)) s)"
fi
cp -R "$cache" "$tmp/node_modules/better-sqlite3"

cd "$tmp"
node24 node node_modules/vitest/vitest.mjs run "$@"
echo "node 24 tests: passed in $((SECONDS - start)) s"
