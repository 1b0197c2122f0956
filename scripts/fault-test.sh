#!/usr/bin/env bash
# Faults under load against the real binaries, each on its own PostgreSQL with default durability:
# kill -9 of locations-service and of a gateway replica, PostgreSQL stopped for 5 s, crashed and restarted ten times,
# the hop between the services cut, the database's disk full (a small tmpfs, so run as root). Each checks
# that every request got an honest answer in time and that every acknowledged pin is in the log and the
# read model exactly once (Tests/faults/faults.py says how). Figures go to test-output/faults.json.
# Usage: scripts/fault-test.sh [--seconds N] [scenario ...]   (bench/faults.sh runs the longer variants)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
ensure_postgres_installed

for product in locations-service auth-gateway; do swift build -q --product "$product"; done
mkdir -p test-output
python3 Tests/faults/faults.py --bin "$(swift build --show-bin-path)" \
    --results test-output/faults.json "$@"
