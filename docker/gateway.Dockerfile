# syntax=docker/dockerfile:1
# Image of apps/gateway: the public HTTP(S) entry of the platform.
#   docker build -f docker/gateway.Dockerfile -t infer/gateway .        (from the repository root)
#
# Every app image follows the same pattern (see README.md, "Docker"): to add an app, copy this file
# to docker/<app>.Dockerfile (and its .dockerignore), set APP, RUNTIME_PACKAGES and the last lines.
#   build stage:   npm install (lockfile versions) -> Prisma client -> swc build of every lib and of the app
#                  -> a runtime tree with only the packages this app imports (tools/app-deps.js), optional
#                  packages left out (so no CUDA/Vulkan llama.cpp builds; the CPU build only where an
#                  embedded llama.cpp engine runs)
#   runtime stage: node:26-bookworm-slim + that tree, as the unprivileged `node` user
ARG NODE_IMAGE=node:26-bookworm-slim

FROM ${NODE_IMAGE} AS build
ARG APP=gateway
WORKDIR /src
ENV CI=true NX_DAEMON=false ONNXRUNTIME_NODE_INSTALL=skip
COPY . .
# Every install script is denied in package.json "allowScripts"; --ignore-scripts says the same to any
# npm version (no download during the build).
RUN npm install --ignore-scripts --no-audit --no-fund
RUN if [ -d libs/persistence ]; then npm run db:generate; fi
RUN for lib in libs/*/; do node tools/build.js "${lib%/}"; done \
 && node tools/build.js "apps/${APP}"
RUN node tools/app-deps.js manifest "${APP}" /out \
 && (cd /out && npm install --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --no-package-lock) \
 && node tools/app-deps.js libs "${APP}" /out \
 && mkdir -p /out/apps/"${APP}" \
 && cp -a "apps/${APP}/package.json" "apps/${APP}/dist" /out/apps/"${APP}"/ \
 && for dir in prisma config; do if [ -d "$dir" ]; then cp -a "$dir" /out/; fi; done
# The operator console (apps/console): its static build, served by the gateway at /console/ (CONSOLE_DIR).
RUN npm run build -w @infer/console \
 && mkdir -p /out/apps/console && cp -a apps/console/dist /out/apps/console/

FROM ${NODE_IMAGE} AS runtime
# Debian packages the app needs at run time (e.g. "ffmpeg espeak-ng flite" for the audio service).
ARG RUNTIME_PACKAGES=""
RUN if [ -n "${RUNTIME_PACKAGES}" ]; then \
      apt-get update && apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /app
ENV NODE_ENV=production
# Files stay owned by root (read-only for the app); the process runs as `node` (uid 1000).
COPY --from=build /out /app
# /v1/files bytes (FILE_STORE_DIR): a volume shared with the batch runner role mounts here.
RUN mkdir -p /var/infer/files && chown node:node /var/infer/files
USER node

ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
# /healthz answers over plain HTTP or TLS (when TLS_CERT_FILE is set) without a key.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 CMD ["node", "-e", "const h = require(process.env.TLS_CERT_FILE ? 'node:https' : 'node:http'); h.get({ host: '127.0.0.1', port: process.env.PORT || 8080, path: '/healthz', rejectUnauthorized: false }, (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
# glibc's allocator: blocks of 128 KiB and more in their own mappings, returned when freed (the default
# threshold grows to the largest block freed, so start-up's big buffers stay in the heap), and 2 arenas
# instead of 8 per core. Idle RSS -2..-7 MiB, after 1,000 streams -10..-20 MiB (bench/results/data-path-issue-13.md, "Idle
# memory"). bench/stack reads this line (bench/stack/lib.ts imageEnv), so keep the form ENV GLIBC_TUNABLES=...
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=2
# The batch runner role runs this image with: node apps/gateway/dist/batch-runner.js
# V8's default young generation: capping it (--max-semi-space-size=4) saved ~60-100 MiB under load but cost
# 11-21 us of scavenges per request (ADR 0014, "Memory"); the idle collection gives the memory back.
# Node sizes it from the container's memory limit: 8 MiB semi-spaces in the 1 GiB pod of k8s/base
# (32 MiB on a 24 GiB machine without a limit; bench/stack.ts runs the gateway in the pod's limit).
# After an idle period V8's memory reducer leaves a 1 MiB young generation and an old-generation limit just
# above the live heap, so the first seconds of the next load ran 3-5 extra marking cycles and ~100 extra
# scavenges (0.8-1.2 s of GC per 5 s round against 0.1-0.4 s): --initial-old-space-size=128 keeps the
# limit at 128 MiB or more, --semi-space-growth-factor=32 regrows the young generation in one step.
# Every bench row 2-8 us cheaper in two same-run pairs, a 120 s soak's RSS spread 59 -> 19 %; idle RSS,
# per-stream and post-burst RSS unchanged (bench/results/data-path-issue-13.md, "The upstream row's extra cost is its
# place in the round").
# A full collection while the gateway is idle, V8's memory reducer's (after ~8 s of low allocation) or the
# idle collection's, leaves it promoting ~3.5x the bytes per request and costing 30-45 us more per request
# until a collection under load: --no-memory-reducer leaves idle collections to the idle collection
# (service-kit heap-trim.ts), which waits for 30 s of idleness (bench/results/data-path-issue-13.md, "Idle collections and
# the load after them").
# bench/stack reads node flags from this line, so keep the form ["node", <flags>..., <script>].
CMD ["node", "--initial-old-space-size=128", "--semi-space-growth-factor=32", "--no-memory-reducer", "apps/gateway/dist/main.js"]
