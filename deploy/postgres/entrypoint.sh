#!/bin/sh
# PostgreSQL from Debian's package, the way the public postgres image runs: a cluster made in PGDATA on first
# start (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB), password logins from any address, then the server
# in the foreground, so the stop signal reaches it (SIGINT: a fast shutdown, as the image sets).
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
export PATH="$bin:$PATH"
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  case "${POSTGRES_PASSWORD:-replace-me}" in
    *replace-me*)
      echo "postgres: set POSTGRES_PASSWORD, the password of $POSTGRES_USER, to one of your own (openssl rand -hex 24), the same in DATABASE_URL" >&2
      exit 2
      ;;
  esac
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pw"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" | postgres --single -j -D "$PGDATA" postgres >/dev/null \
      || { echo "postgres: could not create database $POSTGRES_DB" >&2; exit 1; }
  fi
  echo "postgres: made a cluster in $PGDATA with database $POSTGRES_DB"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"
