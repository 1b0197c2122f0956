#!/usr/bin/env bash
# The backup repository of scripts/up.sh: its backups (labels for `scripts/restore.sh --set`), the WAL it
# holds (the span `scripts/restore.sh --to` can reach), and the restore ledger's records.
# Extra arguments go to `pgbackrest info` (`--output=json`, `--set=LABEL` for one backup in detail).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source scripts/backup-lib.sh
ensure_pgbackrest_installed
backup_settings "${ONTHEMAP_DATA:-$PWD/.data}"
[ -f "$PGBACKREST_CONFIG" ] || { echo "no backups are configured yet: scripts/up.sh makes them" >&2; exit 1; }
pgbackrest_run info "$@"
if [[ " $* " != *" --output=json "* ]]; then
    echo
    if [ -f "$RESTORE_LEDGER" ]; then
        echo "restore ledger $RESTORE_LEDGER: $(wc -l <"$RESTORE_LEDGER") record(s), the last: $(tail -n 1 "$RESTORE_LEDGER")"
    else
        echo "restore ledger $RESTORE_LEDGER: no records yet"
    fi
fi
