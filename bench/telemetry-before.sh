#!/usr/bin/env bash
# A tree of another commit for bench/telemetry.ts's BENCH_BEFORE (its gateways run beside this tree's,
# in the same rounds): apps/, libs/, tools/, bench/ from `git archive`, the generated Prisma client, and
# a node_modules/ of links to this checkout's packages except @infer/*, whose links point into the tree.
#   bash bench/telemetry-before.sh <commit> <dir>
#   BENCH_BEFORE=<dir> BENCH_BEFORE_RATIOS=0,0.1 node ... bench/telemetry.ts
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COMMIT="${1:?usage: telemetry-before.sh <commit> <dir>}"
DIR="${2:?usage: telemetry-before.sh <commit> <dir>}"
rm -rf "$DIR" && mkdir -p "$DIR/node_modules"
git archive "$COMMIT" apps libs tools bench package.json tsconfig.base.json tsconfig.json | tar -x -C "$DIR"
# The generated Prisma client is not in git (npm run db:generate makes it).
cp -a libs/persistence/src/generated "$DIR/libs/persistence/src/"
for e in node_modules/* node_modules/.bin; do
  [[ "$(basename "$e")" == "@infer" ]] || ln -s "$PWD/$e" "$DIR/node_modules/$(basename "$e")"
done
# Relative links (../../libs/...): they point into the tree.
cp -a node_modules/@infer "$DIR/node_modules/@infer"
echo "$DIR"
