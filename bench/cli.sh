#!/usr/bin/env bash
# The command-line client against curl: `onthemap list --json` and `curl -s` of the same URL, whole
# processes timed warm with hyperfine (goal: at most 2x curl's time), plus the client's start-up time
# (`onthemap --version`, no network) and its peak resident memory for one `list --json`.
# Starts its own PostgreSQL and both services (release builds in .build-bench/, shared with bench/run.py),
# fills the latest-100 list, and writes the "Command line" section of BENCHMARKS.md (replaced if there,
# appended if not). bench/run.py calls it after rewriting the rest of the file.
#
# Usage (as root on Debian 12; installs hyperfine, PostgreSQL, curl if missing): bench/cli.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib.sh
ensure_toolchain
runs=${CLI_RUNS:-300}
results_dir=$root/bench/results
mkdir -p "$results_dir"

missing=()
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for product in locations-service auth-gateway onthemap; do
    timeout 1800 swift build "${RELEASE_BUILD[@]}" --scratch-path .build-bench --product "$product" >"$results_dir/cli-build-$product.log" 2>&1 \
        || { tail -n 20 "$results_dir/cli-build-$product.log"; exit 1; }
done
bin=$root/.build-bench/release

pids=()
pg_dir=$(mktemp -d /tmp/onthemap-cli-pg.XXXXXX)
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]+"${pids[@]}"}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    stop_private_postgres "$pg_dir"
    rm -rf "$pg_dir" "$pg_dir.initdb.log"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_port=$(free_port)
start_private_postgres "$pg_dir" "$pg_port"
as_db_owner "$PG_BIN/createdb" -h "$pg_dir" -p "$pg_port" -U onthemap onthemap
export DATABASE_URL="postgres://onthemap@127.0.0.1:$pg_port/onthemap"
INTERNAL_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
export INTERNAL_TOKEN LOG_LEVEL=warning
locations_port=$(free_port)
gateway_port=$(free_port)
PORT=$locations_port "$bin/locations-service" serve --host 127.0.0.1 >"$results_dir/cli-locations.log" 2>&1 &
pids+=($!)
LOCATIONS_URL="http://127.0.0.1:$locations_port" PORT=$gateway_port "$bin/auth-gateway" serve --host 127.0.0.1 >"$results_dir/cli-gateway.log" 2>&1 &
pids+=($!)
gateway=http://127.0.0.1:$gateway_port
for _ in $(seq 1 150); do curl -sf "$gateway/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "$gateway/readyz" >/dev/null || { cat "$results_dir/cli-gateway.log"; exit 1; }

# A full latest-100 list, posted by one student through the CLI's own library path (the gateway's API).
export XDG_CONFIG_HOME=$pg_dir/config
echo "bench password 1" | "$bin/onthemap" signup --gateway "$gateway" --email bench@example.com --first-name Bench \
    --last-name Student --password-stdin >/dev/null
session=$(python3 -c 'import json,sys,glob; print(json.load(open(glob.glob(sys.argv[1] + "/onthemap/session-*.json")[0]))["session"]["id"])' "$XDG_CONFIG_HOME")
for index in $(seq 1 100); do
    curl -sf -o /dev/null -X POST "$gateway/v1/StudentLocation" -H "Authorization: Bearer $session" -H 'Content-Type: application/json' \
        -d "{\"mapString\":\"Place $index\",\"mediaURL\":\"https://example.com/$index\",\"latitude\":$((index % 80)).5,\"longitude\":$((index % 170)).25}"
done
url="$gateway/v1/StudentLocation"
bytes=$(curl -s "$url" | wc -c)
[ "$("$bin/onthemap" list --json --gateway "$gateway" | wc -c)" -eq $((bytes + 1)) ] || { echo "onthemap and curl disagree"; exit 1; }

hyperfine --warmup 20 --runs "$runs" -N --export-json "$results_dir/cli-list.json" \
    -n curl "curl -s $url" -n onthemap "$bin/onthemap list --json --gateway $gateway" | tee "$results_dir/cli-list.txt"
hyperfine --warmup 20 --runs "$runs" -N --export-json "$results_dir/cli-startup.json" \
    -n startup "$bin/onthemap --version" | tee "$results_dir/cli-startup.txt"
rss_kb=$(python3 - "$bin/onthemap" "$gateway" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "list", "--json", "--gateway", sys.argv[2]], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
curl_rss_kb=$(python3 - "$url" <<'PY'
import resource, subprocess, sys
subprocess.run(["curl", "-s", sys.argv[1]], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
binary_mb=$(du -m "$bin/onthemap" | cut -f1)

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Clients Shared Package.swift || echo ' with local changes')"
fi
python3 - BENCHMARKS.md "$results_dir" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(nproc)" "$bytes" "$rss_kb" "$curl_rss_kb" "$binary_mb" "$runs" <<'PY'
import json, sys

sys.path.insert(0, "bench")
from section import write_sections

target, results, date, commit, cpus, size, rss, curl_rss, binary_mb, runs = sys.argv[1:]
timings = {r["command"]: r for r in json.load(open(f"{results}/cli-list.json"))["results"]}
startup = json.load(open(f"{results}/cli-startup.json"))["results"][0]
ms = lambda r, key="median": r[key] * 1000
ratio = timings["onthemap"]["median"] / timings["curl"]["median"]
verdict = "meets" if ratio <= 2 else "misses"
section = [
    "## Command line",
    "",
    "`bench/cli.sh`: `onthemap list --json` against `curl -s` of the same URL (the latest 100 pins,",
    f"{int(size):,} bytes, from the gateway on loopback), whole processes timed by hyperfine without a shell,",
    f"20 warm-up runs then {runs} each. Release build; run on {date}, commit {commit}, {cpus} cores.",
    "",
    "| | median | mean ± σ | min |",
    "| --- | --- | --- | --- |",
]
for name in ["curl", "onthemap"]:
    r = timings[name]
    section.append(f"| `{name}` | {ms(r):.1f} ms | {ms(r, 'mean'):.1f} ± {ms(r, 'stddev'):.1f} ms | {ms(r, 'min'):.1f} ms |")
section.append(f"| `onthemap --version` (start-up, no network) | {ms(startup):.1f} ms | {ms(startup, 'mean'):.1f} ± {ms(startup, 'stddev'):.1f} ms | {ms(startup, 'min'):.1f} ms |")
section += [
    "",
    f"**Ratio: {ratio:.2f}× curl's median time** ({verdict} the goal of at most 2×). Peak resident memory of one",
    f"`onthemap list --json`: {int(rss) / 1024:.1f} MB (curl: {int(curl_rss) / 1024:.1f} MB); the binary is {binary_mb} MB.",
    "",
]
write_sections(target, section)
print(f"onthemap/curl median ratio {ratio:.2f}")
PY
echo "bench/cli.sh: wrote the Command line section of BENCHMARKS.md"
