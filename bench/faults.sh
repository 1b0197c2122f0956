#!/usr/bin/env bash
# The longer variants of the fault tests: each kill scenario goes on for a minute (scripts/fault-test.sh,
# which the test command runs, keeps them to 20 s). Figures in bench/results/faults.json.
# Usage: bench/faults.sh [--seconds N] [scenario ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
ensure_postgres_installed
for product in locations-service auth-gateway; do swift build "${RELEASE_BUILD[@]}" -q --product "$product"; done
mkdir -p bench/results
python3 Tests/faults/faults.py --bin "$(swift build "${RELEASE_BUILD[@]}" --show-bin-path)" \
    --seconds 60 --results bench/results/faults.json "$@"
