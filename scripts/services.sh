#!/usr/bin/env bash
# Ensures the backing services of the stack run on 127.0.0.1 at their standard ports:
#   PostgreSQL 5432, Redis 6379, NATS with JetStream 4222
# and that the Debian media tools the audio engines use are installed
# (ffmpeg espeak-ng flite pocketsphinx pocketsphinx-en-us).
#
# For each service: a port that answers is left alone; otherwise the Debian package is installed
# when its binary is missing (apt-get; sudo when not root) and the server is started as a plain
# background process (no systemd needed: works in containers). Idempotent, and silent when
# everything already runs.
#
# DEVELOPMENT DEFAULT: a PostgreSQL cluster started here is set to trust TCP connections from
# 127.0.0.1 and ::1 (pg_hba.conf), so `postgres` logs in from localhost without a password.
# Do not use that setting on a shared or production server.
#
# Environment:
#   SERVICES_TIMEOUT=60        seconds to wait for each service to answer
#   SERVICES_DATABASES=infer   databases created in PostgreSQL when missing ("" for none)
#   SERVICES_SKIP_MEDIA=1      do not check or install the media tools
#   SERVICES_PG_PORT, SERVICES_REDIS_PORT, SERVICES_NATS_PORT   other ports (for testing this script)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TIMEOUT="${SERVICES_TIMEOUT:-60}"
DATABASES="${SERVICES_DATABASES-infer}"
MEDIA_PACKAGES=(ffmpeg espeak-ng flite pocketsphinx pocketsphinx-en-us)

# The stack expects the standard ports; the overrides exist to test this script beside running servers.
PG_PORT="${SERVICES_PG_PORT:-5432}"
REDIS_PORT="${SERVICES_REDIS_PORT:-6379}"
NATS_PORT="${SERVICES_NATS_PORT:-4222}"

# ---------------------------------------------------------------- privileges and apt

SUDO=()
if [[ "$(id -u)" -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
fi
is_root() { [[ "$(id -u)" -eq 0 ]]; }
can_root() { is_root || [[ ${#SUDO[@]} -gt 0 ]]; }
as_root() { "${SUDO[@]}" "$@"; }

APT_UPDATED=0
apt_available() { command -v apt-get >/dev/null 2>&1 && can_root; }
apt_update_once() {
  [[ "$APT_UPDATED" -eq 1 ]] && return 0
  info "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  APT_UPDATED=1
}
apt_install() {
  info "apt-get install $*"
  local out rc=0
  out="$(mktemp)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >"$out" 2>&1 || rc=$?
  if [[ "$rc" -ne 0 ]]; then
    tail -n 30 "$out" >&2
    warn "apt-get install $* failed (exit $rc)"
  fi
  rm -f "$out"
  return "$rc"
}
# pkg_installed NAME: the Debian package NAME is installed.
pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}
# pkg_known NAME: apt has a candidate version for NAME.
pkg_known() {
  local c
  c="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')"
  [[ -n "$c" && "$c" != "(none)" ]]
}

# ---------------------------------------------------------------- probes

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  if command -v timeout >/dev/null 2>&1; then
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

# wait_for NAME SECONDS CHECK...: runs CHECK every half second until it succeeds.
wait_for() {
  local name="$1" secs="$2"
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      return 1
    fi
    sleep 0.5
  done
  info "$name is up"
}

show_log_tail() {
  local f="$1"
  if [[ -r "$f" ]]; then
    printf -- '--- last lines of %s ---\n' "$f" >&2
    tail -n 25 "$f" >&2 || true
  elif [[ -e "$f" ]] && can_root; then
    printf -- '--- last lines of %s ---\n' "$f" >&2
    as_root tail -n 25 "$f" >&2 || true
  fi
}

# ---------------------------------------------------------------- installs

# Missing server packages are collected first so that one apt-get install covers them.
server_binary_missing() {
  case "$1" in
    postgresql) ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || ! command -v pg_ctlcluster >/dev/null 2>&1 ;;
    redis-server) ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 ;;
    nats-server) [[ ! -x /usr/sbin/nats-server ]] && ! command -v nats-server >/dev/null 2>&1 ;;
  esac
}

install_servers() {
  local missing=() pkg
  if ! port_open "$PG_PORT" && server_binary_missing postgresql; then missing+=(postgresql); fi
  if ! port_open "$REDIS_PORT" && server_binary_missing redis-server; then missing+=(redis-server); fi
  if ! port_open "$NATS_PORT" && server_binary_missing nats-server; then missing+=(nats-server); fi
  [[ ${#missing[@]} -eq 0 ]] && return 0
  command -v apt-get >/dev/null 2>&1 ||
    die "missing ${missing[*]} and apt-get is not available: install them yourself, or use docker/compose.yaml"
  can_root ||
    die "missing ${missing[*]}: installing them needs root (run as root, or install sudo), or use docker/compose.yaml"
  apt_update_once
  for pkg in "${missing[@]}"; do
    pkg_known "$pkg" || die "apt knows no package '$pkg' (check /etc/apt/sources.list)"
  done
  # In containers the packages' own start attempts (invoke-rc.d) may fail or be denied: that is fine,
  # the servers are started below.
  apt_install "${missing[@]}"
}

install_media() {
  [[ "${SERVICES_SKIP_MEDIA:-}" == 1 ]] && return 0
  local missing=() unknown=() pkg
  if ! command -v dpkg-query >/dev/null 2>&1; then
    warn "not a Debian-based system: install ${MEDIA_PACKAGES[*]} yourself (the audio engines need them)"
    return 0
  fi
  for pkg in "${MEDIA_PACKAGES[@]}"; do
    pkg_installed "$pkg" || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if ! apt_available; then
    warn "media tools missing (${missing[*]}) and apt-get is not usable here (needs root or sudo): the audio engines will not work until they are installed"
    return 0
  fi
  apt_update_once || {
    warn "apt-get update failed: media tools not installed (${missing[*]})"
    return 0
  }
  local installable=()
  for pkg in "${missing[@]}"; do
    if pkg_known "$pkg"; then installable+=("$pkg"); else unknown+=("$pkg"); fi
  done
  [[ ${#unknown[@]} -gt 0 ]] && warn "apt knows no package named: ${unknown[*]} (skipped)"
  [[ ${#installable[@]} -eq 0 ]] && return 0
  apt_install "${installable[@]}" || warn "could not install ${installable[*]}: the audio engines will not work until they are"
}

# ---------------------------------------------------------------- PostgreSQL

pg_newest_version() {
  local d v best=""
  for d in /usr/lib/postgresql/*/bin/postgres; do
    [[ -x "$d" ]] || continue
    v="${d#/usr/lib/postgresql/}"
    v="${v%%/*}"
    if [[ -z "$best" ]] || ((${v%%.*} > ${best%%.*})); then best="$v"; fi
  done
  [[ -n "$best" ]] && printf '%s\n' "$best"
}

# pg_cluster_on_port PORT: prints "VERSION NAME" of the cluster configured for PORT.
pg_cluster_on_port() {
  pg_lsclusters -h 2>/dev/null | awk -v p="$1" '$3 == p {print $1, $2; exit}'
}

PG_HBA_MARK='# infer-platform: development default (scripts/services.sh)'

# pg_trust_localhost VERSION NAME: prepends trust rules for 127.0.0.1/32 and ::1/128 to pg_hba.conf
# (first match wins) unless they were added before. Returns 0 when the file was changed.
pg_trust_localhost() {
  local hba="/etc/postgresql/$1/$2/pg_hba.conf" tmp
  [[ -e "$hba" ]] || { warn "no $hba: cannot set trust auth for localhost"; return 1; }
  if as_root grep -qF "$PG_HBA_MARK" "$hba"; then
    return 1
  fi
  info "PostgreSQL $1/$2: trusting TCP connections from 127.0.0.1 and ::1 (development default, $hba)"
  tmp="$(mktemp)"
  {
    printf '%s\n' "$PG_HBA_MARK"
    printf '# Local TCP connections log in without a password. Remove these lines for anything but development.\n'
    printf 'host    all             all             127.0.0.1/32            trust\n'
    printf 'host    all             all             ::1/128                 trust\n'
    printf '# end of infer-platform development default\n\n'
    as_root cat "$hba"
  } >"$tmp"
  # cp onto the existing file keeps its owner and mode.
  as_root cp "$tmp" "$hba"
  rm -f "$tmp"
  return 0
}

pg_login_ok() {
  PGCONNECT_TIMEOUT=3 psql -X -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc 'select 1' >/dev/null 2>&1
}

ensure_postgres() {
  local cluster ver name
  if port_open "$PG_PORT"; then
    # Running: make sure passwordless login from localhost works; fix the local cluster if not.
    if command -v psql >/dev/null 2>&1 && ! pg_login_ok; then
      cluster="$(pg_cluster_on_port "$PG_PORT" || true)"
      if [[ -n "$cluster" ]] && can_root; then
        read -r ver name <<<"$cluster"
        if pg_trust_localhost "$ver" "$name"; then
          as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" reload
          sleep 1
        fi
      fi
      pg_login_ok || warn "PostgreSQL on 127.0.0.1:$PG_PORT refuses user 'postgres' without a password: set DATABASE_URL with credentials"
    fi
    ensure_databases
    return 0
  fi
  can_root || die "PostgreSQL is not running on 127.0.0.1:$PG_PORT and starting it needs root or sudo"

  cluster="$(pg_cluster_on_port "$PG_PORT" || true)"
  if [[ -z "$cluster" ]]; then
    if [[ -n "$(pg_lsclusters -h 2>/dev/null)" ]]; then
      pg_lsclusters >&2 || true
      die "no PostgreSQL cluster is configured for port $PG_PORT (see the list above): change one's port in its postgresql.conf, or free the name and rerun"
    fi
    ver="$(pg_newest_version)" || die "PostgreSQL server binaries not found under /usr/lib/postgresql"
    info "creating PostgreSQL cluster $ver/main on port $PG_PORT"
    as_root pg_createcluster --port "$PG_PORT" "$ver" main >/dev/null
    cluster="$ver main"
  fi
  read -r ver name <<<"$cluster"
  pg_trust_localhost "$ver" "$name" || true

  info "starting PostgreSQL $ver/$name"
  if ! as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start; then
    show_log_tail "/var/log/postgresql/postgresql-$ver-$name.log"
    die "PostgreSQL $ver/$name did not start"
  fi
  if ! wait_for "PostgreSQL" "$TIMEOUT" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
    show_log_tail "/var/log/postgresql/postgresql-$ver-$name.log"
    die "PostgreSQL did not answer on 127.0.0.1:$PG_PORT within ${TIMEOUT}s"
  fi
  pg_login_ok || die "PostgreSQL runs but user 'postgres' cannot log in from 127.0.0.1 without a password (check /etc/postgresql/$ver/$name/pg_hba.conf)"
  ensure_databases
}

ensure_databases() {
  local db
  [[ -n "$DATABASES" ]] || return 0
  command -v psql >/dev/null 2>&1 || return 0
  pg_login_ok || return 0
  for db in $DATABASES; do
    [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { warn "skipping odd database name '$db'"; continue; }
    if [[ -z "$(psql -X -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc "select 1 from pg_database where datname = '$db'")" ]]; then
      info "creating database $db"
      psql -X -w -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "create database \"$db\"" >/dev/null
    fi
  done
}

# ---------------------------------------------------------------- Redis

redis_ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }

ensure_redis() {
  port_open "$REDIS_PORT" && return 0
  local dir logfile
  if is_root; then
    dir=/var/lib/redis
    logfile=/var/log/redis/redis-server.log
  else
    dir="$REPO_ROOT/var/redis"
    logfile="$LOG_DIR/redis-server.log"
  fi
  mkdir -p "$dir" "$(dirname "$logfile")"
  info "starting Redis"
  # Nothing is persisted: the stack keeps only expiring state and queues in Redis during development.
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$dir" --logfile "$logfile" ||
    {
      show_log_tail "$logfile"
      die "redis-server did not start"
    }
  if ! wait_for "Redis" "$TIMEOUT" redis_ping; then
    show_log_tail "$logfile"
    die "Redis did not answer PING on 127.0.0.1:$REDIS_PORT within ${TIMEOUT}s"
  fi
}

# ---------------------------------------------------------------- NATS

# nats_info: prints the server's INFO line.
nats_info() {
  local line=""
  exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT" || return 1
  IFS= read -r -t 3 line <&3 || true
  exec 3>&- 3<&-
  [[ "$line" == INFO* ]] || return 1
  printf '%s\n' "$line"
}

nats_check_jetstream() {
  local info_line
  info_line="$(nats_info 2>/dev/null || true)"
  if [[ -z "$info_line" ]]; then
    warn "something answers on 127.0.0.1:$NATS_PORT but it does not speak NATS"
  elif [[ "$info_line" != *'"jetstream":true'* ]]; then
    warn "NATS on 127.0.0.1:$NATS_PORT runs without JetStream: restart it with -js (usage events need it)"
  fi
}

ensure_nats() {
  if port_open "$NATS_PORT"; then
    nats_check_jetstream
    return 0
  fi
  local bin store logfile pidfile ssd=""
  bin="$(command -v nats-server 2>/dev/null || echo /usr/sbin/nats-server)"
  [[ -x "$bin" ]] || die "nats-server binary not found"
  if is_root; then
    store=/var/lib/nats-server
    logfile=/var/log/nats-server.log
    pidfile=/run/nats-server.pid
  else
    store="$REPO_ROOT/var/nats"
    logfile="$LOG_DIR/nats-server.log"
    pidfile="$RUN_DIR/nats-server.pid"
  fi
  mkdir -p "$store" "$(dirname "$logfile")" "$(dirname "$pidfile")"
  for ssd in "$(command -v start-stop-daemon 2>/dev/null || true)" /usr/sbin/start-stop-daemon /sbin/start-stop-daemon; do
    [[ -n "$ssd" && -x "$ssd" ]] && break
    ssd=""
  done
  info "starting NATS (JetStream, store $store)"
  if [[ -n "$ssd" ]]; then
    "$ssd" --start --oknodo --background --pidfile "$pidfile" --make-pidfile --exec "$bin" -- \
      -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$store" -l "$logfile"
  else
    nohup "$bin" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$store" -l "$logfile" >/dev/null 2>&1 &
    echo $! >"$pidfile"
    disown || true
  fi
  if ! wait_for "NATS" "$TIMEOUT" port_open "$NATS_PORT"; then
    show_log_tail "$logfile"
    die "NATS did not answer on 127.0.0.1:$NATS_PORT within ${TIMEOUT}s"
  fi
  nats_check_jetstream
}

# ---------------------------------------------------------------- main

install_servers
ensure_postgres
ensure_redis
ensure_nats
install_media
