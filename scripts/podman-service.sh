#!/usr/bin/env bash
# Podman's Docker-compatible API service for the containers backend and its tests.
#
#   scripts/podman-service.sh start   installs podman + runc if missing (root, Debian), writes the
#                                     containers.conf this sandbox needs, starts `podman system service`
#                                     unless one already answers, and prints DOCKER_HOST=unix://...
#   scripts/podman-service.sh stop    stops the service this script started (by its pid file)
#   scripts/podman-service.sh env     prints DOCKER_HOST=... when the service answers (exit 1 if not)
#   scripts/podman-service.sh run CMD...
#                                     start, run CMD with DOCKER_HOST exported, stop what it started,
#                                     exit with CMD's status. Without an engine CMD runs with
#                                     `-- --skip containers_` appended (a cargo test command): the
#                                     containers tests are skipped by name, the others run.
#
# Idempotent: `start` twice starts one service. If DOCKER_HOST already points at an engine that
# answers (a real Docker, say), `start` does nothing and prints it. Why the configuration: see
# the Podman notes in docs/GUIDE.md, "Containers" (crun fails on this cgroup setup, so
# runc; the sandbox lacks CAP_SYS_RESOURCE, so explicit ulimits below the hard limits).
set -uo pipefail

dir=${SINKHOLE_PODMAN_DIR:-/tmp/sinkhole-podman}
sock="$dir/podman.sock"
pidfile="$dir/service.pid"
conf="$dir/containers.conf"
export CONTAINERS_CONF="$conf"

answers() { # $1 = unix socket path
  [ -S "$1" ] && curl -sf --max-time 3 --unix-socket "$1" http://d/_ping >/dev/null 2>&1
}

say() { echo "podman-service: $*" >&2; }

start() {
  if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST#unix://}" != "$DOCKER_HOST" ] && answers "${DOCKER_HOST#unix://}"; then
    say "an engine already answers at $DOCKER_HOST"
    echo "DOCKER_HOST=$DOCKER_HOST"
    return 0
  fi
  if [ -S /var/run/docker.sock ] && answers /var/run/docker.sock; then
    say "a Docker engine answers at /var/run/docker.sock"
    echo "DOCKER_HOST=unix:///var/run/docker.sock"
    return 0
  fi
  mkdir -p "$dir"
  if answers "$sock"; then
    say "already running ($sock)"
    echo "DOCKER_HOST=unix://$sock"
    return 0
  fi
  if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      say "podman/runc missing and cannot install them here (need root and apt-get)"
      return 1
    fi
    say "installing podman, runc (Debian packages) ..."
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq podman runc curl; } >"$dir/apt.log" 2>&1 || {
      say "apt-get failed; see $dir/apt.log"
      return 1
    }
  fi
  cat >"$conf" <<'EOF'
# written by sinkhole scripts/podman-service.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
  rm -f "$sock"
  nohup podman system service --time=0 "unix://$sock" >"$dir/service.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 100); do
    if answers "$sock"; then
      say "started (pid $(cat "$pidfile"), log $dir/service.log)"
      echo "DOCKER_HOST=unix://$sock"
      return 0
    fi
    sleep 0.1
  done
  say "the service did not answer within 10 s; see $dir/service.log"
  return 1
}

stop() {
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      say "stopped (pid $pid)"
    fi
    rm -f "$pidfile" "$sock"
  else
    say "not started by this script; nothing to stop"
  fi
}

run() {
  local started_here=0 host status
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then started_here=0; else started_here=1; fi
  if host=$(start); then
    export "${host?}"
    say "containers tests use $DOCKER_HOST"
    "$@"
    status=$?
    [ "$started_here" = 1 ] && stop >/dev/null 2>&1
  else
    say "no container engine: the containers tests are skipped by name (--skip containers_)"
    "$@" -- --skip containers_
    status=$?
  fi
  return "$status"
}

case "${1:-start}" in
  start) start ;;
  run) shift; run "$@" ;;
  stop) stop ;;
  env) answers "$sock" && echo "DOCKER_HOST=unix://$sock" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
