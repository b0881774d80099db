# syntax=docker/dockerfile:1
# Image of apps/ledger-writer: drains the usage stream (JetStream USAGE) into the PostgreSQL ledger.
#   docker build -f docker/ledger-writer.Dockerfile -t infer/ledger-writer .        (from the repository root)
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
ARG APP=ledger-writer
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
USER node

# No HTTP port: it reads NATS JetStream (NATS_URL) and writes PostgreSQL (DATABASE_URL).
# glibc's allocator as in the gateway image (docker/gateway.Dockerfile): -3..-14 MiB after a burst of usage
# events (bench/results/data-path-issue-13.md, "Idle memory"); bench/stack reads this line (lib.ts imageEnv).
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=2
CMD ["node", "apps/ledger-writer/dist/main.js"]
