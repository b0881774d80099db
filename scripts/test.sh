#!/usr/bin/env bash
# Runs every check (the README's second command; `npm test` runs this too), on a fresh machine too:
#   backing services (scripts/services.sh), npm packages when missing or stale, Prisma client,
#   typecheck (tsc), lint and format check (biome), then every spec (node tools/test.js).
# All steps run; the exit status is non-zero when any of them failed.
# Extra arguments go to tools/test.js, e.g.  bash scripts/test.sh apps/gateway
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_node
bash "$REPO_ROOT/scripts/services.sh"
install_deps auto

# The operator console's browser tests drive Debian's Chromium through playwright-core (never a
# browser download): install the package when it is missing.
if ! command -v chromium >/dev/null 2>&1 && _node_can_apt; then
  info "apt-get install chromium (operator console browser tests)"
  _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || warn "apt-get update failed"
  _node_apt_install chromium fonts-dejavu-core || warn "apt-get install chromium failed: the console browser tests will be skipped"
fi

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
step typecheck npx --no-install tsc -p tsconfig.json --noEmit
step typecheck:console npx --no-install tsc -p apps/console/tsconfig.json --noEmit
step lint npx --no-install biome check .
# The tests run last so that the test runner's summary closes the output.
step tests node tools/test.js "$@"

if [[ ${#failed[@]} -gt 0 ]]; then
  die "failed: ${failed[*]}"
fi
