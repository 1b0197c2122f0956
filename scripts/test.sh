#!/usr/bin/env bash
# Runs every test: installs what is missing, starts a private PostgreSQL, builds, tests.
# Usage: scripts/test.sh [extra `swift test` arguments, e.g. --filter ReplayTests]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain

data_dir=$(mktemp -d /tmp/onthemap-test-pg.XXXXXX)
port=$(free_port)
cleanup() {
    stop_private_postgres "$data_dir"
    rm -rf "$data_dir" "$data_dir.initdb.log"
}
trap cleanup EXIT

# fsync off: the test cluster is thrown away, and the tests measure behaviour, not durability.
start_private_postgres "$data_dir" "$port" fsync=off
export TEST_DATABASE_URL="postgres://onthemap@127.0.0.1:$port/postgres"
echo "test PostgreSQL on 127.0.0.1:$port"

swift build --build-tests
swift test --skip-build "$@"
