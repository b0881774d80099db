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
# instead of 8 per core: lower idle and post-load RSS (ADR 0014; bench/stack.ts --rss).
# bench/stack reads this line (bench/stack/lib.ts imageEnv), so keep the form ENV GLIBC_TUNABLES=...
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=2
# The batch runner role runs this image with: node apps/gateway/dist/batch-runner.js
# V8's default young generation, sized by Node from the container's memory limit: capping it
# (--max-semi-space-size) saves memory under load but multiplies the scavenges per request (ADR 0014);
# the idle collection gives the memory back instead. bench/stack.ts runs the gateway in the pod's limit.
# After an idle period V8 leaves a 1 MiB young generation and an old-generation limit just above the live
# heap, so the next load would pay extra marking cycles and scavenges in its first seconds:
# --initial-old-space-size=128 keeps the limit at 128 MiB or more, --semi-space-growth-factor=32 regrows
# the young generation in one step.
# A full collection while the gateway is idle leaves it promoting more per request until a collection
# under load: --no-memory-reducer leaves idle collections to the idle collection (service-kit
# heap-trim.ts), which waits for 30 s of idleness. ADR 0014, "V8 settings of the gateway image".
# bench/stack reads node flags from this line, so keep the form ["node", <flags>..., <script>].
CMD ["node", "--initial-old-space-size=128", "--semi-space-growth-factor=32", "--no-memory-reducer", "apps/gateway/dist/main.js"]
