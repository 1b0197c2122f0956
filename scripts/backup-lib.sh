# Sourced by the scripts that run a private cluster with backups (scripts/up.sh, restore.sh,
# backup-status.sh): pgBackRest's configuration, the cluster's WAL archiving, and the backup schedule.
# Needs scripts/lib.sh sourced first (as_db_owner, ensure_postgres_installed).
#
# Settings (README, "Backups"), read by backup_settings:
#   BACKUP_REPO            the repository folder                         default DATA/backups
#   BACKUP_CONFIG          a file of further pgBackRest options (an object store's repo1-type=s3 and its
#                          repo1-s3-* keys, say); an option named there wins over the ones made here
#   BACKUP_INTERVAL        a differential backup this long after the last backup      default 6h
#   BACKUP_FULL_INTERVAL   a full backup this long after the last full one            default 7d
#   BACKUP_RETENTION_FULL  full backups kept (with their differentials and WAL)       default 2
#   RESTORE_LEDGER         the restore ledger                            default BACKUP_REPO/ledger.jsonl
#   BACKUP_KEY_FILE        the repository's key, generated on first use  default DATA/backup-key
# The key sits beside DATA/internal-token; hosts that share one repository share its key (ha/topology.py).

# ensure_pgbackrest_installed: Debian's pgbackrest, when missing.
ensure_pgbackrest_installed() {
    if ! command -v pgbackrest >/dev/null; then
        echo "installing pgBackRest..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq pgbackrest >/dev/null
    fi
}

# backup_settings DATA_FOLDER: the settings above with their defaults, and where pgBackRest's own files go
# (its configuration, spool, log and lock folders, all under DATA_FOLDER/pgbackrest).
backup_settings() {
    local data=$1
    BACKUP_DATA=$data
    BACKUP_REPO=${BACKUP_REPO:-$data/backups}
    BACKUP_STANZA=onthemap
    BACKUP_INTERVAL=${BACKUP_INTERVAL:-6h}
    BACKUP_FULL_INTERVAL=${BACKUP_FULL_INTERVAL:-7d}
    BACKUP_RETENTION_FULL=${BACKUP_RETENTION_FULL:-2}
    BACKUP_KEY_FILE=${BACKUP_KEY_FILE:-$data/backup-key}
    BACKUP_HOME=$data/pgbackrest
    PGBACKREST_CONFIG=$BACKUP_HOME/pgbackrest.conf
    RESTORE_LEDGER=${RESTORE_LEDGER:-$BACKUP_REPO/ledger.jsonl}
    export BACKUP_REPO BACKUP_STANZA PGBACKREST_CONFIG RESTORE_LEDGER
}

# seconds_of DURATION: 90, 90s, 15m, 6h, 7d in seconds.
seconds_of() {
    local text=$1
    case $text in
        *d) echo $((${text%d} * 86400)) ;;
        *h) echo $((${text%h} * 3600)) ;;
        *m) echo $((${text%m} * 60)) ;;
        *s) echo "${text%s}" ;;
        *) echo "$text" ;;
    esac
}

# write_backup_config PG_DATA PG_PORT [SOCKET_DIR] [PG_USER]: pgBackRest's configuration for the cluster in
# PG_DATA, reached through its socket in SOCKET_DIR (default PG_DATA) as PG_USER (default onthemap, the
# superuser of scripts/up.sh's cluster), the repository's key generated on first use. The configuration
# holds the key, so it is readable by the cluster's owner alone.
write_backup_config() {
    local pg_data=$1 pg_port=$2 socket_dir=${3:-$1} pg_user=${4:-onthemap} owner
    owner=$(id -un)
    [ "$(id -u)" = 0 ] && owner=postgres
    mkdir -p "$BACKUP_HOME/spool" "$BACKUP_HOME/log" "$BACKUP_HOME/lock" "$BACKUP_REPO"
    if [ ! -f "$BACKUP_KEY_FILE" ]; then
        (umask 077 && python3 -c 'import secrets; print(secrets.token_urlsafe(48))' >"$BACKUP_KEY_FILE")
    fi
    local given=""
    [ -n "${BACKUP_CONFIG:-}" ] && given=$(grep -Eo '^[[:space:]]*[a-z0-9-]+[[:space:]]*=' "$BACKUP_CONFIG" | tr -d ' =\t' || true)
    # Each option made here unless BACKUP_CONFIG names it. archive-async pushes WAL segments from a spool
    # in the background, several at once, so the server's archive_command returns without waiting for
    # the repository; start-fast asks for a checkpoint at once rather than at the next scheduled one.
    local options=(
        "repo1-path=$BACKUP_REPO"
        "repo1-cipher-type=aes-256-cbc"
        "repo1-cipher-pass=$(cat "$BACKUP_KEY_FILE")"
        "repo1-retention-full=$BACKUP_RETENTION_FULL"
        "compress-type=zst"
        "archive-async=y"
        "process-max=2"
        "start-fast=y"
        "spool-path=$BACKUP_HOME/spool"
        "log-path=$BACKUP_HOME/log"
        "lock-path=$BACKUP_HOME/lock"
        "log-level-console=warn"
        "log-level-file=info"
    )
    {
        echo "[global]"
        local option
        for option in "${options[@]}"; do
            grep -qx "${option%%=*}" <<<"$given" || echo "$option"
        done
        [ -n "${BACKUP_CONFIG:-}" ] && grep -Ev '^[[:space:]]*\[' "$BACKUP_CONFIG"
        echo
        echo "[$BACKUP_STANZA]"
        echo "pg1-path=$pg_data"
        echo "pg1-port=$pg_port"
        echo "pg1-socket-path=$socket_dir"
        echo "pg1-user=$pg_user"
        echo "pg1-database=postgres"
    } >"$PGBACKREST_CONFIG.new"
    chmod 600 "$PGBACKREST_CONFIG.new"
    mv "$PGBACKREST_CONFIG.new" "$PGBACKREST_CONFIG"
    if [ "$(id -u)" = 0 ]; then
        chown -R "$owner" "$BACKUP_HOME"
        chown "$owner" "$BACKUP_REPO"
        chmod 750 "$BACKUP_REPO"
    fi
}

# archive_settings: the server settings (for start_private_postgres) that archive every WAL segment
# through pgBackRest. archive_timeout closes a segment that has writes at least once a minute, so a
# quiet hour still reaches the repository within a minute of each change: the bound on what a lost disk
# takes with it.
archive_settings() {
    echo "archive_mode=on"
    echo "archive_command='pgbackrest --config=$PGBACKREST_CONFIG --stanza=$BACKUP_STANZA archive-push %p'"
    echo "archive_timeout=60"
}

# pgbackrest_run ARGS...: pgBackRest as the cluster's owner, on this configuration and stanza.
pgbackrest_run() {
    as_db_owner pgbackrest --config="$PGBACKREST_CONFIG" --stanza="$BACKUP_STANZA" "$@"
}

# ensure_stanza: the stanza in the repository (created on first use; a later call checks it matches the
# cluster), then a check that a WAL segment reaches the repository.
ensure_stanza() {
    pgbackrest_run stanza-create >/dev/null
    pgbackrest_run check
}

# wait_until_promoted DATA_DIR PORT USER: waits until the cluster in DATA_DIR, restored and replaying WAL to
# the restore's target, has promoted itself (asked through its socket in DATA_DIR, as USER); fails with the
# end of its log when it stops, or after 5 minutes. It answers read-only meanwhile, once it is consistent.
wait_until_promoted() {
    local data_dir=$1 port=$2 user=$3 _
    for _ in $(seq 1 600); do
        [ "$(as_db_owner "$PG_BIN/psql" -X -qtA -h "$data_dir" -p "$port" -U "$user" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ] && return 0
        private_postgres_running "$data_dir" || { tail -n 20 "$data_dir/server.log" >&2; return 1; }
        sleep 0.5
    done
    echo "restore: the cluster did not finish recovery" >&2
    return 1
}

# backup_ages: "SECONDS_SINCE_LAST_BACKUP SECONDS_SINCE_LAST_FULL" from the repository (-1: none yet).
backup_ages() {
    pgbackrest_run --output=json info | python3 -c '
import json, sys, time
backups = [b for stanza in json.load(sys.stdin) for b in stanza.get("backup", [])]
def age(kinds):
    stops = [b["timestamp"]["stop"] for b in backups if b["type"] in kinds]
    return int(time.time() - max(stops)) if stops else -1
print(age(("full", "diff", "incr")), age(("full",)))'
}

# backup_now TYPE: one backup (full or diff), its outcome in one line; retention expires the oldest.
backup_now() {
    local started=$SECONDS
    if pgbackrest_run --type="$1" backup; then
        echo "backup: $1 backup done in $((SECONDS - started)) s"
    else
        echo "backup: the $1 backup failed; see $BACKUP_HOME/log" >&2
        return 1
    fi
}

# backup_scheduler: runs until killed. A full backup when the repository holds none (so at first start) or
# the last full one is older than BACKUP_FULL_INTERVAL; a differential when the last backup of any kind is
# older than BACKUP_INTERVAL. Looks once a minute. On real hosts cron or a systemd timer does this (README).
backup_scheduler() {
    local interval full_interval ages since_any since_full
    interval=$(seconds_of "$BACKUP_INTERVAL")
    full_interval=$(seconds_of "$BACKUP_FULL_INTERVAL")
    while true; do
        if ages=$(backup_ages 2>/dev/null); then
            read -r since_any since_full <<<"$ages"
            if [ "$since_full" -lt 0 ] || [ "$since_full" -ge "$full_interval" ]; then
                backup_now full || true
            elif [ "$since_any" -ge "$interval" ]; then
                backup_now diff || true
            fi
        fi
        sleep 60
    done
}
