#!/usr/bin/env bash
# Runs every check (the README's second command; `npm test` runs this too), on a fresh machine too:
#   backing services (scripts/services.sh), git, Debian's chromium for the browser tests, npm packages when
#   missing or stale, Prisma client, kubectl for the manifest tests (scripts/kubectl.sh), typecheck
#   (tsc), lint and format check (biome), the layout rules (tools/check-layout.js), then every spec
#   (node tools/test.js).
# All steps run; the exit status is non-zero when any of them failed.
# Extra arguments go to tools/test.js, e.g.  bash scripts/test.sh apps/gateway
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# git: the docs and layout tests list the repository's tracked files (a minimal Debian has no git when the
# checkout was copied in). Installed once when missing.
ensure_git() {
  command -v git >/dev/null 2>&1 && return 0
  if ! _node_can_apt; then
    warn "git is missing and apt-get is not usable (needs root or sudo): the docs tests will fail"
    return 0
  fi
  _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || warn "apt-get update failed"
  _node_apt_install git || warn "could not install git: the docs tests will fail"
}

# The browser tests (the operator console's and test/integration/compat-browser.spec.ts) drive Debian's
# chromium with playwright-core (never a browser download). Installed once when missing; idempotent.
ensure_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  if ! _node_can_apt; then
    warn "chromium is missing and apt-get is not usable (needs root or sudo): the browser tests are skipped"
    return 0
  fi
  _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || warn "apt-get update failed"
  _node_apt_install chromium fonts-dejavu-core || warn "could not install chromium: the browser tests are skipped"
}

# The container tests (test/deploy/containers.spec.ts, kube-play.spec.ts) build and run every image with
# Debian's podman and buildah (rootful; settings in docker/engine/), and the base image is made with
# debootstrap. Installed once when missing; where they cannot be (no root, no apt-get), those tests skip
# with one line saying why. INFER_SKIP_CONTAINERS=1 leaves them out on purpose.
ensure_podman() {
  [[ -z "${INFER_SKIP_CONTAINERS:-}" ]] || return 0
  # catatonit: podman's pause process, which kube play's pods (their infra container) need.
  if command -v podman >/dev/null 2>&1 && command -v buildah >/dev/null 2>&1 &&
    command -v debootstrap >/dev/null 2>&1 && command -v catatonit >/dev/null 2>&1; then
    [[ "$(id -u)" == 0 ]] && _node_can_apt && ensure_podman_compose
    return 0
  fi
  if [[ "$(id -u)" != 0 ]] || ! _node_can_apt; then
    warn "podman is missing and cannot be installed here (needs root and apt-get): the container tests are skipped"
    return 0
  fi
  _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || warn "apt-get update failed"
  _node_apt_install podman buildah debootstrap runc catatonit ||
    warn "could not install podman: the container tests are skipped"
  ensure_podman_compose
}

# podman-compose >= 1.0.6: Debian 12's own 1.0.3 adds the project's network to a `network_mode: host`
# service, which podman refuses, so there it comes from Debian's bookworm-backports (1.0.6; a backports
# source is pinned below the release, so nothing else is taken from it unasked).
ensure_podman_compose() {
  # Not installed yet (a fresh machine): no version. The `|| v=''` keeps set -e and pipefail from ending
  # the script on podman-compose's own exit status.
  local v=''
  if command -v podman-compose >/dev/null 2>&1; then
    v="$(podman-compose version 2>/dev/null | sed -n 's/^podman-compose version \([0-9.]*\).*/\1/p' | tail -n 1)" || v=''
  fi
  [[ -n "$v" ]] && dpkg --compare-versions "$v" ge 1.0.6 2>/dev/null && return 0
  local codename
  codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
  if [[ "$codename" == bookworm ]]; then
    local src=/etc/apt/sources.list.d/debian-backports.sources
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      info "adding Debian's bookworm-backports source for podman-compose 1.0.6"
      printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
        _node_as_root tee "$src" >/dev/null
      _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || warn "apt-get update failed"
    fi
    _node_apt_install -t bookworm-backports podman-compose && return 0
  fi
  _node_apt_install podman-compose || warn "could not install podman-compose: the compose step is skipped"
}

require_node
bash "$REPO_ROOT/scripts/services.sh"
ensure_git
ensure_chromium
ensure_podman
install_deps auto

failed=()
step() {
  local name="$1"
  shift
  info "$name: $*"
  if "$@"; then
    return 0
  fi
  failed+=("$name")
  warn "$name failed"
}

if persistence_ready; then
  step db:generate npm run -s db:generate
fi
# kubectl with kustomize v5 for the k8s/ manifest tests: the machine's, or a pinned one from npm.
if KUBECTL="$(bash "$REPO_ROOT/scripts/kubectl.sh")"; then
  export KUBECTL
else
  failed+=("kubectl")
  warn "no kubectl with kustomize v5: the k8s/ manifest tests will fail"
fi
step typecheck npx --no-install tsc -p tsconfig.json --noEmit
step typecheck:console npx --no-install tsc -p apps/console/tsconfig.json --noEmit
step lint npx --no-install biome check .
# The written boundaries (tools/check-layout.js, ADR 0032): folder cycles, the admin room, bench/, libs/.
step layout node tools/check-layout.js
# The tests run last so that the test runner's summary closes the output.
step tests node tools/test.js "$@"

if [[ ${#failed[@]} -gt 0 ]]; then
  die "failed: ${failed[*]}"
fi
