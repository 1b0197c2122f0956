#!/usr/bin/env bash
# The live fan-out: N subscribers on the gateway's /v1/StudentLocation/events, one pin posted through the
# gateway, and the time from that POST until the last subscriber has it; against nchan (Debian's
# libnginx-mod-nchan, one worker per core) publishing a message of the same size to the same number of
# EventSource subscribers, measured by the same client (bench/sse-fanout.c) in the same run. Also the
# gateway's resident memory per open stream, and what it holds again once the streams have gone.
# Goals: at 10,000 subscribers, at most 1.0x nchan's time and 8 KB per subscriber.
# Release builds in .build-bench/ (shared with the other benchmarks); its own PostgreSQL and services on
# loopback (Tests/browser/stack.sh). Writes the "Live fan-out" section of BENCHMARKS.md.
#
# Usage (as root on Debian 12; installs nginx with nchan, gcc and curl if missing):
#   bench/fanout.sh                      rounds of 1,000, 5,000 and 10,000 subscribers, 3 rounds each
#   SIZES="10000" ROUNDS=1 bench/fanout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain
export PATH="$PATH:/usr/sbin:/sbin"
results_dir=$root/bench/results
mkdir -p "$results_dir"
sizes=${SIZES:-1000 5000 10000}
rounds=${ROUNDS:-3}

missing=()
[ -f /usr/lib/nginx/modules/ngx_nchan_module.so ] || missing+=(libnginx-mod-nchan)
command -v nginx >/dev/null || missing+=(nginx-light)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    # The packages would start an nginx of their own on :80; a refusing policy-rc.d prevents that.
    made_policy=false
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=true
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    if $made_policy; then rm -f /usr/sbin/policy-rc.d; fi
fi
web_stack_open_files fanout "$(for n in $sizes; do echo "$n"; done | sort -n | tail -n 1)"

web_stack_bench fanout
work=$BENCH_WORK

gcc -O2 -Wall -o "$work/sse-fanout" bench/sse-fanout.c

# One address opens every stream here: the per-address caps would refuse all but the first few.
export MAX_CONNECTIONS_PER_CLIENT=100000 MAX_STREAMS_PER_CLIENT=100000
web_stack_start "$BENCH_BIN" "$work"
gateway_pid=${STACK_PIDS[2]}
gateway_port=${STACK_GATEWAY##*:}

session=$(web_stack_student fanout@example.com "fanout password 1" Fan Out)

mkdir -p "$work/tmp"
nchan_port=$(free_port)
sed -e "s|@DIR@|$work|g" -e "s|@PORT@|$nchan_port|g" bench/nchan.conf.template >"$work/nchan.conf"
chown nobody "$work/tmp" 2>/dev/null || true
nginx -c "$work/nchan.conf" -e "$work/nchan-error.log" &
nginx_pid=$!
STACK_PIDS+=("$nginx_pid")  # stopped, and its log kept, with the stack
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$nchan_port/publish" && break; sleep 0.1; done
nchan_pids() { pgrep -P "$nginx_pid" | tr '\n' ' '; echo "$nginx_pid"; }

# trigger_gateway MARKER FILE: the POST of a pin whose place is MARKER, with the session.
trigger_gateway() {
    local body="{\"mapString\":\"$1\",\"mediaURL\":\"https://example.com/fanout\",\"latitude\":48.8566,\"longitude\":2.3522}"
    printf 'POST /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "$session" "${#body}" "$body" >"$2"
}
# trigger_nchan MARKER FILE: the publication of a message as long as the gateway's event for that pin.
trigger_nchan() {
    local body="{\"objectId\":\"AbCdEfGhIj\",\"uniqueKey\":\"0123456789abcdef0123456789abcdef\",\"firstName\":\"Fan\",\"lastName\":\"Out\",\"mapString\":\"$1\",\"mediaURL\":\"https://example.com/fanout\",\"latitude\":48.8566,\"longitude\":2.3522,\"createdAt\":\"2026-01-01T00:00:00.000Z\",\"updatedAt\":\"2026-01-01T00:00:00.000Z\"}"
    printf 'POST /publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "${#body}" "$body" >"$2"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
out=$results_dir/fanout.jsonl
: >"$out"
echo "gateway idle: $(rss_kb "$gateway_pid") kB"
for n in $sizes; do
    for round in $(seq 1 "$rounds"); do
        # The order flips from one round to the next, so a drift of the machine's speed favours neither.
        order="gateway nchan"
        [ $((round % 2)) = 0 ] && order="nchan gateway"
        for server in $order; do
            marker="fanout-$server-$n-$round-$RANDOM$RANDOM"
            if [ "$server" = gateway ]; then
                trigger_gateway "$marker" "$work/trigger"
                line=$("$work/sse-fanout" "$gateway_port" /v1/StudentLocation/events "$n" "$work/trigger" "$marker" "$gateway_pid")
                sleep 7 # the streams are gone, and the gateway has looked at its connections (every 5 s): what it holds now
                line="${line%\}}, \"rss_left_kb\": $(rss_kb "$gateway_pid")}"
            else
                trigger_nchan "$marker" "$work/trigger"
                # shellcheck disable=SC2046
                line=$("$work/sse-fanout" "$nchan_port" /v1/StudentLocation/events "$n" "$work/trigger" "$marker" $(nchan_pids))
                sleep 3
            fi
            echo "{\"server\": \"$server\", \"round\": $round, ${line#\{}" | tee -a "$out"
        done
    done
done

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Services Shared Package.swift || echo ' with local changes')"
fi
python3 - BENCHMARKS.md "$out" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(nproc)" "$(nginx -v 2>&1 | sed 's|.*/||')" \
    "$(dpkg-query -W -f '${Version}' libnginx-mod-nchan 2>/dev/null)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, statistics, sys

sys.path.insert(0, "bench")
from section import write_sections

target, results, date, commit, cpus, nginx, nchan, load = sys.argv[1:]
runs = [json.loads(line) for line in open(results) if line.strip()]
TIME_GOAL, KB_GOAL, GOAL_SIZE = 1.0, 8.0, 10000
sizes = sorted({r["streams"] for r in runs})
pick = lambda server, n: [r for r in runs if r["server"] == server and r["streams"] == n]
median = lambda values: statistics.median(values) if values else float("nan")
per_stream = lambda r: (r["rss_open_kb"] - r["rss_before_kb"]) / r["streams"]
section = [
    "## Live fan-out",
    "",
    "`bench/fanout.sh`: N subscribers on `GET /v1/StudentLocation/events` through the gateway, then one pin",
    "posted through the gateway; the time from sending that POST until the last subscriber has the pin's",
    f"event. The limit: nchan {nchan} (nginx {nginx}, 2 workers) publishing a message of the same size to N",
    "EventSource subscribers, timed from the publishing request the same way. One client for both",
    "(`bench/sse-fanout.c`, epoll, all streams opened and answered before the clock starts); the rounds",
    f"alternate which server goes first. Release build on loopback; run on {date}, commit {commit}, {cpus} cores",
    f"(load average {load} at the end).",
    "",
    "| Subscribers | Gateway: last / median / first | nchan: last / median / first | Ratio (median of rounds) | Gateway memory per stream | Gateway RSS 7 s after they left |",
    "| --- | --- | --- | --- | --- | --- |",
]
verdicts = {}
for n in sizes:
    gateway, limit = pick("gateway", n), pick("nchan", n)
    ratios = [g["last_ms"] / c["last_ms"] for g, c in zip(sorted(gateway, key=lambda r: r["round"]), sorted(limit, key=lambda r: r["round"]))]
    ratio, kb = median(ratios), median([per_stream(r) for r in gateway])
    times = lambda rs: f"{median([r['last_ms'] for r in rs]):.0f} / {median([r['p50_ms'] for r in rs]):.0f} / {median([r['first_ms'] for r in rs]):.1f} ms"
    left = median([r["rss_left_kb"] - r["rss_before_kb"] for r in gateway])
    section.append(f"| {n:,} | {times(gateway)} | {times(limit)} | {ratio:.2f}× ({', '.join(f'{x:.2f}' for x in ratios)}) | "
                   f"{kb:.1f} KB | {left / 1024:+.1f} MB against before they came |")
    if n == GOAL_SIZE:
        verdicts = {"time": ratio, "memory": kb}
section.append("")
if verdicts:
    meets = lambda ok: "meets" if ok else "misses"
    section += [
        f"**At {GOAL_SIZE:,} subscribers: {verdicts['time']:.2f}× nchan's time** ({meets(verdicts['time'] <= TIME_GOAL)} the goal of at",
        f"most {TIME_GOAL:.1f}×); **{verdicts['memory']:.1f} KB of gateway memory per subscriber** ({meets(verdicts['memory'] <= KB_GOAL)} the goal of at most {KB_GOAL:.0f} KB).",
        "The gateway's time includes what nchan's does not: the POST itself (session, forwarding, the durable",
        "append) and the change reaching the gateway's feed from locations-service.",
        "",
    ]
write_sections(target, section)
print("\n".join(section))
PY
echo "bench/fanout.sh: wrote the Live fan-out section of BENCHMARKS.md"
