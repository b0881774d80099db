#!/usr/bin/env bash
# Starts the stack from source in the background: the apps of STACK_APPS (scripts/lib.sh), gateway last.
#   logs: var/log/<app>.log (the previous run's log is kept as <app>.log.1)   pids: var/run/<app>.pid
# Stops instances started by an earlier run first, waits until GET /readyz answers 200, then prints
# the base URL, the demo API keys and an example. The backing services (PostgreSQL, Redis, NATS) must
# be running: scripts/services.sh (or scripts/setup.sh) starts them.
#
# Environment (defaults in scripts/lib.sh): DATABASE_URL REDIS_URL NATS_URL PORT HOST ALLOW_INSECURE_HTTP,
# plus START_TIMEOUT (seconds to wait for readiness, default 300: the first start compiles every TypeScript
# file of eight apps at once, which takes minutes on a small or busy machine; an app that exits is
# reported at once, so the timeout only bounds a start that hangs).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_node
stack_env_defaults
TIMEOUT="${START_TIMEOUT:-300}"

# The address to probe: a wildcard bind is reached on loopback.
PROBE_HOST="$HOST"
case "$PROBE_HOST" in 0.0.0.0 | '' | :: | '[::]') PROBE_HOST=127.0.0.1 ;; esac
BASE="http://$PROBE_HOST:$PORT"

bash "$REPO_ROOT/scripts/stop.sh" --quiet

# http_status PATH: prints the HTTP status code of GET PATH on the gateway (plain HTTP, bash only).
http_status() {
  local line=""
  exec 3<>"/dev/tcp/$PROBE_HOST/$PORT" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$1" "$PROBE_HOST" "$PORT" >&3
  IFS= read -r -t 5 line <&3 || true
  exec 3>&- 3<&-
  line="${line%$'\r'}"
  [[ "$line" =~ ^HTTP/[0-9.]+\ ([0-9]{3}) ]] || return 1
  printf '%s\n' "${BASH_REMATCH[1]}"
}

port_taken() { (exec 3<>"/dev/tcp/$PROBE_HOST/$PORT") 2>/dev/null; }

if port_taken; then
  die "$PROBE_HOST:$PORT is already in use by another process (not one this script started): stop it or set PORT"
fi

mkdir -p "$RUN_DIR" "$LOG_DIR"
started=()
for app in "${STACK_APPS[@]}"; do
  main="$(app_main "$app")"
  if [[ ! -f "$main" ]]; then
    [[ "$app" == gateway ]] && die "$main not found"
    warn "$main not found yet: $app not started"
    continue
  fi
  log="$LOG_DIR/$app.log"
  [[ -f "$log" ]] && mv -f "$log" "$log.1"
  printf '=== %s: starting %s (%s)\n' "$(date -u +%FT%TZ)" "$app" "$main" >"$log"
  # setsid puts the app in its own session, so closing the terminal does not end it.
  launcher=()
  command -v setsid >/dev/null 2>&1 && launcher=(setsid)
  nohup "${launcher[@]}" node --conditions=source --import ./tools/ts-register.js "$main" >>"$log" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/$app.pid"
  started+=("$app")
  info "started $app (pid $!, log ${log#"$REPO_ROOT"/})"
done

fail() {
  local app
  for app in "${started[@]}"; do
    printf -- '--- last lines of var/log/%s.log ---\n' "$app" >&2
    tail -n 40 "$LOG_DIR/$app.log" >&2 || true
  done
  bash "$REPO_ROOT/scripts/stop.sh" --quiet || true
  die "$*"
}

deadline=$((SECONDS + TIMEOUT))
started_at=$SECONDS next_note=$((SECONDS + 30))
while :; do
  status="$(http_status /readyz 2>/dev/null || true)"
  [[ "$status" == 200 ]] && break
  for app in "${started[@]}"; do
    pid_alive "$RUN_DIR/$app.pid" || fail "$app exited during start-up (see its log above)"
  done
  ((SECONDS < deadline)) ||
    fail "gateway not ready after ${TIMEOUT}s (last GET /readyz status: ${status:-no answer}); on a slow machine wait longer: START_TIMEOUT=600 bash scripts/start.sh"
  if ((SECONDS >= next_note)); then
    info "waiting for the gateway to be ready ($((SECONDS - started_at))s so far, GET /readyz: ${status:-no answer yet}; at most ${TIMEOUT}s, START_TIMEOUT)"
    next_note=$((SECONDS + 30))
  fi
  sleep 0.5
done
info "gateway ready after $((SECONDS - started_at))s: GET $BASE/readyz -> 200"

echo
echo "Inference API base URL: $BASE/v1"
echo
echo "Operator console: $BASE/console/"
echo "  first owner: npm run admin -- operator create --email you@example.com --role owner --password-stdin"
echo "  (type the password, at least 12 characters, then Enter and Ctrl-D)"
echo
echo "Demo API keys:"
if admin_cli_ready; then
  # Kept in var/demo-keys.env (mode 600) and shown again on later runs; new ones only with
  # INFER_ROTATE_DEMO_KEYS=1 (scripts/setup.sh --rotate-demo-keys).
  rotate=()
  [[ "${INFER_ROTATE_DEMO_KEYS:-0}" == 1 ]] && rotate=(--rotate)
  npm run -s demo-keys -- --file "$REPO_ROOT/var/demo-keys.env" "${rotate[@]}" || warn "npm run demo-keys failed"
else
  echo "  (apps/admin-cli does not exist yet: no demo keys)"
fi
cat <<EOF

Try it (put one of the keys above in OPENAI_API_KEY; pick a model id from /models; only node is needed):
  export OPENAI_BASE_URL=$BASE/v1 OPENAI_API_KEY=<demo key>
  node -e "fetch(process.env.OPENAI_BASE_URL + '/models', {headers: {authorization: 'Bearer ' + process.env.OPENAI_API_KEY}}).then((r) => r.json()).then((j) => console.log(j.data.map((m) => m.id).join(' ')))"
  node -e "fetch(process.env.OPENAI_BASE_URL + '/search', {method: 'POST', headers: {authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json'}, body: JSON.stringify({query: 'quick start'})}).then((r) => r.json()).then((j) => console.log(j.results ? j.results.map((x) => x.title).join('\\n') : j))"
  node -e "fetch(process.env.OPENAI_BASE_URL + '/images/generations', {method: 'POST', headers: {authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json'}, body: JSON.stringify({prompt: 'a red fox', size: '512x512'})}).then((r) => r.json()).then((j) => console.log(j.data ? j.data[0].url : j))"   # inference-tier key; image-model is the simulator (a test double) until configured
  node -e "new (require('openai').OpenAI)().chat.completions.create({model: process.argv[1], messages: [{role: 'user', content: 'Hello!'}]}).then((r) => console.log(r.choices[0].message.content))" <model id>

Logs: var/log/{$(IFS=,; echo "${started[*]}")}.log   Stop: bash scripts/stop.sh
EOF
