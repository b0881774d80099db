#!/usr/bin/env bash
# Before/after figures of bench/stack.ts, back to back on the same machine: builds the production output
# of BEFORE (a commit) from `git archive`, runs the bench, builds AFTER (default HEAD), runs it again.
#   bash bench/stack/compare.sh <before-commit> [after-commit] [-- bench/stack.ts arguments]
# Results: var/bench/compare-<commit>.txt. Leaves the dist/ folders of AFTER in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BEFORE="${1:?usage: compare.sh <before-commit> [after-commit] [-- args]}"
AFTER="${2:-HEAD}"
shift $(($# >= 2 ? 2 : 1))
[[ "${1:-}" == "--" ]] && shift
mkdir -p var/bench var/tmp
build_at() {
  local src="var/tmp/src-$1"
  rm -rf "$src" && mkdir -p "$src"
  git archive "$1" apps libs docker prisma | tar -x -C "$src"
  # The generated Prisma client is not in git: generated from that commit's schema (its generator options,
  # e.g. the query compiler build, are part of what is compared).
  npx prisma generate --schema "$src/prisma/schema.prisma" >/dev/null
  for p in libs/contracts libs/persistence libs/service-kit libs/telemetry libs/rpc libs/runtime libs/image-store libs/search-index libs/engine-pool \
    apps/gateway apps/chat-service apps/ledger-writer; do
    [[ -d "$src/$p" ]] || continue
    rm -rf "$p/dist"
    node tools/build.js "$src/$p" >/dev/null
    # A lib of that commit that this tree no longer has (libs/service-kit before ADR 0033): its manifest
    # and a node_modules link too, so that commit's dist resolves it; removed again at the end.
    if [[ ! -f "$p/package.json" ]]; then
      mkdir -p "$p" && cp "$src/$p/package.json" "$p/" && extra+=("$p")
      [[ -e "node_modules/@infer/${p#*/}" ]] || { ln -s "../../$p" "node_modules/@infer/${p#*/}" && extra+=("node_modules/@infer/${p#*/}"); }
    fi
    mv "$src/$p/dist" "$p/dist"
  done
}
extra=()
trap 'for x in "${extra[@]}"; do rm -rf "$x"; done' EXIT
for c in "$BEFORE" "$AFTER"; do
  build_at "$c"
  # The gateway's node flags from that commit's image (docker/gateway.Dockerfile CMD).
  BENCH_IMAGE_DIR="var/tmp/src-$c/docker" node --conditions=source --import ./tools/ts-register.js bench/stack.ts --no-build "$@" \
    >"var/bench/compare-$(git rev-parse --short "$c").txt" 2>&1
  echo "var/bench/compare-$(git rev-parse --short "$c").txt"
done
