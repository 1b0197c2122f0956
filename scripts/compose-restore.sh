#!/usr/bin/env bash
# Restores docker-compose.yml's database from the `backups` profile's pgBackRest repository, to a moment,
# to the latest WAL archived, or to one backup; then proves and completes it before a request is let in.
#
#   scripts/compose-restore.sh --to '2026-11-28 09:30:00+00'
#   scripts/compose-restore.sh --to-latest
#   scripts/compose-restore.sh --set 20261128-093000F    (docker compose run --rm backups info lists them)
#
# As scripts/restore.sh does on one machine: the WAL the server has not archived yet goes to the repository
# first (when it still runs), the services and the server stop, the data volume is restored in place
# (pgBackRest's delta: only the files that differ are rewritten), the server replays WAL to the target and
# promotes itself, then `locations-service replay --verify`, and the restore ledger (the `ledger` volume) is
# re-applied from 5 minutes before the restore point, with `compact` when anyone was erased again; then
# everything starts. COMPOSE names the compose command (default: docker compose); the compose file,
# project and profiles are compose's own settings (COMPOSE_FILE, COMPOSE_PROJECT_NAME, COMPOSE_PROFILES).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a compose <<<"${COMPOSE:-docker compose}"

usage() {
    echo "usage: scripts/compose-restore.sh --to 'TIME' | --to-latest | --set LABEL" >&2
    exit 64
}
mode="" target=""
while [ $# -gt 0 ]; do
    case $1 in
        --to) [ $# -ge 2 ] || usage; mode=time target=$2; shift 2 ;;
        --to-latest) mode=latest; shift ;;
        --set) [ $# -ge 2 ] || usage; mode=set target=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$mode" ] || usage
if [ "$mode" = time ]; then
    date -d "$target" >/dev/null 2>&1 || { echo "compose-restore: --to takes a time such as '2026-11-28 09:30:00+00'" >&2; exit 64; }
    [[ $target =~ (Z|[+-][0-9][0-9](:?[0-9][0-9])?)$ ]] || { echo "compose-restore: give --to a time zone, e.g. '$target+00'" >&2; exit 64; }
fi
started=$SECONDS
psql_in() { "${compose[@]}" exec -T postgres psql -X -qtA -U onthemap -d onthemap -h /var/run/postgresql -c "$1"; }

# 1. The server's last WAL archived, when it still runs.
if "${compose[@]}" exec -T postgres onthemap-backups check >/dev/null 2>&1; then
    echo "compose-restore: the server's last WAL is archived"
else
    echo "compose-restore: could not archive the server's last WAL; restoring what the repository holds" >&2
fi

# 2. Everything of the project stops; the data volume is restored.
"${compose[@]}" stop
case $mode in
    time) options=(--to "$target") ;;
    latest) options=(--to-latest) ;;
    set) options=(--set "$target") ;;
esac
"${compose[@]}" run --rm --no-deps backups restore "${options[@]}"

# 3. The server alone, replaying WAL to the target; the restore is done when it leaves recovery.
"${compose[@]}" up -d --no-deps postgres
recovered=""
for _ in $(seq 1 3600); do
    if [ "$(psql_in 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then recovered=yes; break; fi
    sleep 1
done
[ -n "$recovered" ] || { echo "compose-restore: the server did not finish recovery; see docker compose logs postgres" >&2; exit 1; }
replayed_to=$(psql_in "SELECT to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
last=$(psql_in "SELECT position || ' at ' || to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || ' UTC' FROM locations.events ORDER BY position DESC LIMIT 1" || true)
echo "compose-restore: recovered in $((SECONDS - started)) s"

# 4. The log against its read model, then the ledger, before any request.
run_service() { "${compose[@]}" run --rm --no-deps "$1" "$@"; }
run_service locations-service replay --verify
point=$replayed_to
[ "$mode" = time ] && point=$(date -u -d "$target" +%Y-%m-%dT%H:%M:%S.%3NZ)
since=$(date -u -d "${point:-1970-01-01T00:00:00Z} 5 minutes ago" +%Y-%m-%dT%H:%M:%S.%3NZ)
ledger_out=$(run_service locations-service ledger apply --since "$since")
echo "$ledger_out"
run_service auth-gateway ledger apply --since "$since"
if ! grep -q '^ledger: 0 erasure' <<<"$ledger_out"; then
    run_service locations-service compact
    run_service auth-gateway compact
fi

# 5. Everything serves again (the backups service, with the profile on).
"${compose[@]}" up -d
echo "compose-restore: the log's last event is position ${last:-none (the log is empty)}; transactions replayed up to ${replayed_to:-the end of the backup}"
echo "compose-restore: done in $((SECONDS - started)) s"
