#!/usr/bin/env bash
# Restores the database of scripts/up.sh from its pgBackRest repository, to a moment, to the latest WAL
# archived, or to one backup; then proves and completes it before anything serves again.
#
#   scripts/restore.sh --to '2026-11-28 09:30:00+00'   the database as it was at that moment
#   scripts/restore.sh --to-latest                     everything the repository holds
#   scripts/restore.sh --set 20261128-093000F          one backup as it ended (`scripts/backup-status.sh` lists them)
#
# The services must be stopped (Ctrl-C in scripts/up.sh); the script refuses while they answer. It
# 1. archives the WAL the old cluster has not yet archived, when it can still start (a mistake, such as a
#    DROP, leaves it whole: then nothing written before the mistake is lost);
# 2. keeps the old data folder aside (.data/postgres.before-restore-TIME) and restores into a new one;
# 3. replays WAL up to the target and promotes the cluster (a new timeline, archived as before);
# 4. runs `locations-service replay --verify`, then re-applies the restore ledger from 5 minutes before the
#    restore point (erasures, disabled accounts, hidden pins: see README, "Backups"), compacting the
#    tables when it erased anyone again;
# 5. prints what it restored (the log's last event, its position and time) and stops the cluster:
#    scripts/up.sh serves it.
# Settings: those of scripts/up.sh and of scripts/backup-lib.sh. ONTHEMAP_DATA (default .data) and
# ONTHEMAP_BIN (a folder with the binaries; default: built as scripts/up.sh builds them) and
# ONTHEMAP_DATABASE (default onthemap) serve the drill.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source scripts/backup-lib.sh

usage() {
    echo "usage: scripts/restore.sh --to 'TIME' | --to-latest | --set LABEL" >&2
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
    # PostgreSQL reads the target in the server's time zone when it names none: ask for one.
    date -d "$target" >/dev/null 2>&1 || { echo "restore: --to takes a time such as '2026-11-28 09:30:00+00'" >&2; exit 64; }
    [[ $target =~ (Z|[+-][0-9][0-9](:?[0-9][0-9])?)$ ]] || { echo "restore: give --to a time zone, e.g. '$target+00'" >&2; exit 64; }
fi

ensure_toolchain
ensure_postgres_installed
ensure_pgbackrest_installed
data=${ONTHEMAP_DATA:-$PWD/.data}
data_dir="$data/postgres"
pg_port=${ONTHEMAP_PG_PORT:-54329}
backup_settings "$data"
[ -f "$PGBACKREST_CONFIG" ] || { echo "restore: no backups are configured in $data (scripts/up.sh makes them)" >&2; exit 1; }

for port in "${LOCATIONS_PORT:-8081}" "${PORT:-8080}"; do
    if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; then
        echo "restore: something answers on port $port: stop the services first (Ctrl-C in scripts/up.sh)" >&2
        exit 1
    fi
done

if [ -n "${ONTHEMAP_BIN:-}" ]; then
    bin=$ONTHEMAP_BIN
else
    echo "building (release)..."
    for product in locations-service auth-gateway; do swift build -q "${RELEASE_BUILD[@]}" --product "$product"; done
    bin=$(swift build "${RELEASE_BUILD[@]}" --show-bin-path)
fi

started=$(date +%s.%N)
mapfile -t archiving < <(archive_settings)
database=${ONTHEMAP_DATABASE:-onthemap}
# psql_on DATABASE SQL: one statement's rows, unaligned.
psql_on() { as_db_owner "$PG_BIN/psql" -X -qtA -h "$data_dir" -p "$pg_port" -U onthemap -d "$1" -v ON_ERROR_STOP=1 -c "$2"; }

# 1. What the old cluster wrote and has not archived yet goes to the repository first: `check` switches to
# a new WAL segment and waits until the one it closed is archived.
if [ -f "$data_dir/PG_VERSION" ]; then
    if private_postgres_running "$data_dir" || start_private_postgres "$data_dir" "$pg_port" "${archiving[@]}" 2>/dev/null; then
        if pgbackrest_run check >/dev/null 2>&1; then
            echo "restore: the old cluster's last WAL is archived"
        else
            echo "restore: could not archive the old cluster's last WAL; restoring what the repository holds" >&2
        fi
        stop_private_postgres "$data_dir"
    else
        echo "restore: the old cluster does not start; restoring what the repository holds" >&2
    fi
fi

# 2. The old folder kept aside, a new one restored.
aside=""
if [ -e "$data_dir" ]; then
    aside="$data_dir.before-restore-$(date -u +%Y%m%dT%H%M%SZ)"
    mv "$data_dir" "$aside"
fi
mkdir -p "$data_dir"
if [ "$(id -u)" = 0 ]; then chown postgres "$data_dir"; fi
chmod 700 "$data_dir"
case $mode in
    time) options=(--type=time "--target=$target" --target-action=promote) ;;
    latest) options=(--type=default) ;;
    set) options=("--set=$target" --type=immediate --target-action=promote) ;;
esac
echo "restore: restoring ${target:-the latest} into $data_dir${aside:+ (the old folder is $aside)}"
pgbackrest_run --log-level-console=warn "${options[@]}" restore
# The backup copied the socket's lock file of the cluster it was taken from, which names that cluster's
# postmaster: a process that has its number now would keep the restored cluster from starting.
rm -f "$data_dir"/.s.PGSQL.*.lock

# 3. The cluster replays WAL to the target and promotes itself; until then it answers read-only (once it
# is consistent, which a long replay may take a while to reach).
PG_START_TIMEOUT=3600 start_private_postgres "$data_dir" "$pg_port" "${archiving[@]}"
wait_until_promoted "$data_dir" "$pg_port" onthemap || exit 1
replayed_to=$(psql_on postgres "SELECT to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
recovered=$(date +%s.%N)

# What was restored, before the ledger appends anything.
last=$(psql_on "$database" "SELECT position || ' at ' || to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || ' UTC' FROM locations.events ORDER BY position DESC LIMIT 1" 2>/dev/null || true)

# 4. The log against its read model, then the ledger, before any request.
database_url="postgres://onthemap@127.0.0.1:$pg_port/$database"
export DATABASE_URL=$database_url LOG_LEVEL=${LOG_LEVEL:-warning}
"$bin/locations-service" replay --verify
point=$replayed_to
[ "$mode" = time ] && point=$(date -u -d "$target" +%Y-%m-%dT%H:%M:%S.%3NZ)
since=$(date -u -d "${point:-1970-01-01T00:00:00Z} 5 minutes ago" +%Y-%m-%dT%H:%M:%S.%3NZ)
ledger_out=$("$bin/locations-service" ledger apply --ledger "$RESTORE_LEDGER" --since "$since")
echo "$ledger_out"
"$bin/auth-gateway" ledger apply --ledger "$RESTORE_LEDGER" --since "$since"
if ! grep -q '^ledger: 0 erasure' <<<"$ledger_out"; then
    # An erasure done again leaves the student's rows dead in the tables' files until they are rewritten.
    "$bin/locations-service" compact
    "$bin/auth-gateway" compact
fi
finished=$(date +%s.%N)

# 5. Done: the cluster stops until scripts/up.sh serves it.
stop_private_postgres "$data_dir"
python3 - "$started" "$recovered" "$finished" <<'PY'
import sys
started, recovered, finished = map(float, sys.argv[1:])
print(f"restore: recovered in {recovered - started:.1f} s, verified and the ledger re-applied in {finished - recovered:.1f} s")
PY
echo "restore: the log's last event is position ${last:-none (the log is empty)}; transactions replayed up to ${replayed_to:-the end of the backup}"
echo "restore: done. scripts/up.sh serves it${aside:+; $aside holds the old cluster until you remove it}"
