#!/usr/bin/env bash
# The longer proofs, beside scripts/test.sh: schemathesis over the published API document (both
# services on a private PostgreSQL, as scripts/test.sh runs its tests), the faults under load (20 s of
# each kill, ten crashes of PostgreSQL), a coverage-guided pass over the parsers of client input (its own
# sanitizer build; bench/fuzz.sh runs a million inputs each), failover on three database hosts (Patroni,
# etcd, HAProxy: the primary's host killed, then frozen, etcd's leader killed, a replica of each service
# killed), a restore drill (a DROP under load undone by a point-in-time restore, the restore ledger
# re-applied), then docker-compose.yml brought up as users run it, in a Docker engine of its own (about 13
# minutes, most of it the image's release build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test.sh --filter schemathesisFindsNoServerErrorAndNoAnswerThatBreaksTheDocument
scripts/fault-test.sh
scripts/restore-drill.sh
scripts/fuzz.sh 20000
scripts/ha-test.sh
scripts/compose-test.sh
