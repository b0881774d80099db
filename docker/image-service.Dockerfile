# syntax=docker/dockerfile:1
# Image of apps/image-service: image generations and edits (NATS api role, BullMQ worker role).
#   docker build -f docker/image-service.Dockerfile -t infer/image-service .        (from the repository root)
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
ARG APP=image-service
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

# One image, two roles: IMAGE_ROLE=api (NATS-facing) or IMAGE_ROLE=worker (BullMQ jobs, the engines;
# schedule it on GPU nodes with an in-process engine or next to the image server); default all.
# No HTTP port: the gateway reaches it over NATS and Redis; images go through the image store.
CMD ["node", "apps/image-service/dist/main.js"]
