# syntax=docker/dockerfile:1
# Image of apps/search-service: web search (POST /v1/search, the MCP web_search tool) over NATS.
#   docker build -f docker/search-service.Dockerfile -t infer/search-service .    (from the repository root)
# Set SEARCH_ENGINE (local, searxng, brave) and its settings in the environment (apps/search-service/README.md).
#
# Every app image follows the same pattern (see README.md, "Docker"): to add an app, copy this file
# to docker/<app>.Dockerfile (and its .dockerignore), set APP, RUNTIME_PACKAGES and the last lines
# (everything above `ARG APP` stays the same in every file).
#   build stages: shared by every app (npm ci from the lockfile, Prisma client, every workspace built),
#                 then this app's runtime tree (tools/app-deps.js image)
#   runtime stage: node:26-bookworm-slim + that tree, as the unprivileged `node` user, labelled with the
#                  source revision (build argument REVISION) and carrying its SBOM
ARG NODE_IMAGE=node:26-bookworm-slim

# --- Shared by every app's image: byte for byte the same instructions in every docker/*.Dockerfile up to
# `ARG APP` (test/deploy/images.spec.ts checks it), so that one build's layers serve all of them.
# Only what `npm install` reads (the lockfile and each workspace's package.json, tools/app-deps.js manifests):
# a change of the sources keeps the install layer.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN node tools/app-deps.js manifests /manifests

FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV CI=true NX_DAEMON=false ONNXRUNTIME_NODE_INSTALL=skip
COPY --from=manifests /manifests ./
# Every install script is denied in package.json "allowScripts"; --ignore-scripts says the same to any npm
# version (no download during the build). The npm cache is a build cache (kept between builds); a CA
# bundle for the registry may come in as the build secret `npm-ca` (e.g. a TLS-inspecting proxy).
RUN --mount=type=cache,target=/root/.npm,sharing=locked --mount=type=secret,id=npm-ca \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
 && npm install --ignore-scripts --no-audit --no-fund
COPY . .
RUN if [ -d libs/persistence ]; then npm run db:generate; fi
# Every workspace: its own `build` script where it has one (the console's vite build), else swc.
RUN for ws in libs/*/ apps/*/; do \
      if grep -q '"build"' "${ws}package.json"; then npm run -s build -w "./${ws%/}" >/dev/null; \
      else node tools/build.js "${ws%/}"; fi; \
    done

# --- This app: the runtime tree (tools/app-deps.js image): only the packages the app loads, at the
# lockfile's versions, optional ones left out (so no CUDA/Vulkan llama.cpp builds; the CPU build only
# where an embedded llama.cpp engine runs), other platforms' binaries, unused Prisma compilers and source
# bundles pruned, a CycloneDX SBOM at /app/sbom.cdx.json, then the app's own `image:prepare` step.
ARG APP=search-service
RUN --mount=type=cache,target=/root/.npm,sharing=locked --mount=type=secret,id=npm-ca \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
 && node tools/app-deps.js image "${APP}" /out
# The project documentation that seeds an empty local index (libs/search-index projectDocFiles: the
# README, docs/ and each app's and lib's README), at the same paths under /app (SEARCH_DOCS_DIR).
RUN cp README.md /out/ && cp -r docs /out/docs \
 && for f in apps/*/README.md libs/*/README.md; do mkdir -p "/out/$(dirname "$f")" && cp "$f" "/out/$f"; done

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
# Health: the ops server's /readyz (OPS_PORT, 9464 in k8s/ and docker/compose.yaml; tools/healthcheck.mjs).
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 CMD ["node", "healthcheck.mjs"]

# No HTTP port: the service talks to the gateway over NATS only (NATS_URL). The project documentation
# (README.md, docs/) is in /app, so an empty local index is seeded from it on start.
ENV SEARCH_DOCS_DIR=/app
CMD ["node", "apps/search-service/dist/main.js"]
# Last, so that a new revision changes no layer above.
ARG REVISION=unknown
# A RUN step's cache key holds the build arguments, a LABEL step's does not (buildah reuses a cached LABEL
# whatever REVISION is): this step makes a new revision relabel the image instead of keeping the old label.
RUN echo "revision ${REVISION}" >/dev/null
LABEL org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/infer-platform/infer" \
      dev.infer.sbom="/app/sbom.cdx.json"
