#!/usr/bin/env bash
# Makes the base image every Dockerfile starts FROM (node:26-bookworm-slim) on a machine that cannot pull
# images: a Debian 12 minbase root from Debian's mirror (debootstrap), libatomic1 (Node's official build
# links it), Node from the npm registry's node-linux-<arch> package, npm, the unprivileged `node` user
# (uid/gid 1000) and the official image's entrypoint (a first argument that is a flag or no command runs
# under node). Imported into podman's storage under the name the Dockerfiles use.
#   bash docker/engine/base-image.sh            (root; a no-op when the image of this recipe exists)
# Cached: the image (labelled with this file's hash) in podman's storage, and the debootstrapped root and
# the npm tarballs under $INFER_CONTAINER_CACHE (/var/cache/infer-containers), so a changed recipe
# rebuilds in seconds. Needs: debootstrap, podman, npm, and Debian's mirror plus the npm registry.
set -euo pipefail

NODE_VERSION="${NODE_VERSION:-26.10.0}"
NPM_VERSION="${NPM_VERSION:-11.21.2}"
IMAGE="${BASE_IMAGE:-docker.io/library/node:26-bookworm-slim}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${INFER_CONTAINER_CACHE:-/var/cache/infer-containers}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${CONTAINERS_CONF:=$HERE/containers.conf}"
export CONTAINERS_CONF

case "$(uname -m)" in
  x86_64) arch=x64 deb_arch=amd64 ;;
  aarch64) arch=arm64 deb_arch=arm64 ;;
  *) echo "base-image: no Node build for $(uname -m)" >&2 && exit 1 ;;
esac
recipe="$(cat "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)-$NODE_VERSION-$NPM_VERSION-$deb_arch"

if [[ "$(podman image inspect --format '{{ index .Labels "dev.infer.base-recipe" }}' "$IMAGE" 2>/dev/null)" == "$recipe" ]]; then
  echo "base-image: $IMAGE is current ($recipe)"
  exit 0
fi

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/base.XXXXXX")"
trap 'rm -rf "$work"' EXIT
minbase="$CACHE/bookworm-minbase-$deb_arch.tar"
if [[ ! -s "$minbase" ]]; then
  echo "base-image: debootstrap bookworm minbase from $MIRROR"
  debootstrap --variant=minbase --arch="$deb_arch" --include=libatomic1 bookworm "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2 && exit 1; }
  tar -C "$work/root" -cf "$minbase.tmp" . && mv "$minbase.tmp" "$minbase"
  rm -rf "$work/root"
fi
mkdir "$work/root"
tar -C "$work/root" -xf "$minbase"
root="$work/root"

# Debian's sources as debian:bookworm-slim has them (the app images install ffmpeg & co. from there).
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log

# Node and npm from the npm registry (the same bytes as nodejs.org's build of that version).
for pkg in "node-linux-$arch@$NODE_VERSION" "npm@$NPM_VERSION"; do
  tgz="$CACHE/${pkg//\//_}.tgz"
  if [[ ! -s "$tgz" ]]; then
    (cd "$work" && npm pack --silent "$pkg" >/dev/null)
    mv "$work"/*.tgz "$tgz"
  fi
done
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm" "$root/usr/local/bin"
tar -C "$work/node" -xzf "$CACHE/node-linux-$arch@$NODE_VERSION.tgz"
install -m 0755 "$work/node/package/bin/node" "$root/usr/local/bin/node"
tar -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$CACHE/npm@$NPM_VERSION.tgz"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# The official image's user and entrypoint.
chroot "$root" /usr/sbin/groupadd --gid 1000 node
chroot "$root" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
# As the official Node images: run the command under node when the first argument is a flag, is no
# command on PATH, or is a file that is not executable.
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
EOF
chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"
chroot "$root" /usr/local/bin/node --version >/dev/null # libatomic and the loader are there

tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
podman import \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  --change "LABEL dev.infer.base-recipe=$recipe" \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
echo "base-image: made $IMAGE ($recipe)"
