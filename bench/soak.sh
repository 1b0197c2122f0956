#!/usr/bin/env bash
# The soak: mixed traffic through the gateway for 30 minutes (wrk reading and posting back to back, each of
# its connections kept for the whole run, as a proxy in front of the gateway keeps its own), logins,
# live-feed subscribers coming and going and a crowd of 5,000 that comes and leaves (bench/soak.py). Every
# 5 s: both services' resident memory and open descriptors, and the gateway's count of answers. Reports the
# slopes, and what the gateway holds once the crowd has left; fails when a service's memory grows faster
# than bench/soak.py's bound away from the crowd. Writes the "Soak" section of BENCHMARKS.md.
# Release builds in .build-bench/; its own PostgreSQL (default durability) and services on loopback.
#
# Usage (as root on Debian 12; installs wrk if missing): bench/soak.sh      (MINUTES=5 for a trial run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain
results_dir=$root/bench/results
mkdir -p "$results_dir"
minutes=${MINUTES:-30}
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
ulimit -n "$(ulimit -Hn)"

web_stack_bench soak
work=$BENCH_WORK

# One address for every client here: the per-address caps are for the public, not for this machine.
export MAX_CONNECTIONS_PER_CLIENT=100000 MAX_STREAMS_PER_CLIENT=100000
web_stack_start "$BENCH_BIN" "$work"
gateway_pid=${STACK_PIDS[2]}
service_pid=${STACK_PIDS[0]}
session=$(web_stack_student soak@example.com "soak password 1" Soak Test)

runs=$results_dir/soak-wrk.jsonl
: >"$runs"
python3 bench/soak.py run "$STACK_GATEWAY" "$gateway_pid" "$service_pid" $((minutes * 60)) "$results_dir/soak-samples.csv" &
side=$!
# 16 readers and 4 writers, each pin of which every live stream gets.
wrk -t1 -c16 -d$((minutes * 60))s -s bench/soak.lua "$STACK_GATEWAY/v1/StudentLocation" -- read "$session" >"$work/read.txt" 2>&1 &
reader=$!
wrk -t1 -c4 -d$((minutes * 60))s -s bench/soak.lua "$STACK_GATEWAY/v1/StudentLocation" -- post "$session" >"$work/post.txt" 2>&1
wait "$reader"
wait "$side"
for kind in read post; do
    line=$(grep '^wrk-summary' "$work/$kind.txt") || { cat "$work/$kind.txt"; exit 1; }
    python3 -c 'import json, sys; print(json.dumps({"kind": sys.argv[1], **{k: float(v) for k, v in (f.split("=") for f in sys.argv[2].split()[1:])}}))' \
        "$kind" "$line" | tee -a "$runs"
done

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Services Shared Package.swift || echo ' with local changes')"
fi
python3 bench/soak.py report "$results_dir/soak-samples.csv" "$runs" BENCHMARKS.md "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(nproc)"
