# syntax=docker/dockerfile:1
# The svc image (issue 15, "Packaging"): one image for every mode; SVC_MODE picks standalone,
# manager or worker (deploy/kubernetes/, docs/cluster.md). Build: docker build -t svc:0.1.0 .
# On the newest Node LTS, 26 (issue 35); svc supports Node 22.19+, 24 and 26 (package.json's
# engines), so --build-arg NODE_IMAGE=node:24-bookworm-slim builds one on Node 24 too. CI runs the
# whole suite on both (.ci/run, scripts/test-on-node.sh).
ARG NODE_IMAGE=node:26-bookworm-slim

FROM ${NODE_IMAGE} AS build
# Compilers for native modules without a prebuilt binary for this Node (better-sqlite3), against
# the image's own Node headers rather than a download. The kafka connector's native client
# (@confluentinc/kafka-javascript, optional) downloads a prebuilt binary from GitHub when it can;
# where it cannot, CKJS_LINKING=dynamic builds librdkafka against these Debian libraries instead
# of downloading its dependencies (otherwise `npm rebuild` fails: issue 32, docs/connectors/kafka.md).
ENV npm_config_nodedir=/usr/local \
    CKJS_LINKING=dynamic
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies first, so that a source change reuses this layer. --ignore-scripts: the root
# package's `prepare` would build before the sources are here; the dependencies' own install
# scripts (native builds) run in `npm rebuild` below.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY ui ui
RUN npm rebuild \
 && npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && chmod 755 dist/cli/main.js

FROM ${NODE_IMAGE}
# The shared libraries a dynamically linked librdkafka (above) loads.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl3 zlib1g libzstd1 liblz4-1 libsasl2-2 libcurl4 \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    SVC_DATA_DIR=/data \
    SVC_DB_PATH=/data/svc.db \
    SVC_STATE_DIR=/data/state \
    SVC_PIPELINE_DIR=/data/pipelines \
    SVC_MIB_DIR=/mibs \
    SVC_MIB_SOURCE_DIR=/mib-sources
WORKDIR /app
# The package as npm would install it (package.json "files"): version.ts reads package.json, the
# daemon serves dist/ui and templates/, and the MIB store reads the product's mibs/.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY templates templates
COPY mibs mibs
# `svc` on the PATH; the MIB and schema folders at doc 2's defaults (/mibs, /mib-sources, /schemas; the
# MIB ones set above, so the image never takes the ~/.svc fallback of a machine without them)
# and /data, owned by the user the daemon runs as (uid 1000, `node` in the Node images; numeric, so
# that Kubernetes' runAsNonRoot can verify it).
RUN ln -s /app/dist/cli/main.js /usr/local/bin/svc \
 && mkdir -p /data /mibs /mib-sources /schemas \
 && chown 1000:1000 /data /mibs /mib-sources /schemas
USER 1000:1000
VOLUME /data
# API and UI (standalone, manager), worker agent, worker webhook ingress.
EXPOSE 8765 8766 8767
# The probe of the mode: /agent/health on a worker, /api/health otherwise (Kubernetes uses the
# probes of deploy/kubernetes/ instead). Plain HTTP: with SVC_TLS_CERTFILE set, override it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const w = process.env.SVC_MODE === 'worker'; const port = w ? (process.env.SVC_WORKER_PORT || 8766) : (process.env.SVC_PORT || 8765); fetch(`http://127.0.0.1:${port}${w ? '/agent/health' : '/api/health'}`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM reaches the daemon directly (exec form): it drains running pipelines, then exits.
CMD ["svc", "serve"]
