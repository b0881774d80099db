# shellcheck shell=bash disable=SC2034 # variables here are used by the scripts that source this file
# Helpers shared by the scripts in this folder. Source it; do not run it.
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# After sourcing, the working directory is the repository root and REPO_ROOT names it.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
cd "$REPO_ROOT" || exit 1

# The Node version the project needs (package.json "engines").
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=19

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
STACK_APPS=(chat-service gateway)
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

# node_ok: true when `node` is on PATH and at least NODE_MIN_MAJOR.NODE_MIN_MINOR.
node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  local v major minor
  v="$(node -p 'process.versions.node' 2>/dev/null)" || return 1
  IFS=. read -r major minor _ <<<"$v"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  ((major > NODE_MIN_MAJOR || (major == NODE_MIN_MAJOR && minor >= NODE_MIN_MINOR)))
}

# require_node: exits 1 with instructions when Node is missing or too old.
require_node() {
  node_ok && command -v npm >/dev/null 2>&1 && return 0
  local found="not installed"
  command -v node >/dev/null 2>&1 && found="$(node --version 2>/dev/null || echo unknown)"
  cat >&2 <<EOF
${_c_red}error:${_c_reset} this project needs Node.js >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR} with npm (found: ${found}).

Debian 12's own 'nodejs' package is Node 18, which is too old, so it is not installed for you.
Install Node 20 (or newer) in one of these ways, then run this command again:
  - NodeSource's Debian/Ubuntu packages for Node 20.x (apt repository deb.nodesource.com,
    see https://github.com/nodesource/distributions), then: apt-get install -y nodejs
  - nvm (https://github.com/nvm-sh/nvm): nvm install 20
  - the official Linux x64 tarball from https://nodejs.org/en/download, unpacked onto PATH
  - Debian 13 (trixie) or Ubuntu 24.10+ ship Node >= 20 as 'nodejs' (plus 'npm')
EOF
  exit 1
}

# deps_stale: true when node_modules is missing or older than package-lock.json.
deps_stale() {
  [[ -d node_modules ]] || return 0
  [[ -f package-lock.json ]] || { [[ package.json -nt node_modules ]] && return 0 || return 1; }
  [[ -f node_modules/.package-lock.json ]] || return 0
  [[ package-lock.json -nt node_modules/.package-lock.json ]]
}

# install_deps auto|force: npm ci (npm install without a lockfile) when needed ("auto") or always ("force").
install_deps() {
  if [[ "${1:-}" != force ]] && ! deps_stale; then
    return 0
  fi
  if [[ -f package-lock.json ]]; then
    info "installing npm packages (npm ci)"
    npm ci --no-audit --no-fund
  else
    info "installing npm packages (npm install: no package-lock.json)"
    npm install --no-audit --no-fund
  fi
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
