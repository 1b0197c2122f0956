#!/usr/bin/env bash
# What one open connection costs the gateway, by what was asked on it: the resident memory a few thousand
# connections add, each kind measured on a gateway of its own (so none reuses memory another freed).
# It says where the live fan-out's memory per stream goes (BENCHMARKS.md, "Live fan-out"). With
# HEAPTRACK=1 (Debian's heaptrack, installed if missing) each gateway also runs under heaptrack, and the
# heap it holds at its peak is split by the code that allocated it.
# Release builds in .build-bench/, its own PostgreSQL and services on loopback (Tests/browser/stack.sh).
# Writes the "Memory per connection" section of BENCHMARKS.md.
#
# Usage (as root on Debian 12):
#   bench/connection-memory.sh            3,000 connections of each kind
#   N=10000 HEAPTRACK=1 bench/connection-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain
export PATH="$PATH:/usr/sbin:/sbin"
results_dir=$PWD/bench/results
mkdir -p "$results_dir"
n=${N:-3000}
kinds="accepted prepared routed stream"
if [ "${HEAPTRACK:-0}" = 1 ]; then
    command -v heaptrack >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq heaptrack >/dev/null; }
    # A gateway that holds no connection: what every gateway allocates (the gazetteer, pools, caches) is
    # taken off the others' split.
    kinds="idle $kinds"
fi
web_stack_open_files connection-memory "$n"

web_stack_bench connection-memory
work=$BENCH_WORK
export MAX_CONNECTIONS_PER_CLIENT=100000 MAX_STREAMS_PER_CLIENT=100000
web_stack_start "$BENCH_BIN" "$work"
out=$results_dir/connection-memory.jsonl
: >"$out"
for kind in $kinds; do
    port=$(free_port)
    wrap=()
    [ "${HEAPTRACK:-0}" = 1 ] && wrap=(heaptrack -o "$results_dir/connection-memory-$kind")
    rm -f "$results_dir/connection-memory-$kind".zst
    LOCATIONS_URL=$STACK_LOCATIONS PORT=$port "${wrap[@]}" "$BENCH_BIN/auth-gateway" serve --host 127.0.0.1 \
        >"$results_dir/connection-memory-$kind.log" 2>&1 &
    runner=$!
    web_stack_wait_ready "http://127.0.0.1:$port/readyz"
    gateway=$runner
    # heaptrack starts the gateway as a process of its own: the newest with its command line.
    [ "${HEAPTRACK:-0}" = 1 ] && gateway=$(pgrep -n -f "auth-gateway serve")
    python3 - "$port" "$n" "$kind" "$gateway" >>"$out" <<'PY'
import json, socket, sys, time, urllib.request
port, n, kind, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if kind == "idle":
    n = 0
requests = {
    "idle": None,
    "accepted": None,
    # The latest 100, answered before the router (the hot read); its whole body is read.
    "prepared": b"GET /v1/StudentLocation?limit=100&order=-updatedAt HTTP/1.1\r\nHost: x\r\n\r\n",
    "routed": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "stream": b"GET /v1/StudentLocation/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n",
}
def rss():
    return next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS:"))
def answered(sock, streaming):
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    if streaming:
        return
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
def answered_before_router():
    """Answers the gateway's /metrics counts as given before the router."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("onthemap_http_requests_total{") and 'door="prepared"' in line)
def ask_once():
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(requests[kind])
    answered(sock, False)
    sock.close()
if kind == "prepared":
    # The latest list is answered before the router only once the gateway's feed has caught up with the
    # log (up to its first long poll, 5 s): until then it asks the service through the router.
    deadline = time.time() + 30
    while True:
        counted = answered_before_router()
        ask_once()
        if answered_before_router() > counted:
            break
        if time.time() > deadline:
            sys.exit("connection-memory: the latest list is never answered before the router")
        time.sleep(0.5)
time.sleep(1)
before = rss()
counted = answered_before_router() if kind == "prepared" else 0
held = []
for _ in range(n):
    sock = socket.create_connection(("127.0.0.1", port))
    if requests[kind]:
        sock.sendall(requests[kind])
        answered(sock, kind == "stream")
    held.append(sock)
time.sleep(3)
opened = rss()
if kind == "prepared" and answered_before_router() - counted < n:
    sys.exit(f"connection-memory: {answered_before_router() - counted:.0f} of {n} answered before the router")
print(json.dumps({"kind": kind, "connections": n, "rss_before_kb": before, "rss_open_kb": opened}))
for sock in held:
    sock.close()
PY
    kill -INT "$gateway"
    wait "$runner" || true
done

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Services Shared Package.swift || echo ' with local changes')"
fi
python3 - BENCHMARKS.md "$out" "$results_dir" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(nproc)" "${HEAPTRACK:-0}" <<'PY'
import collections, json, os, re, subprocess, sys

sys.path.insert(0, "bench")
from section import write_sections

target, results, folder, date, commit, cpus, heaptracked = sys.argv[1:]
runs = [json.loads(line) for line in open(results) if line.strip()]
what = {
    "accepted": "accepted, nothing asked yet",
    "prepared": "after one answer before the router (the latest 100)",
    "routed": "after one answer from the router (`/healthz`)",
    "stream": "holding a live stream (`/v1/StudentLocation/events`)",
}
n = next(run["connections"] for run in runs if run["kind"] != "idle")
section = [
    "## Memory per connection",
    "",
    f"`bench/connection-memory.sh`: {n:,} connections of one kind held open on a gateway of their own; the",
    "gateway's resident memory with them open, less before they came, per connection. Release build on",
    f"loopback; run on {date}, commit {commit}, {cpus} cores.",
    "",
    "| Connection | Gateway memory each |",
    "| --- | --- |",
]
for run in runs:
    if run["kind"] == "idle":
        continue
    kb = (run["rss_open_kb"] - run["rss_before_kb"]) / run["connections"]
    section.append(f"| {what[run['kind']]} | {kb:.1f} KB |")
section.append("")

# Heaptrack's stacks at the heap's peak, each allocation charged to the first frame of ours or of a library
# that is not the runtime's or a collection's.
RUNTIME = re.compile(r"^(swift_|swift::|malloc|calloc|realloc|operator new|posix_memalign|aligned_alloc|_dispatch|__|\?\?|0x|<unresolved)"
                     r"|ContiguousArrayBuffer|_Storage|_NativeDictionary|_DictionaryStorage|_HashTable|ManagedBuffer|Deque|CircularBuffer")
def owners(kind):
    data = os.path.join(folder, f"connection-memory-{kind}.zst")
    if not os.path.exists(data):
        return None
    stacks = os.path.join(folder, f"connection-memory-{kind}.stacks")
    subprocess.run(["heaptrack_print", "-f", data, "--flamegraph-cost-type", "peak", "-F", stacks], capture_output=True, check=True)
    cost = collections.Counter()
    for line in open(stacks, errors="replace"):
        stack, _, amount = line.rstrip().rpartition(" ")
        frames = [frame for frame in stack.split(";") if frame][::-1]
        owner = next((frame for frame in frames if not RUNTIME.search(frame)), frames[0] if frames else "?")
        cost[owner.split(" (")[0]] += int(amount)
    names = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(cost), capture_output=True, text=True).stdout
    named = collections.Counter()
    for name, amount in zip(names.split("\n"), cost.values()):
        named[name[:110]] += amount
    return named

if heaptracked == "1":
    section += ["Heap held at its peak, per connection, by the code that allocated it, less what a gateway holding no",
                "connection holds (heaptrack; the largest ten):", ""]
    idle = owners("idle") or collections.Counter()
    for run in runs:
        if run["kind"] == "idle":
            continue
        cost = owners(run["kind"])
        if not cost:
            continue
        cost.subtract(idle)
        section += [f"- {what[run['kind']]}:"]
        for owner, amount in cost.most_common(10):
            section.append(f"  - {amount / run['connections']:,.0f} B: `{owner}`")
    section.append("")
write_sections(target, section)
print("\n".join(section))
PY
echo "bench/connection-memory.sh: wrote the Memory per connection section of BENCHMARKS.md"
