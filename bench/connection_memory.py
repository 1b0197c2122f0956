"""What one open connection costs the gateway, by what was asked on it: the resident memory a few thousand
connections add, each kind measured on a gateway of its own (so none reuses memory another freed). It says
where the live fan-out's memory per stream goes (BENCHMARKS.md, "Live fan-out"). With HEAPTRACK=1 (Debian's
heaptrack) each gateway also runs under heaptrack, and the heap it holds at its peak is split by the code
that allocated it. Writes the "Memory per connection" section."""
import collections
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time

from bench.install import ensure
from bench.processes import NO_CAPS, RESULTS_DIR, BenchError, Stack, log, raise_open_files, request, setting
from bench.procfs import children_of, command_name, rss_kb
from bench.report import stamp, write_sections
from harness.waiting import poll

REQUESTS = {
    "idle": None,
    "accepted": None,
    # The latest 100, answered before the router (the hot read); its whole body is read.
    "prepared": b"GET /v1/StudentLocation?limit=100&order=-updatedAt HTTP/1.1\r\nHost: x\r\n\r\n",
    "routed": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "stream": b"GET /v1/StudentLocation/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n",
}
WHAT = {
    "accepted": "accepted, nothing asked yet",
    "prepared": "after one answer before the router (the latest 100)",
    "routed": "after one answer from the router (`/healthz`)",
    "stream": "holding a live stream (`/v1/StudentLocation/events`)",
}


def answered(sock, streaming):
    """Reads an answer's head, and unless STREAMING its whole body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    if streaming:
        return
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)


def answered_before_router(gateway):
    """Answers the gateway's /metrics counts as given before the router."""
    text = request(gateway.url("/metrics"))[1].decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("onthemap_http_requests_total{") and 'door="prepared"' in line)


def measure(gateway, pid, kind, n):
    """N connections of KIND held open on GATEWAY (process PID): its VmRSS before and with them."""
    def ask_once():
        with socket.create_connection(("127.0.0.1", gateway.port)) as sock:
            sock.sendall(REQUESTS[kind])
            answered(sock, False)

    if kind == "prepared":
        # The latest list is answered before the router only once the gateway's feed has caught up with the
        # log (up to its first long poll, 5 s): until then it asks the service through the router.
        def answered_before():
            counted = answered_before_router(gateway)
            ask_once()
            return answered_before_router(gateway) > counted
        if not poll(answered_before, 30, every=0.5):
            raise BenchError("connection-memory: the latest list is never answered before the router")
    time.sleep(1)
    before = rss_kb(pid)
    counted = answered_before_router(gateway) if kind == "prepared" else 0
    held = []
    try:
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", gateway.port))
            held.append(sock)
            if REQUESTS[kind]:
                sock.sendall(REQUESTS[kind])
                answered(sock, kind == "stream")
        time.sleep(3)
        opened = rss_kb(pid)
        if kind == "prepared" and answered_before_router(gateway) - counted < n:
            raise BenchError(f"connection-memory: {answered_before_router(gateway) - counted:.0f} of {n} answered "
                             "before the router")
    finally:
        for sock in held:
            sock.close()
    return {"kind": kind, "connections": n, "rss_before_kb": before, "rss_open_kb": opened}


def run(bench):
    n = setting("N", 3000)
    heaptracked = os.environ.get("HEAPTRACK") == "1"
    kinds = ["accepted", "prepared", "routed", "stream"]
    if heaptracked:
        ensure("heaptrack")
        # A gateway that holds no connection: what every gateway allocates (the gazetteer, pools, caches) is
        # taken off the others' split.
        kinds.insert(0, "idle")
    raise_open_files("connection-memory", n)
    stack = Stack(bench, "connection-memory", bench.binaries("locations-service", "auth-gateway",
                                                             log_name="connection-memory-build"), NO_CAPS)
    runs = []
    with open(RESULTS_DIR / "connection-memory.jsonl", "w") as out:
        for kind in kinds:
            data = RESULTS_DIR / f"connection-memory-{kind}"
            data.with_suffix(".zst").unlink(missing_ok=True)
            wrap = ["heaptrack", "-o", data] if heaptracked else []
            gateway = stack.start("auth-gateway", "serve", log_name=f"connection-memory-{kind}.log", wrap=wrap)
            # heaptrack (a script) starts the gateway as a child of its own.
            pid = next((child for child in children_of(gateway.pid) if command_name(child) == "auth-gateway"),
                       gateway.pid)
            runs.append(measure(gateway, pid, kind, 0 if kind == "idle" else n))
            print(json.dumps(runs[-1]), file=out, flush=True)
            log(json.dumps(runs[-1]))
            os.kill(pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                gateway.proc.wait(timeout=60)
            bench.processes.stop(gateway.proc)
    write_sections(section(runs, heaptracked))


# Heaptrack's stacks at the heap's peak, each allocation charged to the first frame of ours or of a library
# that is not the runtime's or a collection's.
RUNTIME = re.compile(r"^(swift_|swift::|malloc|calloc|realloc|operator new|posix_memalign|aligned_alloc|_dispatch|__|\?\?|0x|<unresolved)"
                     r"|ContiguousArrayBuffer|_Storage|_NativeDictionary|_DictionaryStorage|_HashTable|ManagedBuffer|Deque|CircularBuffer")


def owners(kind):
    data = RESULTS_DIR / f"connection-memory-{kind}.zst"
    if not data.exists():
        return None
    stacks = RESULTS_DIR / f"connection-memory-{kind}.stacks"
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


def section(runs, heaptracked):
    n = next(run["connections"] for run in runs if run["kind"] != "idle")
    lines = [
        "## Memory per connection",
        "",
        f"`bench/run.py connection-memory`: {n:,} connections of one kind held open on a gateway of their own; the",
        "gateway's resident memory with them open, less before they came, per connection. Release build on",
        f"loopback; {stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "| Connection | Gateway memory each |",
        "| --- | --- |",
    ]
    measured = [run for run in runs if run["kind"] != "idle"]
    for run in measured:
        lines.append(f"| {WHAT[run['kind']]} | {(run['rss_open_kb'] - run['rss_before_kb']) / run['connections']:.1f} KB |")
    lines.append("")
    if heaptracked:
        lines += ["Heap held at its peak, per connection, by the code that allocated it, less what a gateway holding no",
                  "connection holds (heaptrack; the largest ten):", ""]
        idle = owners("idle") or collections.Counter()
        for run in measured:
            cost = owners(run["kind"])
            if not cost:
                continue
            cost.subtract(idle)
            lines += [f"- {WHAT[run['kind']]}:"]
            for owner, amount in cost.most_common(10):
                lines.append(f"  - {amount / run['connections']:,.0f} B: `{owner}`")
        lines.append("")
    return lines
