#!/usr/bin/env bash
# The restore drill (Tests/faults/restore_drill.py says what it does and checks): a mistake made under
# load on a private cluster whose WAL pgBackRest archives, undone by scripts/restore.sh to one second
# before it, then a restore to before an erasure, a hide and a disabling that only the restore ledger
# remembers. Prints the recovery point and the recovery time; figures go to test-output/restore-drill.json.
# Usage: scripts/restore-drill.sh [--seconds N]   (N: each stretch of load, 6 s by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source scripts/backup-lib.sh
ensure_toolchain
ensure_postgres_installed
ensure_pgbackrest_installed

for product in locations-service auth-gateway; do swift build -q --product "$product"; done
mkdir -p test-output
python3 Tests/faults/restore_drill.py --bin "$(swift build --show-bin-path)" --results test-output/restore-drill.json "$@"
