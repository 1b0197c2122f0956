#!/usr/bin/env bash
# Brings On The Map up on this machine: a private PostgreSQL in .data/ with its WAL archived and its backups
# taken by pgBackRest (.data/backups), the schema, and the services. Ctrl-C stops everything. Settings come
# from the environment (see README, "Configuration" and "Backups"); defaults suit one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source scripts/backup-lib.sh
ensure_toolchain
ensure_pgbackrest_installed
[ -n "${LEAFLET_DIR:-}" ] || ensure_leaflet_installed

data_dir="$PWD/.data/postgres"
pg_port=${ONTHEMAP_PG_PORT:-54329}
locations_port=${LOCATIONS_PORT:-8081}
gateway_port=${PORT:-8080}

echo "building (release)..."
for product in locations-service auth-gateway onthemap; do
    swift build "${RELEASE_BUILD[@]}" --product "$product"
done
bin=$(swift build "${RELEASE_BUILD[@]}" --show-bin-path)

mkdir -p .data
backup_settings "$PWD/.data"
write_backup_config "$data_dir" "$pg_port"
mapfile -t archiving < <(archive_settings)
start_private_postgres "$data_dir" "$pg_port" "${archiving[@]}"
services=()
scheduler=""
stop() {
    trap - INT TERM EXIT
    for pid in "${services[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${services[@]}"; do wait "$pid" 2>/dev/null || true; done
    # The scheduler's subshell and a backup it may be running (pgBackRest stops cleanly on SIGTERM).
    [ -n "$scheduler" ] && { pkill -TERM -P "$scheduler" 2>/dev/null || true; kill -TERM "$scheduler" 2>/dev/null || true; wait "$scheduler" 2>/dev/null || true; }
    stop_private_postgres "$data_dir"
    echo "stopped"
}
trap stop INT TERM EXIT

as_db_owner "$PG_BIN/psql" -h "$data_dir" -p "$pg_port" -U onthemap -d postgres -qtAc \
    "SELECT 1 FROM pg_database WHERE datname = 'onthemap'" | grep -q 1 \
    || as_db_owner "$PG_BIN/createdb" -h "$data_dir" -p "$pg_port" -U onthemap onthemap

# The stanza in the repository, and a first segment archived: archiving that fails stops here, not later.
ensure_stanza >/dev/null
backup_scheduler &
scheduler=$!

export DATABASE_URL=${DATABASE_URL:-"postgres://onthemap@127.0.0.1:$pg_port/onthemap"}
if [ -z "${INTERNAL_TOKEN:-}" ]; then
    [ -f .data/internal-token ] || python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > .data/internal-token
    INTERNAL_TOKEN=$(cat .data/internal-token)
fi
export INTERNAL_TOKEN
# locations-service reports the repository's last backup on /metrics; both services record erasures,
# disabled accounts and hidden pins in the ledger beside the backups.
export BACKUP_STANZA RESTORE_LEDGER PGBACKREST_CONFIG

"$bin/locations-service" migrate
"$bin/auth-gateway" migrate
# locations-service is internal: loopback only. The gateway is the public door.
PORT=$locations_port "$bin/locations-service" serve --host 127.0.0.1 &
services+=($!)
LOCATIONS_URL="http://127.0.0.1:$locations_port" PORT=$gateway_port "$bin/auth-gateway" serve &
services+=($!)

wait_ready() {
    for _ in $(seq 1 100); do
        python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "not ready: $1"
}
wait_ready "http://127.0.0.1:$locations_port/readyz"
wait_ready "http://127.0.0.1:$gateway_port/readyz"
gateway_hint=""
[ "$gateway_port" = 8080 ] || gateway_hint=" ONTHEMAP_GATEWAY=http://127.0.0.1:$gateway_port"
cat <<TXT

On The Map is up.
  gateway            http://127.0.0.1:$gateway_port   (point the apps and the CLI here; API: /openapi.yaml)
  locations-service  http://127.0.0.1:$locations_port   (internal only)
  PostgreSQL         $DATABASE_URL   (data in .data/postgres)
  backups            $BACKUP_REPO   (full every $BACKUP_FULL_INTERVAL, differential every $BACKUP_INTERVAL; scripts/backup-status.sh)
Command line (in another shell):
  export PATH="$bin:\$PATH"$gateway_hint
  onthemap signup      then: onthemap post --location "Patiala, Punjab" --link udacity.com, onthemap list, onthemap --help
Sign up with curl:  curl -X POST http://127.0.0.1:$gateway_port/v1/accounts -d '{"email":"you@example.com","password":"at least 8","firstName":"Ada","lastName":"Lovelace"}'
Press Ctrl-C to stop.
TXT
wait
