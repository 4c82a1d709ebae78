#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 for the store tests and prints the URL to use.
# Usage: eval "$(bash .ci/postgres.sh start)"   …   bash .ci/postgres.sh stop
# Installs PostgreSQL with apt when the machine has none. Needs root (CI and dev machines here are).
set -euo pipefail
PORT="${TILL_PG_PORT:-54329}"
DATA="${TILL_PG_DATA:-/tmp/till-ci-postgres}"

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

case "${1:-start}" in
start)
  BIN="$(find_bin)"
  if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    echo "installing PostgreSQL with apt" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    BIN="$(find_bin)"
  fi
  if [ -f "$DATA/postmaster.pid" ]; then
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" stop -m fast >&2 || true
  fi
  rm -rf "$DATA"
  mkdir -p "$DATA"
  chown postgres:postgres "$DATA"
  runuser -u postgres -- "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null
  runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
    -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2
  "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -q -c "CREATE ROLE till LOGIN PASSWORD 'till'" >&2
  "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -q -c "CREATE DATABASE till OWNER till" >&2
  echo "export TILL_TEST_POSTGRES_URL=postgres://till:till@127.0.0.1:$PORT/till"
  ;;
stop)
  BIN="$(find_bin)"
  [ -n "$BIN" ] && [ -f "$DATA/postmaster.pid" ] && runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" stop -m fast >&2 || true
  ;;
esac
