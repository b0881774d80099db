# shellcheck shell=bash disable=SC2034 # variables here are used by the scripts that source this file
# Helpers shared by the scripts in this folder. Source it; do not run it.
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# After sourcing, the working directory is the repository root and REPO_ROOT names it.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
cd "$REPO_ROOT" || exit 1

# The Node version the project needs (package.json "engines").
NODE_MIN_MAJOR=24
NODE_MIN_MINOR=11

# stack_env_defaults: the development defaults of the stack (the embedded services that
# scripts/services.sh runs), for the scripts that start apps. Anything already set wins.
# scripts/test.sh does not use them: tests choose their own settings.
stack_env_defaults() {
  : "${DATABASE_URL:=postgresql://postgres@127.0.0.1:5432/infer}"
  : "${REDIS_URL:=redis://127.0.0.1:6379}"
  : "${NATS_URL:=nats://127.0.0.1:4222}"
  : "${PORT:=8080}"
  : "${HOST:=127.0.0.1}"
  # Development mode: the gateway accepts plain HTTP, but only from loopback clients.
  # Never set this in production: terminate TLS in the gateway (TLS_CERT_FILE/TLS_KEY_FILE)
  # or in a proxy listed in TRUSTED_PROXIES.
  : "${ALLOW_INSECURE_HTTP:=1}"
  export DATABASE_URL REDIS_URL NATS_URL PORT HOST ALLOW_INSECURE_HTTP
}

# onnxruntime-node's postinstall downloads binaries, which fails offline.
: "${ONNXRUNTIME_NODE_INSTALL:=skip}"
export ONNXRUNTIME_NODE_INSTALL

# The apps that scripts/start.sh runs, in start order.
# batch-runner is the gateway's batch runner role (its own process: app_main below).
STACK_APPS=(chat-service embedding-service ledger-writer search-service audio-service image-service batch-runner gateway)

# app_main APP: the entry file of a STACK_APPS entry.
app_main() {
  case "$1" in
    batch-runner) printf '%s\n' apps/gateway/src/batch-runner.ts ;;
    *) printf '%s\n' "apps/$1/src/main.ts" ;;
  esac
}
RUN_DIR="$REPO_ROOT/var/run"
LOG_DIR="$REPO_ROOT/var/log"

if [[ -t 2 ]]; then
  _c_bold=$'\e[1m' _c_red=$'\e[31m' _c_yellow=$'\e[33m' _c_reset=$'\e[0m'
else
  _c_bold='' _c_red='' _c_yellow='' _c_reset=''
fi

info() { printf '%s==>%s %s\n' "$_c_bold" "$_c_reset" "$*" >&2; }
warn() { printf '%swarning:%s %s\n' "$_c_yellow" "$_c_reset" "$*" >&2; }
die() {
  printf '%serror:%s %s\n' "$_c_red" "$_c_reset" "$*" >&2
  exit 1
}

# version_ok VERSION: true when VERSION ("20.19.2", "v20.19.2", Debian's "1:20.19.2+dfsg-1") is at least
# NODE_MIN_MAJOR.NODE_MIN_MINOR.
version_ok() {
  local v="${1#*:}" major minor
  v="${v#v}"
  IFS=.+~- read -r major minor _ <<<"$v"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  ((major > NODE_MIN_MAJOR || (major == NODE_MIN_MAJOR && minor >= NODE_MIN_MINOR)))
}

# node_ok: true when `node` is on PATH and at least NODE_MIN_MAJOR.NODE_MIN_MINOR.
node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  local v
  v="$(node -p 'process.versions.node' 2>/dev/null)" || return 1
  version_ok "$v"
}

# Where Debian's nodejs is too old (Debian 12 ships Node 18), require_node installs this Node build,
# published on the npm registry as node-linux-<arch> (bin/node only, no npm), plus npm from the
# registry, into NODE_PREFIX (bin/node, bin/npm, bin/npx, lib/node_modules/npm) and links
# node/npm/npx into NODE_LINK_DIR. Overrides (for tests or another layout):
#   INFER_NODE_PREFIX     default /opt/infer-node as root, ~/.local/infer-node otherwise
#   INFER_NODE_LINK_DIR   default /usr/local/bin as root, ~/.local/bin otherwise; "" for no links
#   INFER_NODE_VERSION    default 26.10.0      INFER_NPM_SPEC   default npm@11
NODE_DIST_VERSION="${INFER_NODE_VERSION:-26.10.0}"
NODE_NPM_SPEC="${INFER_NPM_SPEC:-npm@11}"
if [[ "$(id -u)" -eq 0 ]]; then
  NODE_PREFIX="${INFER_NODE_PREFIX:-/opt/infer-node}"
  NODE_LINK_DIR="${INFER_NODE_LINK_DIR-/usr/local/bin}"
else
  NODE_PREFIX="${INFER_NODE_PREFIX:-$HOME/.local/infer-node}"
  NODE_LINK_DIR="${INFER_NODE_LINK_DIR-$HOME/.local/bin}"
fi
# Marks a NODE_PREFIX written by require_node: only such a folder is ever replaced.
NODE_PREFIX_MARK=.installed-by-infer-platform

# _node_as_root CMD...: runs CMD as root (sudo when not root); fails when neither is possible.
_node_as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    return 1
  fi
}
_node_can_apt() {
  command -v apt-get >/dev/null 2>&1 && { [[ "$(id -u)" -eq 0 ]] || command -v sudo >/dev/null 2>&1; }
}
_node_apt_install() {
  info "apt-get install $*"
  local out rc=0
  out="$(mktemp)"
  _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
    >"$out" 2>&1 || rc=$?
  ((rc == 0)) || tail -n 30 "$out" >&2
  rm -f "$out"
  return "$rc"
}
_npm_works() { npm --version >/dev/null 2>&1; }
# _node_npm ARGS...: runs the npm client on PATH, trusting the system's CA certificates when npm is
# configured with no cafile (a TLS-inspecting proxy's CA is installed there, not in Node's own list).
NODE_SYSTEM_CA=/etc/ssl/certs/ca-certificates.crt
_node_npm() {
  local ca
  ca="$(npm config get cafile 2>/dev/null || true)"
  if [[ -f "$NODE_SYSTEM_CA" && ( -z "$ca" || "$ca" == null || "$ca" == undefined ) ]]; then
    npm_config_cafile="$NODE_SYSTEM_CA" npm_config_update_notifier=false npm "$@"
  else
    npm_config_update_notifier=false npm "$@"
  fi
}

# _node_prefix_ok: NODE_PREFIX holds a Node that is new enough, with npm.
_node_prefix_ok() {
  [[ -x "$NODE_PREFIX/bin/node" && -e "$NODE_PREFIX/bin/npm" ]] || return 1
  version_ok "$("$NODE_PREFIX/bin/node" -p 'process.versions.node' 2>/dev/null)"
}

# _node_link: links node, npm and npx of NODE_PREFIX into NODE_LINK_DIR (they stay on PATH for later
# shells); a regular file of the same name there is left alone with a warning.
_node_link() {
  [[ -n "$NODE_LINK_DIR" ]] || return 0
  mkdir -p "$NODE_LINK_DIR" || return 0
  local b
  for b in node npm npx; do
    [[ "$(readlink "$NODE_LINK_DIR/$b" 2>/dev/null)" == "$NODE_PREFIX/bin/$b" ]] && continue
    if [[ -e "$NODE_LINK_DIR/$b" && ! -L "$NODE_LINK_DIR/$b" ]]; then
      warn "$NODE_LINK_DIR/$b exists and is not a link: left alone (put $NODE_PREFIX/bin first on PATH)"
      continue
    fi
    ln -sfn "$NODE_PREFIX/bin/$b" "$NODE_LINK_DIR/$b"
  done
}

# _node_use_prefix: puts NODE_PREFIX/bin first on PATH (exported) and links it into NODE_LINK_DIR.
_node_use_prefix() {
  case ":$PATH:" in
    *":$NODE_PREFIX/bin:"*) ;;
    *) PATH="$NODE_PREFIX/bin:$PATH" ;;
  esac
  export PATH
  hash -r
  _node_link
}

# _node_fetch SPEC DIR: downloads the registry package SPEC with the npm client on PATH (npm pack checks
# its integrity) and unpacks it into DIR.
_node_fetch() {
  local tmp rc=0
  tmp="$(mktemp -d)"
  mkdir -p "$2" &&
    (cd "$tmp" && _node_npm pack "$1" --pack-destination "$tmp" --loglevel=error >/dev/null) &&
    tar -xzf "$(printf '%s\n' "$tmp"/*.tgz | head -n 1)" -C "$2" --strip-components=1 --no-same-owner || rc=$?
  rm -rf "$tmp"
  return "$rc"
}

# The shared libraries the official Node builds load besides glibc's, with the Debian package of each:
# Node 26's build links libatomic.so.1, which a minimal Debian lacks.
NODE_RUNTIME_LIBS=("libatomic.so.1:libatomic1")

# _node_runtime_libs: installs (apt, as root or with sudo) the packages of NODE_RUNTIME_LIBS whose library
# the dynamic linker does not know; without apt it leaves them to the check that follows.
_node_runtime_libs() {
  [[ "$(uname -s)" == Linux ]] || return 0
  command -v ldconfig >/dev/null 2>&1 || return 0
  local known entry missing=()
  known="$(ldconfig -p 2>/dev/null || true)"
  for entry in "${NODE_RUNTIME_LIBS[@]}"; do
    grep -qF "${entry%%:*}" <<<"$known" || missing+=("${entry#*:}")
  done
  ((${#missing[@]})) || return 0
  if _node_can_apt; then
    _node_apt_install "${missing[@]}" || warn "apt-get install ${missing[*]} failed"
  else
    warn "the Node.js build may need ${missing[*]} (Debian packages), and apt-get with root or sudo is not available"
  fi
}

# _node_build_version DIR: prints the version of DIR/bin/node when it runs and is new enough; otherwise
# prints why (node's own error output, e.g. a missing shared library) and fails.
_node_build_version() {
  local out rc=0
  out="$("$1/bin/node" -p 'process.versions.node' 2>&1)" || rc=$?
  if ((rc == 0)) && version_ok "$out"; then
    printf '%s\n' "$out"
    return 0
  fi
  if ((rc != 0)); then
    printf 'node exited with status %s: %s\n' "$rc" "$(tail -n 5 <<<"${out:-(no output)}")"
  else
    printf 'node reports version %s, older than %s.%s\n' "${out:-(none)}" "$NODE_MIN_MAJOR" "$NODE_MIN_MINOR"
  fi
  return 1
}

# _node_install_from_registry: installs node-linux-<arch>@NODE_DIST_VERSION and NODE_NPM_SPEC into
# NODE_PREFIX with the npm client on PATH (whatever its version), through a staging folder.
_node_install_from_registry() {
  local arch pkg stage v
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    armv7l) arch=armv7l ;;
    ppc64le) arch=ppc64le ;;
    s390x) arch=s390x ;;
    *) die "no Node.js build on the npm registry for $(uname -m): install Node >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR yourself" ;;
  esac
  pkg="node-linux-$arch@$NODE_DIST_VERSION"
  if [[ -e "$NODE_PREFIX" && ! -e "$NODE_PREFIX/$NODE_PREFIX_MARK" ]] &&
    [[ -n "$(ls -A "$NODE_PREFIX" 2>/dev/null)" ]]; then
    die "$NODE_PREFIX exists and was not made by these scripts: move it away or set INFER_NODE_PREFIX"
  fi
  mkdir -p "$(dirname "$NODE_PREFIX")" || die "cannot create $(dirname "$NODE_PREFIX")"
  stage="$NODE_PREFIX.new.$$"
  rm -rf "$stage"
  info "downloading $pkg (about 45 MB) from the npm registry"
  if ! _node_fetch "$pkg" "$stage"; then
    rm -rf "$stage"
    die "could not download or unpack $pkg from the npm registry"
  fi
  _node_runtime_libs
  if ! v="$(_node_build_version "$stage")"; then
    rm -rf "$stage"
    die "$pkg does not run on this machine: $v"
  fi
  # The package ships bin/node only. npm comes from the registry too, unpacked into the same prefix as
  # in Node's own tarballs (the npm package bundles its dependencies). Not `npm install -g npm@11`:
  # Debian 12's npm 9 refuses it (EBADENGINE) while it runs on Node 18.
  info "downloading $NODE_NPM_SPEC from the npm registry"
  if ! _node_fetch "$NODE_NPM_SPEC" "$stage/lib/node_modules/npm"; then
    rm -rf "$stage"
    die "could not download or unpack $NODE_NPM_SPEC from the npm registry"
  fi
  ln -sfn ../lib/node_modules/npm/bin/npm-cli.js "$stage/bin/npm"
  ln -sfn ../lib/node_modules/npm/bin/npx-cli.js "$stage/bin/npx"
  # npm's built-in config (the lowest priority): the global config of Debian's npm (/etc/npmrc), and the
  # system's CA certificates, which Debian's node trusts but the registry build (Mozilla's list) does not.
  {
    echo "# written by scripts/lib.sh (require_node); /etc/npmrc and ~/.npmrc override these"
    echo "globalconfig=/etc/npmrc"
    if [[ -f "$NODE_SYSTEM_CA" ]]; then echo "cafile=$NODE_SYSTEM_CA"; fi
  } >"$stage/lib/node_modules/npm/npmrc"
  if ! "$stage/bin/node" "$stage/bin/npm" --version >/dev/null; then
    rm -rf "$stage"
    die "the npm from $NODE_NPM_SPEC does not run with node $v"
  fi
  echo "$pkg $NODE_NPM_SPEC" >"$stage/$NODE_PREFIX_MARK"
  rm -rf "$NODE_PREFIX"
  mv "$stage" "$NODE_PREFIX" || die "could not move $stage to $NODE_PREFIX"
}

# require_node: makes sure Node.js >= NODE_MIN_MAJOR.NODE_MIN_MINOR and npm are on PATH, installing them
# when missing or too old, from Debian's packages and the npm registry only:
#   1. apt's nodejs when it is new enough (Debian 13, Ubuntu 24.10+): apt-get install nodejs npm;
#   2. otherwise Debian's nodejs and npm (any version, for an npm client), which then fetches the Node
#      build published on the npm registry (node-linux-<arch>) and npm into NODE_PREFIX, put first on
#      PATH (exported) and linked into NODE_LINK_DIR.
# Silent when Node is fine; exits 1 when it cannot install it.
require_node() {
  node_ok && command -v npm >/dev/null 2>&1 && return 0
  # Installed by an earlier run but not on this shell's PATH (e.g. ~/.local/bin before a new login).
  if _node_prefix_ok; then
    _node_use_prefix
    node_ok && _npm_works && return 0
  fi
  local found="not installed" candidate=""
  command -v node >/dev/null 2>&1 && found="$(node --version 2>/dev/null || echo unknown)"
  info "this project needs Node.js >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR} with npm (found: $found): installing it"

  if _node_can_apt; then
    info "apt-get update"
    _node_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
      warn "apt-get update failed: using the package lists as they are"
    candidate="$(apt-cache policy nodejs 2>/dev/null | awk '/Candidate:/ { print $2 }')"
    if version_ok "$candidate"; then
      _node_apt_install nodejs npm ca-certificates || die "apt-get install nodejs npm failed"
      hash -r
      node_ok && _npm_works && { info "node $(node --version), npm $(npm --version)"; return 0; }
      die "installed nodejs $candidate, but the node on PATH is $(command -v node) ($(node --version))"
    fi
    # Debian's npm (with its nodejs, too old to run the project) only serves to fetch the registry build.
    if ! _npm_works; then
      _node_apt_install nodejs npm ca-certificates || die "apt-get install nodejs npm failed"
      hash -r
    fi
  fi
  if ! _npm_works; then
    die "no npm client, and no apt-get with root or sudo to install Debian's nodejs and npm:" \
      "install Node.js >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR with npm yourself"
  fi

  _node_install_from_registry
  _node_use_prefix
  if ! { node_ok && _npm_works; }; then
    die "installed Node.js in $NODE_PREFIX, but $(command -v node) does not run as expected"
  fi
  info "installed Node.js $(node --version) with npm $(npm --version) in $NODE_PREFIX"
  if [[ -n "$NODE_LINK_DIR" ]]; then
    info "note: node, npm and npx are linked into $NODE_LINK_DIR for later shells, which must have it" \
      "before /usr/bin on PATH (/usr/local/bin is by default; ~/.local/bin is, through ~/.profile, in login shells)"
  fi
  if [[ -n "$candidate" ]] && command -v dpkg-query >/dev/null 2>&1 &&
    dpkg-query -W -f='${Status}' nodejs 2>/dev/null | grep -q 'install ok installed'; then
    info "note: Debian's nodejs and npm packages stay installed; they only served to fetch this Node"
  fi
}

# deps_stale: true when node_modules is missing or older than package-lock.json.
deps_stale() {
  [[ -d node_modules ]] || return 0
  [[ -f package-lock.json ]] || { [[ package.json -nt node_modules ]] && return 0 || return 1; }
  [[ -f node_modules/.package-lock.json ]] || return 0
  [[ package-lock.json -nt node_modules/.package-lock.json ]]
}

# install_deps auto|force: npm install at the lockfile's versions, when needed ("auto") or always ("force").
# Not `npm ci`: npm 11 leaves other platforms' optional packages (@swc/core-darwin-*, ...) out of the
# lockfile it writes, and `npm ci` then refuses that lockfile as out of sync; `npm install` keeps every
# locked version and only fills in what is missing.
install_deps() {
  if [[ "${1:-}" != force ]] && ! deps_stale; then
    return 0
  fi
  info "installing npm packages (npm install, at the versions in package-lock.json)"
  npm install --no-audit --no-fund
}

# has_npm_script DIR NAME: true when DIR/package.json defines scripts.NAME.
has_npm_script() {
  [[ -f "$1/package.json" ]] || return 1
  node -e 'const p = require(process.argv[1]); process.exit(p.scripts && p.scripts[process.argv[2]] ? 0 : 1)' \
    "$(cd "$1" && pwd)/package.json" "$2" 2>/dev/null
}

# workspace_dir NAME: prints the folder of the workspace package NAME (e.g. @infer/persistence).
workspace_dir() {
  local f
  for f in apps/*/package.json libs/*/package.json; do
    [[ -f "$f" ]] || continue
    if grep -Eq "\"name\"[[:space:]]*:[[:space:]]*\"$1\"" "$f"; then
      dirname "$f"
      return 0
    fi
  done
  return 1
}

# The hooks other parts of the project provide. Each is run when what it needs exists yet,
# and skipped with a warning otherwise; once it exists, its failure is fatal.
persistence_ready() {
  local dir
  dir="$(workspace_dir @infer/persistence)" && has_npm_script "$dir" db:generate
}
admin_cli_ready() { [[ -f apps/admin-cli/src/main.ts ]]; }

# pid_alive FILE: true when FILE holds the pid of a running process.
pid_alive() {
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(cat "$1" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}
