#!/usr/bin/env bash
# Stops the apps that scripts/start.sh started (pids in var/run/<app>.pid): SIGTERM, then SIGKILL
# after STOP_TIMEOUT seconds (default 15). Idempotent. Leaves PostgreSQL, Redis and NATS running.
#   --quiet   print nothing when there was nothing to stop
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUIET=0
[[ "${1:-}" == --quiet ]] && QUIET=1
TIMEOUT="${STOP_TIMEOUT:-15}"

# is_our_app PID APP: the process runs apps/APP (guards against a pid reused by something else).
is_our_app() {
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true)"
  [[ -z "$cmd" || "$cmd" == *"$(app_main "$2")"* ]]
}

stopped_any=0
# Stop in the reverse of the start order: the gateway first, so it stops taking requests.
for ((i = ${#STACK_APPS[@]} - 1; i >= 0; i--)); do
  app="${STACK_APPS[$i]}"
  pidfile="$RUN_DIR/$app.pid"
  [[ -f "$pidfile" ]] || continue
  if pid_alive "$pidfile"; then
    pid="$(cat "$pidfile")"
    if ! is_our_app "$pid" "$app"; then
      warn "pid $pid in ${pidfile#"$REPO_ROOT"/} is not $app any more: not touching it"
      rm -f "$pidfile"
      continue
    fi
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      warn "$app (pid $pid) did not stop within ${TIMEOUT}s: killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    info "stopped $app (pid $pid)"
    stopped_any=1
  fi
  rm -f "$pidfile"
done

if [[ "$stopped_any" -eq 0 && "$QUIET" -eq 0 ]]; then
  info "nothing to stop"
fi
