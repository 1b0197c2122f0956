#!/usr/bin/env bash
# On The Map highly available, on this machine: three database hosts (etcd, Patroni, PostgreSQL 15 with a
# synchronous standby), HAProxy, two gateways and two locations-services, each simulated host on its own
# loopback address (ha/topology.py lists them), their WAL and backups in one pgBackRest repository. Data,
# backups and logs in .ha/ (HA_FOLDER); Ctrl-C stops all.
# The files in ha/ are the configuration an operator puts on real hosts (README, "High availability").
# Usage: scripts/ha-up.sh        (BIN=folder uses binaries already built instead of a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
ensure_postgres_installed
ensure_ha_installed

if [ -z "${BIN:-}" ]; then
    echo "building (release)..."
    for product in locations-service auth-gateway onthemap; do
        swift build "${RELEASE_BUILD[@]}" --product "$product"
    done
    BIN=$(swift build "${RELEASE_BUILD[@]}" --show-bin-path)
fi
[ -n "${LEAFLET_DIR:-}" ] || ensure_leaflet_installed
exec python3 ha/topology.py up --folder "${HA_FOLDER:-$PWD/.ha}" --bin "$BIN" --pg-bin "$PG_BIN"
