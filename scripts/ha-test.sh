#!/usr/bin/env bash
# Failover under load on the highly available topology (ha/topology.py, as scripts/ha-up.sh runs it):
# the primary's host killed, then frozen and thawed, an etcd member killed, a gateway and a
# locations-service replica killed; each checked for honest answers, the failover's time, nothing lost or
# doubled and every live stream complete. Then the restore drill once: a DROP under load undone by a
# point-in-time restore through Patroni, the standbys rebuilt from the pgBackRest repository
# (Tests/ha/ha.py says how). Figures go to test-output/ha.json.
# Usage: scripts/ha-test.sh [scenario ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
ensure_postgres_installed
ensure_ha_installed

bin=$(build_services)
mkdir -p test-output
python3 Tests/ha/ha.py --bin "$bin" --pg-bin "$PG_BIN" --results test-output/ha.json "$@"
