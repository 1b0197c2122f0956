"""The inputs of SCALING.md's capacity model that no other benchmark measures, on release binaries, each
measured ROUNDS times (default 3) and printed as the median with every round (nothing is written into
BENCHMARKS.md; the rounds go to bench/results/scaling.json):
  1. the gateway's CPU per live stream per change. N streams are held open by bench/sse-fanout.c; pins are
     posted through the gateway one at a time, each seen on a stream of our own before the next goes, over
     a window of WINDOW seconds, then the same window passes with no post. The same two windows are measured
     with no stream open but ours. What the N streams cost per change is
       ((posts with N - idle with N) - (posts without - idle without)) / (N x posts),
     the idle windows taking out what open streams cost with no change (the heartbeat every 15 s, the
     look at connections every 5 s): a window of 15 s holds one heartbeat, whichever window it is.
     The windows without streams also give each service's and PostgreSQL's CPU per POST at that low rate,
     and the WAL one POST writes.
  2. the bytes an event takes in PostgreSQL at the current schema: the log's table, TOAST and each index,
     and the pin versions the service's trigger keeps (the map at a past moment), over a synthetic log
     written by bench/generate-events.sql (4 events per pin) at each of SCALING_PINS sizes.
  3. `locations-service replay` over those logs: events per second, its CPU and PostgreSQL's per event,
     and its peak memory, whose growth between the two sizes is what each stream of the log holds.
CPU is read as utime + stime from /proc, so contention on shared cores skews it little. PostgreSQL runs
with the default durability (fsync and synchronous_commit on), as for BENCHMARKS.md's POST and replay."""
import json
import selectors
import socket
import statistics
import subprocess
import time

from bench.install import ensure
from bench.processes import NO_CAPS, RESULTS_DIR, BenchError, Stack, log, raise_open_files, request, setting, student_session
from bench.procfs import HZ, Sampler, ended_children_cpu_seconds, process_ticks, stat_fields
from bench.report import commit, load_average, utc_now
from harness.waiting import poll

WINDOW = setting("WINDOW", 15.0, float)  # seconds; 15 s holds exactly one of the gateway's heartbeats
POSTS = setting("POSTS", 50)             # pins posted in each window
ROUNDS = setting("ROUNDS", 3)
STREAMS_PATH = "/v1/StudentLocation/events"


def cpu_seconds(pids):
    """CPU time (user + system, with reaped children) each of PIDS ({name: pid}) has used so far, and as
    NAME_system the part of its own spent in the kernel: on loopback, sending runs the receiving end too."""
    seconds = {}
    for name, pid in pids.items():
        seconds[name] = process_ticks(pid) / HZ
        seconds[f"{name}_system"] = int(stat_fields(pid)[12]) / HZ
    return seconds


def spent(before, after):
    return {name: after[name] - before[name] for name in before}


class Observer:
    """A live stream of our own: a change has been delivered once it shows here. Held open in both kinds of
    window, so the gateway's feed reads the changes themselves (not only the head) in both."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(f"GET {STREAMS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          "Accept: text/event-stream\r\n\r\n".encode())
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ)
        self.tail = b""

    def wait_for(self, marker, seconds=10):
        deadline = time.monotonic() + seconds
        while marker not in self.tail:
            if time.monotonic() > deadline:
                raise BenchError(f"the change {marker!r} never reached the live stream")
            if self.selector.select(timeout=0.5):
                data = self.sock.recv(65536)
                if not data:
                    raise BenchError("the gateway closed the observing live stream")
                self.tail = self.tail[-4096:] + data
        self.tail = self.tail.split(marker, 1)[1]

    def close(self):
        self.selector.close()
        self.sock.close()


def post_pin(gateway, session, marker):
    body = (f'{{"mapString":"{marker.decode()}","mediaURL":"https://example.com/scaling","latitude":48.8566,'
            f'"longitude":2.3522}}')
    status, answer = request(gateway.url(), "POST", {"Authorization": f"Bearer {session}",
                                                     "Content-Type": "application/json"}, body.encode())
    if status != 200:  # the Parse contract's answer to a created pin
        raise BenchError(f"a POST through the gateway answered {status}: {answer[:200]!r}")


def wal_lsn(pg):
    return pg.value("postgres", "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")


def posting_window(gateway, session, observer, pids, tag):
    """POSTS pins spread over WINDOW seconds, each delivered before the next goes: the CPU each of PIDS
    used, and how long the window lasted (longer than WINDOW only when a delivery came late)."""
    before, start = cpu_seconds(pids), time.monotonic()
    for k in range(POSTS):
        time.sleep(max(0.0, start + k * WINDOW / POSTS - time.monotonic()))
        marker = f"scaling-{tag}-{k:04d}".encode()  # none a prefix of another
        post_pin(gateway, session, marker)
        observer.wait_for(marker)
    time.sleep(max(0.0, start + WINDOW - time.monotonic()))
    return spent(before, cpu_seconds(pids)), time.monotonic() - start


def idle_window(pids, seconds):
    before = cpu_seconds(pids)
    time.sleep(seconds)
    return spent(before, cpu_seconds(pids))


def live_streams(gateway):
    """The gateway's own count of open live streams (its /metrics gauge)."""
    status, text = request(gateway.url("/metrics"))
    for line in text.decode().splitlines() if status == 200 else []:
        if line.startswith("onthemap_live_streams "):
            return int(float(line.split()[1]))
    return 0


def with_streams(bench, client, gateway, session, n, trigger, measure):
    """MEASURE() while sse-fanout holds N streams open on GATEWAY, then one more pin, which the client waits
    for on every stream before it ends: what MEASURE returned, and the client's line (the delivery times of
    that pin, the gateway's memory before and with the streams). The client's own trigger (a GET /healthz)
    publishes nothing; from when it is sent, the client waits at most 60 s for that last pin."""
    marker = f"scaling-end-{n}-{time.monotonic_ns()}"
    proc = bench.processes.spawn([client, gateway.port, STREAMS_PATH, n, trigger, marker, gateway.pid],
                                 subprocess.PIPE, subprocess.PIPE)
    try:
        def held_or_ended():
            if live_streams(gateway) >= n + 1:  # the observer's stream too
                return "held"
            return proc.poll() is not None and "ended"
        if poll(held_or_ended, 120, every=0.2) != "held":
            raise BenchError(f"sse-fanout did not hold {n} streams open")
        time.sleep(1)  # the client has sent its trigger; what opening the streams set going has settled
        measured = measure()
        post_pin(gateway, session, marker.encode())
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        raise BenchError("sse-fanout did not end") from None
    finally:
        bench.processes.stop(proc)
    if proc.returncode != 0:
        raise BenchError(f"sse-fanout failed: {err.decode(errors='replace')[-500:]}")
    return measured, json.loads(out)


def stream_round(bench, client, stack, gateway, session, observer, n, round_number, trigger):
    """One round of (1) at N streams, the two kinds of window in the order the round's number gives."""
    pids = {"gateway": gateway.pid, "service": stack.service.pid, "postgres": stack.postgres.postmaster_pid()}

    def windows(kind):
        lsn = int(wal_lsn(stack.postgres))
        time.sleep(0.5)  # psql's backend has ended and been counted before the window starts
        posts, seconds = posting_window(gateway, session, observer, pids, f"{kind}-{n}-r{round_number}")
        idle = idle_window(pids, seconds)
        return {"posts": posts, "idle": idle, "seconds": seconds, "wal": int(wal_lsn(stack.postgres)) - lsn}

    def without():
        return windows("without")

    def with_n():
        return with_streams(bench, client, gateway, session, n, trigger, lambda: windows("with"))

    if round_number % 2:
        alone, (crowded, fanout) = without(), with_n()
    else:
        (crowded, fanout), alone = with_n(), without()

    def per_stream_change(key):
        return ((crowded["posts"][key] - crowded["idle"][key]) - (alone["posts"][key] - alone["idle"][key])) / (n * POSTS)

    idle_per_stream = (crowded["idle"]["gateway"] - alone["idle"]["gateway"]) / (n * crowded["seconds"])
    return {
        "streams": n, "round": round_number, "posts": POSTS,
        "us_per_stream_per_change": per_stream_change("gateway") * 1e6,
        "us_per_stream_per_change_system": per_stream_change("gateway_system") * 1e6,
        "us_per_stream_per_second_idle": idle_per_stream * 1e6,
        # Only a first round's says much: later ones reuse memory the allocator kept from the round before.
        "kb_per_stream": (fanout["rss_open_kb"] - fanout["rss_before_kb"]) / n,
        # One POST at this low rate, with no stream but the observer: each side's CPU, and its WAL.
        **{f"post_us_{name}": (alone["posts"][name] - alone["idle"][name]) / POSTS * 1e6 for name in pids},
        "post_wal_bytes": alone["wal"] / POSTS,
        "windows": {"with": crowded, "without": alone},
    }


def measure_streams(bench, stack, sizes):
    """(1): ROUNDS rounds at each of SIZES streams."""
    work = bench.scratch("scaling")
    client = work / "sse-fanout"
    bench.processes.run_or_fail(["gcc", "-O2", "-Wall", "-o", client, "bench/sse-fanout.c"], 120,
                                RESULTS_DIR / "scaling-gcc.log", "compiling bench/sse-fanout.c failed")
    trigger = work / "trigger"
    trigger.write_bytes(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    gateway = stack.gateway()
    session = student_session(gateway, "scaling@example.com", "scaling password 1", "Scale", "Out")
    observer = Observer(gateway.port)
    rounds = []
    try:
        # A first window, not counted: the session is cached, connections and pools are open.
        posting_window(gateway, session, observer, {"gateway": gateway.pid}, "warm-up")
        for round_number in range(1, ROUNDS + 1):
            for n in sizes:
                rounds.append(stream_round(bench, client, stack, gateway, session, observer, n, round_number, trigger))
                gateway.expect_alive("the live streams")
                last = rounds[-1]
                log(f"streams: {n:,}, round {round_number}: {last['us_per_stream_per_change']:.2f} µs of gateway CPU "
                    f"per stream per change ({last['us_per_stream_per_change_system']:.2f} µs system), "
                    f"{last['us_per_stream_per_second_idle']:.3f} µs per stream per second idle")
    finally:
        observer.close()
    return rounds


SIZES_SQL = """
SELECT 'events: table', pg_relation_size('locations.events')
UNION ALL SELECT 'events: TOAST, free-space and visibility maps',
                 pg_table_size('locations.events') - pg_relation_size('locations.events')
UNION ALL SELECT 'events: index ' || indexrelid::regclass, pg_relation_size(indexrelid)
          FROM pg_index WHERE indrelid = 'locations.events'::regclass
UNION ALL SELECT 'pin_versions: table and TOAST', pg_table_size('locations.pin_versions')
UNION ALL SELECT 'pin_versions: index ' || indexrelid::regclass, pg_relation_size(indexrelid)
          FROM pg_index WHERE indrelid = 'locations.pin_versions'::regclass
"""


def write_log(bench, pg, binaries, pins):
    """(2): a log of PINS x 4 events in a database of its own, written as bench/run.py's replay log is,
    then settled: its parts in bytes, and its counts."""
    database = f"scaling_log_{pins}"
    pg.create_database(database)
    bench.processes.run_or_fail([binaries / "locations-service", "migrate"], 120, RESULTS_DIR / "scaling-migrate.log",
                                "migrating the log's database failed", {"DATABASE_URL": pg.url(database)}, append=True)
    log(f"log: writing {pins * 4:,} events over {pins:,} pins")
    start = time.monotonic()
    pg.write_events(database, pins, RESULTS_DIR / "scaling-generate.log")
    seconds = time.monotonic() - start
    pg.psql(database, "-c", "VACUUM (ANALYZE) locations.events", "-c", "VACUUM (ANALYZE) locations.pin_versions",
            "-c", "CHECKPOINT")
    parts = dict(line.rsplit("|", 1) for line in pg.psql(database, "-tA", "-c", SIZES_SQL).splitlines() if line)
    counts = {name: int(pg.value(database, f"SELECT count(*) FROM locations.{name}"))
              for name in ["events", "pin_versions"]}
    return {"database": database, "pins_written": pins, "generate_seconds": seconds,
            "bytes": {part: int(size) for part, size in parts.items()}, **counts}


def replay_once(bench, pg, binaries, logged):
    """(3): one `locations-service replay` over a log: wall clock, its CPU and PostgreSQL's, its peak memory."""
    postgres_before, client_before = process_ticks(pg.postmaster_pid()), ended_children_cpu_seconds()
    start = time.monotonic()
    replay = bench.processes.start([binaries / "locations-service", "replay"], RESULTS_DIR / "scaling-replay.log",
                                   {"DATABASE_URL": pg.url(logged["database"])})
    sampler = Sampler(replay.pid, 1800)
    if not bench.processes.finish(replay, 1800):
        raise BenchError("replay failed (bench/results/scaling-replay.log)")
    seconds = time.monotonic() - start
    figures = {"seconds": seconds, "events_per_second": logged["events"] / seconds,
               "replay_cpu_seconds": ended_children_cpu_seconds() - client_before,
               "postgres_cpu_seconds": (process_ticks(pg.postmaster_pid()) - postgres_before) / HZ,
               "peak_rss_kb": sampler.result().peak_kb}
    pg.psql(logged["database"], "-c", "CHECKPOINT")
    return figures


def measure_replay(bench, pg, binaries, logs):
    """(3) over each of LOGS, ROUNDS times, the order flipped from one round to the next; then the read
    model the last replay of each log swapped in: its pins, and their bytes."""
    rounds = []
    for round_number in range(1, ROUNDS + 1):
        for logged in logs if round_number % 2 else logs[::-1]:
            rounds.append({"events": logged["events"], "streams": logged["pins_written"], "round": round_number,
                           **replay_once(bench, pg, binaries, logged)})
            log(f"replay of {logged['events']:,} events, round {round_number}: {rounds[-1]['seconds']:.2f} s, "
                f"{rounds[-1]['events_per_second']:,.0f} events/s, peak {rounds[-1]['peak_rss_kb'] / 1024:.1f} MB")
    for logged in logs:
        logged["pins"] = int(pg.value(logged["database"], "SELECT count(*) FROM locations.pins"))
        logged["bytes"]["pins (read model), all"] = int(pg.value(logged["database"],
                                                                 "SELECT pg_total_relation_size('locations.pins')"))
    return rounds


def figure(label, values, unit, digits=2):
    """One printed figure: the median of VALUES, and every one of them."""
    rounds = ", ".join(f"{value:,.{digits}f}" for value in values)
    print(f"  {label}: {statistics.median(values):,.{digits}f} {unit} (median of {len(values)}: {rounds})")


def print_streams(rounds, sizes):
    print(f"(1) live streams: {POSTS} pins posted through the gateway over {WINDOW:.0f} s, then {WINDOW:.0f} s idle, "
          "with and without the streams")
    for n in sizes:
        at = [r for r in rounds if r["streams"] == n]
        figure(f"gateway CPU per stream per change, {n:,} streams", [r["us_per_stream_per_change"] for r in at], "µs", 3)
        figure("  of which in the kernel (system time)", [r["us_per_stream_per_change_system"] for r in at], "µs", 3)
        figure(f"gateway CPU per stream per second with no change, {n:,} streams",
               [r["us_per_stream_per_second_idle"] for r in at], "µs", 4)
        print(f"  gateway memory per stream, {n:,} streams, first round: {at[0]['kb_per_stream']:.1f} KB")
    for name in ["gateway", "service", "postgres"]:
        figure(f"CPU per POST at {POSTS / WINDOW:.1f}/s, {name}", [r[f"post_us_{name}"] for r in rounds], "µs", 0)
    figure("WAL per POST", [r["post_wal_bytes"] for r in rounds], "bytes", 0)


def print_log(logs):
    for logged in logs:
        events = logged["events"]
        print(f"(2) log of {events:,} events over {logged['pins_written']:,} pins ({logged['pin_versions']:,} pin "
              f"versions, {logged['pins']:,} pins now; written in {logged['generate_seconds']:.0f} s): bytes per event")
        for part, size in logged["bytes"].items():
            per = size / logged["pins"] if part.startswith("pins") else size / events
            print(f"  {part}: {size / 1048576:,.1f} MB, {per:,.1f} bytes per {'pin' if part.startswith('pins') else 'event'}")
        log_bytes = sum(size for part, size in logged["bytes"].items() if part.startswith("events"))
        versions = sum(size for part, size in logged["bytes"].items() if part.startswith("pin_versions"))
        print(f"  events, all: {log_bytes / events:,.1f}; pin_versions, all: {versions / events:,.1f}; "
              f"together: {(log_bytes + versions) / events:,.1f} bytes per event")


def print_replay(rounds, logs):
    print("(3) locations-service replay")
    for logged in logs:
        at = [r for r in rounds if r["events"] == logged["events"]]
        figure(f"{logged['events']:,} events: wall clock", [r["seconds"] for r in at], "s")
        figure(f"{logged['events']:,} events: events per second", [r["events_per_second"] for r in at], "", 0)
        figure(f"{logged['events']:,} events: replay's CPU per event",
               [r["replay_cpu_seconds"] / r["events"] * 1e6 for r in at], "µs")
        figure(f"{logged['events']:,} events: PostgreSQL's CPU per event",
               [r["postgres_cpu_seconds"] / r["events"] * 1e6 for r in at], "µs")
        figure(f"{logged['events']:,} events: peak memory", [r["peak_rss_kb"] / 1024 for r in at], "MB", 1)
    if len(logs) > 1:
        small, large = logs[0], logs[-1]

        def peak(logged):
            return statistics.median(r["peak_rss_kb"] for r in rounds if r["events"] == logged["events"])

        per_stream = (peak(large) - peak(small)) * 1024 / (large["pins_written"] - small["pins_written"])
        print(f"  peak memory per stream of the log (between the two sizes): {per_stream:,.0f} bytes")


def run(bench):
    sizes = [int(n) for n in setting("STREAMS", "5000 10000", str).split()]
    pins = sorted(int(n) for n in setting("SCALING_PINS", "250000 500000", str).split())
    ensure("postgresql", "gcc", "libc6-dev")
    raise_open_files("scaling", max(sizes))
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="scaling-build")
    stamp = {"date": utc_now(), "commit": commit("Services", "Shared", "Package.swift", "bench/scaling.py"),
             "load_before": load_average()}
    stack = Stack(bench, "scaling", binaries, NO_CAPS, pg_settings=())
    streams = measure_streams(bench, stack, sizes)
    logs = [write_log(bench, stack.postgres, binaries, count) for count in pins]
    replays = measure_replay(bench, stack.postgres, binaries, logs)
    stamp["load_after"] = load_average()
    (RESULTS_DIR / "scaling.json").write_text(json.dumps({**stamp, "streams": streams, "logs": logs,
                                                          "replays": replays}, indent=1) + "\n")
    print(f"scaling: run on {stamp['date']}, commit {stamp['commit']}, PostgreSQL {stack.postgres.version()}; "
          f"load average {stamp['load_before']} before and {stamp['load_after']} after")
    print_streams(streams, sizes)
    print_log(logs)
    print_replay(replays, logs)
