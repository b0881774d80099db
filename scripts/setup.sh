#!/usr/bin/env bash
# Installs and starts the whole stack on its embedded defaults (the README's first command):
#   1. makes sure Node.js >= 24.11 with npm is there (from Debian, or Node 26 from the npm registry: scripts/lib.sh)
#   2. scripts/services.sh: PostgreSQL, Redis, NATS (JetStream) and the media tools, installed from
#      Debian's packages when missing, started when stopped
#   3. npm install (at the lockfile's versions) when node_modules is missing or older than the lockfile
#   4. npm run db:generate, db:migrate, catalog:sync (Prisma client, schema, model catalog)
#   5. builds the operator console (apps/console -> apps/console/dist, served at /console/)
#   6. scripts/start.sh: starts the apps and prints the base URL, the demo keys (kept in
#      var/demo-keys.env across runs) and examples
# Idempotent: run it again at any time.
#   --reinstall          run npm install even when node_modules looks current
#   --rotate-demo-keys   revoke the demo keys kept in var/demo-keys.env and mint new ones (otherwise
#                        every run shows the same demo keys)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REINSTALL=0
for arg in "$@"; do
  case "$arg" in
    --reinstall) REINSTALL=1 ;;
    --rotate-demo-keys) export INFER_ROTATE_DEMO_KEYS=1 ;;
    -h | --help)
      awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown option: $arg (see --help)" ;;
  esac
done

require_node
stack_env_defaults
info "node $(node --version), npm $(npm --version)"

# Create the database of DATABASE_URL when it lives on the local server scripts/services.sh manages.
if [[ "$DATABASE_URL" =~ ^postgres(ql)?://([^@/]*@)?(127\.0\.0\.1|localhost)(:5432)?/([A-Za-z_][A-Za-z0-9_]*)([?].*)?$ ]]; then
  export SERVICES_DATABASES="${SERVICES_DATABASES-${BASH_REMATCH[5]}}"
fi
bash "$REPO_ROOT/scripts/services.sh"
info "PostgreSQL, Redis and NATS are running"

if [[ "$REINSTALL" -eq 1 ]]; then install_deps force; else install_deps auto; fi

# Hooks provided by other parts of the project (root package.json "scripts").
if persistence_ready; then
  info "npm run db:generate"
  npm run -s db:generate
else
  warn "libs/persistence has no db:generate script yet: skipping the Prisma client generation"
fi
if admin_cli_ready; then
  info "npm run db:migrate"
  npm run -s db:migrate
  info "npm run catalog:sync"
  npm run -s catalog:sync
  # The local web-search index (the default search engine): the project's own documentation, refreshed.
  info "npm run admin -- search seed-docs"
  npm run -s admin -- search seed-docs
else
  warn "apps/admin-cli does not exist yet: skipping db:migrate and catalog:sync"
fi

# The operator console (apps/console), served by the gateway at /console/.
info "building the operator console (apps/console)"
npm run -s build -w @infer/console >/dev/null || warn "the operator console build failed: /console/ will say so"

exec bash "$REPO_ROOT/scripts/start.sh"
