#!/bin/sh
# Entrypoint of the PostgreSQL image built from Debian's packages (base-images.sh) in place of the official
# postgres image. It honours the same settings: POSTGRES_USER (default postgres), POSTGRES_DB (default the
# user), POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, PGDATA, and PGPORT; like the official one it
# initialises an empty data folder once (password required over TCP, trusted on the local socket), then
# runs `postgres` with the given arguments as the postgres user, in place of this script.
set -eu
case "$1" in -*) set -- postgres "$@" ;; esac
[ "$1" = postgres ] || exec "$@"
shift
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [ "$(id -u)" = 0 ]; then
    if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
        POSTGRES_PASSWORD=$(cat "$POSTGRES_PASSWORD_FILE")
        export POSTGRES_PASSWORD
        unset POSTGRES_PASSWORD_FILE
    fi
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 0700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    user=${POSTGRES_USER:-postgres}
    database=${POSTGRES_DB:-$user}
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "postgres: the database is not initialised and no POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE is set" >&2
        exit 1
    fi
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    initdb -D "$PGDATA" --username="$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    # The database is made on a server that listens on its socket only, so nothing connects half-way.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$database" != postgres ]; then
        psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -q -c "CREATE DATABASE \"$database\""
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo "postgres: initialised $PGDATA (user $user, database $database)"
fi
exec postgres "$@"
