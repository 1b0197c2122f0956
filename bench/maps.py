"""Class maps at scale: many maps in one deployment, each held to a limit measured in the same run.
  1. hot read    GET /maps/{slug}/v1/StudentLocation of one public class map among MAPS (10,000 by default,
                 MAP_PINS pins each, 100 by default), at locations-service and through the gateway (wrk), against
                 the default map's hot read at the same door (goal: at least 0.9x) and against nginx serving the
                 class map's bytes as a static file;
  2. memory      the gateway's resident memory (VmRSS) while MEMORY_MAPS class maps (3,000 by default) are read
                 in turn, each map's list read and its live stream opened and closed: what it grows by per map
                 over the first 1,000 (goal: at most 40 KB), and that it stops growing past its bound (the
                 class maps' lists each service keeps, `MAP_CACHE_SIZE`), once with the default settings and
                 once with it at SMALL_MAP_BOUND (50 by default); then the lists
                 alone, with the default settings. How long each read and each opening took is recorded too: a
                 run stops once it has taken MEMORY_BUDGET seconds (300 by default);
  3. isolation   MAP_SUBSCRIBERS live streams (10,000 by default) on class map B and one on class map A, one pin
                 posted on A: the frames B's streams are sent but heartbeats (goal: none), then one pin posted on
                 B: how long until the last of B's streams had it (bench/map-isolation.c);
  4. replay      `locations-service replay` over MAP_REPLAY_PINS x 4 events (10,000,000 by default, the replay
                 benchmark's history, bench/generate-events.sql) spread over the class maps and the default map,
                 against one SQL statement per read model rebuilding the same ones (bench/maps-rebuild.sql;
                 goal: at most 1.1x), then `replay --verify` and a row-for-row comparison.
The maps and the pins of 1 to 3 are written in SQL straight into the log and the read models
(bench/maps-create.sql, bench/maps-pins.sql) and checked by `replay --verify`. Throughputs and replay are measured
in ROUNDS rounds next to their limits, the order flipped from one round to the next, and each ratio is the median
of the rounds' ratios. Every figure goes to bench/results/maps.env, the section to bench/results/maps.md, and a
summary is printed.

Settings, from the environment, besides LOAD_SECONDS, WARMUP_SECONDS and ROUNDS (see bench/run.py):
  MAPS             class maps (default 10000)
  MAP_PINS         pins on each, and on the default map (default 100)
  MEMORY_MAPS      maps read in turn for the memory figures (default 3000)
  SMALL_MAP_BOUND  MAP_CACHE_SIZE of the second memory run (default 50)
  MEMORY_BUDGET    seconds after which a memory run stops reading maps (default 300)
  MAP_SUBSCRIBERS  live streams on map B (default 10000)
  MAP_REPLAY_PINS  pins of the replay log, 4 events each (default 2500000)
A trial run:
  BENCH_BINARIES=.build-bench/release LOAD_SECONDS=3 WARMUP_SECONDS=1 ROUNDS=1 MAPS=200 MEMORY_MAPS=150 \\
    SMALL_MAP_BOUND=20 MEMORY_BUDGET=60 MAP_SUBSCRIBERS=100 MAP_REPLAY_PINS=25000 bench/run.py maps"""
import collections
import http.client
import json
import random
import socket
import statistics
import time

from bench.fanout import http_post
from bench.install import ensure
from bench.limits import LOAD_SECONDS, ROUNDS, SUMMARY_LUA, WARMUP_SECONDS, Benchmarks, ReplayLog, elapsed
from bench.processes import NO_CAPS, RESULTS_DIR, BenchError, Stack, log, post_json, raise_open_files, request, setting, \
    student_session
from bench.procfs import HZ, rss_kb
from bench.replay import figures
from bench.report import Results, load_average, meets, stamp

MAPS = setting("MAPS", 10_000)
MAP_PINS = setting("MAP_PINS", 100)
MEMORY_MAPS = setting("MEMORY_MAPS", 3000)
SMALL_BOUND = setting("SMALL_MAP_BOUND", 50)
SUBSCRIBERS = setting("MAP_SUBSCRIBERS", 10_000)
REPLAY_PINS = setting("MAP_REPLAY_PINS", 2_500_000)
MEMORY_BUDGET = setting("MEMORY_BUDGET", 300)  # s: a memory run stops reading maps past it

READ_GOAL = 0.9     # a class map's hot read over the default map's, at the same door
KB_PER_MAP_GOAL = 40  # the gateway's growth per class map read, over the first GROWTH_MAPS
GROWTH_MAPS = 1000
REPLAY_GOAL = 1.1   # replay over the SQL rebuild
QUIET_SECONDS = 3   # how long B's streams are watched after A's change reached A's stream
SAMPLE_EVERY = 100  # maps between two readings of memory
REQUEST_TIMEOUT = 15  # s: a list read or a stream's opening that takes longer is counted as failed
CONNECTIONS = 64    # wrk's, as the main hot read's

STREAM = "/v1/StudentLocation/events"
LIST = "/v1/StudentLocation"
RESULTS_FILE = RESULTS_DIR / "maps.env"
SECTION_FILE = RESULTS_DIR / "maps.md"


def slug(m):
    """The slug bench/maps-create.sql gives class map M."""
    return f"class-{m:05d}"


def map_path(name, path=LIST):
    return f"/maps/{name}{path}"


def write_read_log(bench, stack, results):
    """MAPS class maps and MAP_PINS pins on each and on the default map, written into the stack's database,
    settled, and checked by `replay --verify`."""
    pg = stack.postgres
    log(f"class maps: writing {MAPS:,} maps and {MAP_PINS * (MAPS + 1):,} pins (the default map's among them)")
    start = time.monotonic()
    bench.processes.run_or_fail(pg.psql_args("postgres", "-v", f"maps={MAPS}", "-f", "bench/maps-create.sql"), 3600,
                                RESULTS_DIR / "maps-create.log", "writing the maps failed")
    bench.processes.run_or_fail(pg.psql_args("postgres", "-v", f"per_map={MAP_PINS}", "-v", "block=100000",
                                             "-f", "bench/maps-pins.sql"), 7200,
                                RESULTS_DIR / "maps-pins.log", "writing the maps' pins failed")
    results.record("read_generate_seconds", elapsed(start))
    pg.psql("postgres", "-c", "VACUUM (ANALYZE)", "-c", "CHECKPOINT")
    results.record("read_events", pg.events_in("postgres"))
    results.record("read_maps", pg.value("postgres", "SELECT count(*) FROM locations.maps"))
    results.record("read_pins", pg.value("postgres", "SELECT count(*) FROM locations.pins"))
    log("class maps: replay --verify over the written log")
    verify_log = RESULTS_DIR / "maps-read-verify.log"
    start = time.monotonic()
    bench.processes.run_or_fail([stack.binaries / "locations-service", "replay", "--verify"], 3600, verify_log,
                                "replay --verify found differences in the written log", stack.env)
    if "matches the live one" not in verify_log.read_text(errors="replace"):
        raise BenchError("replay --verify did not confirm that the written log matches its read models")
    results.record("read_verify", "match")
    results.record("read_verify_seconds", elapsed(start))


def fetch(url, headers=None, what="a read"):
    status, body = request(url, headers=headers or {})
    if status != 200:
        raise BenchError(f"{what} answered {status}: {body[:200]!r}")
    return body


def hot_read(bench, stack, benchmarks, gateway):
    """1. A class map's hot read against the default map's, at the service and through the gateway, and
    against nginx serving the class map's bytes."""
    service, results = stack.service, benchmarks.results
    name = slug(MAPS // 2)
    auth = {"Authorization": f"Bearer {bench.token}"}
    wrk_auth = ["-H", f"Authorization: Bearer {bench.token}"]
    bodies = bench.scratch("maps-bodies")
    urls = {
        "service_default": service.url(LIST), "service_map": service.url(map_path(name)),
        "gw_default": gateway.url(LIST), "gw_map": gateway.url(map_path(name)),
    }
    answers = {}
    for key, url in urls.items():
        for _ in range(3):  # the first fills the caches
            answers[key] = fetch(url, auth if key.startswith("service") else {}, f"the read {key}")
        pins = json.loads(answers[key])["results"]
        if len(pins) != MAP_PINS:
            raise BenchError(f"the read {key} returned {len(pins)} pins, not {MAP_PINS}")
        results.record(f"read_{key}_bytes", len(answers[key]))
    if answers["gw_map"] != answers["service_map"]:
        raise BenchError("the gateway does not answer a class map's list with the service's bytes")
    (bodies / "map.json").write_bytes(answers["gw_map"])
    nginx = bench.start_nginx(bodies / "map.json", "maps")
    results.record("read_map", name)

    runs = {
        "nginx": (nginx.url(), [], [("nginx", nginx.pid)]),
        "service_default": (urls["service_default"], wrk_auth, [("service", service.pid)]),
        "service_map": (urls["service_map"], wrk_auth, [("service", service.pid)]),
        "gw_default": (urls["gw_default"], [], [("gateway", gateway.pid), ("service", service.pid)]),
        "gw_map": (urls["gw_map"], [], [("gateway", gateway.pid), ("service", service.pid)]),
    }
    log(f"class maps: hot read of {name}: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: "
        + ", ".join(runs))
    for key, (url, args, _) in runs.items():
        benchmarks.run_wrk(f"maps-read-{key}-warmup", CONNECTIONS, WARMUP_SECONDS, url, args)

    def measured(key):
        url, args, watched = runs[key]

        def one_round(k):
            benchmarks.measure_wrk(f"maps-read-{key}-{k}", f"read_{key}_{k}", CONNECTIONS, url,
                                   [*args, "-s", SUMMARY_LUA], watched)
            service.expect_alive("the hot read")
            gateway.expect_alive("the hot read")
            errors = int(results.values[f"read_{key}_{k}_status_errors"]) + int(results.values[f"read_{key}_{k}_socket_errors"])
            if errors:
                raise BenchError(f"the hot read {key} had {errors} errors in round {k}")
        return one_round

    benchmarks.alternate("class maps: hot read", {key: measured(key) for key in runs})
    bench.processes.stop(nginx.proc)


def start_pair(stack, name, settings):
    """A locations-service and a gateway in front of it, both new, with SETTINGS added to both."""
    service = stack.start("locations-service", "serve", log_name=f"maps-{name}-service.log", env=settings)
    gateway = stack.start("auth-gateway", "serve", log_name=f"maps-{name}-gateway.log",
                          env={"LOCATIONS_URL": service.base, **settings})
    return service, gateway


def open_stream(port, path, timeout):
    """Opens a live stream, reads until its opening frame has come, and closes it: 200 once it opened, the
    status it was refused with, or None when it neither opened nor was refused within TIMEOUT seconds."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        received = b""
        try:
            while b": connected\n" not in received:
                if received.startswith(b"HTTP/1.1 ") and not received.startswith(b"HTTP/1.1 200") and b"\r\n" in received:
                    return int(received[9:12])
                data = sock.recv(65536)
                if not data:
                    break
                received += data
        except (socket.timeout, TimeoutError):
            return None
        if not received.startswith(b"HTTP/1.1 200") or b": connected\n" not in received:
            raise BenchError(f"the live stream {path} ended before it opened: {received[:200]!r}")
        return 200


class ListReader:
    """GETs of lists on one kept-alive connection to a server."""

    def __init__(self, port, timeout):
        self.port, self.timeout = port, timeout
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def read(self, path):
        """The status PATH answered with, None when it did not answer within the timeout (the connection is
        then replaced)."""
        try:
            self.connection.request("GET", path)
            answer = self.connection.getresponse()
            answer.read()
        except (socket.timeout, TimeoutError):
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            return None
        return answer.status

    def close(self):
        self.connection.close()


def memory_run(stack, results, name, settings, streams=True):
    """2. A new service and gateway (with SETTINGS); MEMORY_MAPS class maps read in turn, each map's list and
    (with STREAMS) its live stream; both servers' VmRSS, and how long the reads and openings took, every
    SAMPLE_EVERY maps, recorded as mem_NAME_*. A read or an opening that takes more than REQUEST_TIMEOUT s
    is counted as failed; past MEMORY_BUDGET s the run stops where it is."""
    service, gateway = start_pair(stack, name, settings)
    reader = ListReader(gateway.port, REQUEST_TIMEOUT)
    # What every map shares is set up before the first reading: the default map's list and stream, and a map
    # that is not among those read in turn.
    for path, stream in [(LIST, STREAM), (map_path(slug(MAPS - 1)), map_path(slug(MAPS - 1), STREAM))]:
        if reader.read(path) != 200 or (streams and open_stream(gateway.port, stream, REQUEST_TIMEOUT) != 200):
            raise BenchError(f"{path} was not answered in {REQUEST_TIMEOUT} s on a new gateway")
    time.sleep(2)
    samples = [(0, rss_kb(gateway.pid), rss_kb(service.pid), 0.0)]
    log(f"class maps: memory ({name}: {settings or 'default settings'}): {MEMORY_MAPS:,} maps read in turn"
        f"{', each list and live stream' if streams else ', their lists only'}")
    start = time.monotonic()
    step_lists, step_streams, failed = [], [], collections.Counter()
    for m in range(MEMORY_MAPS):
        before = time.monotonic()
        status = reader.read(map_path(slug(m)))
        if status != 200:
            failed[f"list {status or 'no answer'}"] += 1
        opened = time.monotonic()
        status = open_stream(gateway.port, map_path(slug(m), STREAM), REQUEST_TIMEOUT) if streams else 200
        if status != 200:
            failed[f"stream {status or 'no answer'}"] += 1
        step_lists.append(opened - before)
        step_streams.append(time.monotonic() - opened)
        over_budget = time.monotonic() - start > MEMORY_BUDGET
        if (m + 1) % SAMPLE_EVERY == 0 or m + 1 in (GROWTH_MAPS, MEMORY_MAPS, settings_bound(settings)) or over_budget:
            samples.append((m + 1, rss_kb(gateway.pid), rss_kb(service.pid), time.monotonic() - start))
            results.record(f"mem_{name}_{m + 1}_list_ms_median", f"{statistics.median(step_lists) * 1000:.1f}")
            results.record(f"mem_{name}_{m + 1}_list_ms_max", f"{max(step_lists) * 1000:.1f}")
            results.record(f"mem_{name}_{m + 1}_stream_ms_median", f"{statistics.median(step_streams) * 1000:.1f}")
            results.record(f"mem_{name}_{m + 1}_stream_ms_max", f"{max(step_streams) * 1000:.1f}")
            results.record(f"mem_{name}_{m + 1}_failed", sum(failed.values()))
            step_lists, step_streams = [], []
        if over_budget:
            log(f"class maps: memory ({name}): stopped after {m + 1:,} maps, past {MEMORY_BUDGET} s")
            break
    reader.close()
    gateway.expect_alive("the maps read in turn")
    service.expect_alive("the maps read in turn")
    results.record(f"mem_{name}_maps_read", samples[-1][0])
    results.record(f"mem_{name}_failed", ", ".join(f"{count} {what}" for what, count in sorted(failed.items())) or "none")
    # Once the last streams have gone and the feeds have had a long poll's time to end.
    time.sleep(7)
    results.record(f"mem_{name}_gw_settled_kb", rss_kb(gateway.pid))
    results.record(f"mem_{name}_service_settled_kb", rss_kb(service.pid))
    results.record(f"mem_{name}_seconds", f"{time.monotonic() - start:.1f}")
    for maps, gw, svc, seconds in samples:
        results.record(f"mem_{name}_{maps}_gw_kb", gw)
        results.record(f"mem_{name}_{maps}_service_kb", svc)
        results.record(f"mem_{name}_{maps}_seconds", f"{seconds:.1f}")
    results.record(f"mem_{name}_settings", " ".join(f"{k}={v}" for k, v in settings.items()) or "default")
    feeds_lost = sum("feed lost locations-service" in line for line in gateway.log_path.read_text(errors="replace").splitlines())
    results.record(f"mem_{name}_feed_losses", feeds_lost)
    stack.bench.processes.stop(gateway.proc)
    stack.bench.processes.stop(service.proc)
    return samples


def isolation(bench, stack, results, gateway, client):
    """3. MAP_SUBSCRIBERS streams on map B, one on map A; a pin posted on A, then one on B; ROUNDS times."""
    session = student_session(gateway, "isolation@example.com", "isolation password 1", "Iso", "Lation")
    bearer = {"Authorization": f"Bearer {session}"}
    for name in ["iso-a", "iso-b"]:
        status, body = post_json(gateway.url("/v1/maps"), {"slug": name, "name": name.upper(), "read": "public",
                                                             "post": "members"}, bearer)
        if status not in (201, 409):
            raise BenchError(f"creating the map {name} answered {status}: {body[:200]!r}")
    work = bench.scratch("maps-isolation")
    runs = []
    for k in range(1, ROUNDS + 1):
        markers = {name: f"isolation-{name}-{k}-{random.randrange(10**9)}" for name in ["iso-a", "iso-b"]}
        for name, marker in markers.items():
            body = (f'{{"mapString":"{marker}","mediaURL":"https://example.com/isolation","latitude":48.8566,'
                    f'"longitude":2.3522}}')
            (work / name).write_bytes(http_post(map_path(name), body, f"Authorization: Bearer {session}\r\n"))
        line = json.loads(bench.processes.output(
            [client, gateway.port, map_path("iso-b", STREAM), SUBSCRIBERS, map_path("iso-a", STREAM), QUIET_SECONDS,
             work / "iso-a", markers["iso-a"], work / "iso-b", markers["iso-b"], gateway.pid], 900))
        gateway.expect_alive("the isolation round")
        if line["a_status"] != 200 or line["b_status"] != 200:
            raise BenchError(f"a post of the isolation round was refused: {line}")
        if line["a_reached_ms"] < 0:
            raise BenchError(f"the post on map A never reached map A's stream: {line}")
        runs.append(line)
        for key, value in line.items():
            results.record(f"iso_{k}_{key}", value)
        log(f"class maps: isolation round {k} of {ROUNDS}: {json.dumps(line)}")
        time.sleep(5)  # the streams' departure settled before the next round opens as many
    return runs


class MapsReplayLog(ReplayLog):
    """The replay benchmark's log (bench/generate-events.sql) spread over MAPS class maps and the default map,
    replayed by the service and rebuilt in SQL (bench/maps-rebuild.sql) round by round."""

    def __init__(self, benchmarks, database, pins, key):
        super().__init__(benchmarks, database, pins, key)
        self.pg = SpreadLog(benchmarks.pg, self.processes)

    def by_sql(self, k):
        prefix = f"sql_{k}"
        self.pg.psql(self.database, "-c", "DROP TABLE IF EXISTS bench.sql_pins, bench.sql_maps, bench.sql_map_members",
                     "-c", "CHECKPOINT")
        with self.benchmarks.cpu_measured(f"{self.key}_{prefix}"):
            start = time.monotonic()
            self.pg.psql(self.database, "-f", "bench/maps-rebuild.sql")
            without_indexes = elapsed(start)
            self.pg.psql(self.database, "-f", "bench/maps-rebuild-indexes.sql")
            with_indexes = elapsed(start)
        self.record(f"{prefix}_noindex_seconds", without_indexes)
        self.record(f"{prefix}_seconds", with_indexes)
        self.pg.psql(self.database, "-c", "CHECKPOINT")

    def verify(self):
        """`replay --verify` must find no difference, and the swapped-in read models must equal the SQL
        rebuild's row for row."""
        log(f"class maps: replay of {self.pins * 4:,} events: verify")
        start = time.monotonic()
        verify_log = RESULTS_DIR / f"{self.key}-verify.log"
        self.processes.run_or_fail([self.service_bin, "replay", "--verify"], 3600, verify_log,
                                   "replay --verify found differences", self.env)
        self.record("verify_seconds", elapsed(start))
        if "matches the live one" not in verify_log.read_text(errors="replace"):
            raise BenchError("replay --verify did not confirm a match")
        self.record("verify", "match")
        live, sql, differing, maps_with_pins = self.pg.psql(self.database, "-tA", "-f", "bench/maps-compare.sql").strip().split("|")
        self.record("live_pins", live)
        self.record("sql_pins", sql)
        self.record("differing_rows", differing)
        self.record("maps_with_pins", maps_with_pins)
        self.record("maps", self.pg.value(self.database, "SELECT count(*) FROM locations.maps"))
        if differing != "0" or live != sql:
            raise BenchError(f"replay and the SQL rebuild disagree ({live} vs {sql} pins, {differing} rows differ)")


class SpreadLog:
    """The replay log's cluster (a processes.PostgreSQL), whose `write_events` first creates the class maps and
    then writes bench/generate-events.sql's history with each pin on one of them (bench/maps-spread.sql)."""

    def __init__(self, pg, processes):
        self.cluster, self.processes = pg, processes

    def __getattr__(self, name):
        return getattr(self.cluster, name)

    def write_events(self, database, pins, output):
        self.processes.run_or_fail(self.cluster.psql_args(database, "-v", f"maps={MAPS}", "-f", "bench/maps-create.sql",
                                                          "-f", "bench/maps-spread.sql"), 3600, output,
                                   "creating the maps of the replay log failed")
        self.cluster.write_events(database, pins, output)
        self.cluster.psql(database, "-c", "DROP TRIGGER events_spread_over_maps ON locations.events")


def median(values):
    return statistics.median(values) if values else float("nan")


def ratio_text(values):
    return f"**{median(values):.2f}×** ({', '.join(f'{v:.2f}' for v in values)})"


def section(results, memory, isolation_runs, replayed):
    v = results.values
    rounds = range(1, ROUNDS + 1)

    def rps(key, k):
        return float(v[f"read_{key}_{k}_rps"])

    def cores(key, process, k):
        return float(v.get(f"read_{key}_{k}_cpu_{process}", "nan"))

    read_ratios = {
        "gw_map/gw_default": [rps("gw_map", k) / rps("gw_default", k) for k in rounds],
        "service_map/service_default": [rps("service_map", k) / rps("service_default", k) for k in rounds],
        "gw_map/nginx": [rps("gw_map", k) / rps("nginx", k) for k in rounds],
        "service_map/nginx": [rps("service_map", k) / rps("nginx", k) for k in rounds],
        "gw_default/nginx": [rps("gw_default", k) / rps("nginx", k) for k in rounds],
    }
    for name, values in read_ratios.items():
        results.record(f"ratio_{name.replace('/', '_over_')}", f"{median(values):.3f}")
    gw_read = median(read_ratios["gw_map/gw_default"])
    svc_read = median(read_ratios["service_map/service_default"])

    def us_per_request(key, process):
        return median([cores(key, process, k) / rps(key, k) * 1e6 for k in rounds])

    lines = [
        "## Class maps at scale",
        "",
        f"`bench/run.py maps`: {int(v['read_maps']):,} class maps with {MAP_PINS} pins each and {MAP_PINS} on the "
        f"default map ({int(v['read_events']):,} events, {int(v['read_pins']):,} pins, written in SQL straight into "
        f"the log and the read models in {float(v['read_generate_seconds']):.0f} s by bench/maps-create.sql and "
        "bench/maps-pins.sql; `replay --verify` finds them matching). Release build on loopback, "
        f"{ROUNDS} rounds of {LOAD_SECONDS} s alternated, wrk -t2 -c{CONNECTIONS}; "
        f"{stamp('Services', 'Shared', 'Package.swift', 'bench/maps.py')} (load average {load_average()} at the end).",
        "",
        f"### Hot read of one public class map ({v['read_map']}, {int(v['read_gw_map_bytes']):,} bytes; the default "
        f"map's {int(v['read_gw_default_bytes']):,})",
        "",
        "| door | default map req/s (median) | class map req/s (median) | class / default (median of rounds) | "
        "class map / nginx | CPU per request, default map (gateway; service) | CPU per request, class map (gateway; service) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| locations-service | {median([rps('service_default', k) for k in rounds]):,.0f} | "
        f"{median([rps('service_map', k) for k in rounds]):,.0f} | {ratio_text(read_ratios['service_map/service_default'])} | "
        f"{median(read_ratios['service_map/nginx']):.2f}× | -; {us_per_request('service_default', 'service'):.0f} µs | "
        f"-; {us_per_request('service_map', 'service'):.0f} µs |",
        f"| gateway | {median([rps('gw_default', k) for k in rounds]):,.0f} | "
        f"{median([rps('gw_map', k) for k in rounds]):,.0f} | {ratio_text(read_ratios['gw_map/gw_default'])} | "
        f"{median(read_ratios['gw_map/nginx']):.2f}× | {us_per_request('gw_default', 'gateway'):.0f} µs; "
        f"{us_per_request('gw_default', 'service'):.0f} µs | {us_per_request('gw_map', 'gateway'):.0f} µs; "
        f"{us_per_request('gw_map', 'service'):.0f} µs |",
        f"| nginx, the class map's bytes | | {median([rps('nginx', k) for k in rounds]):,.0f} | | 1.00× | | "
        f"{us_per_request('nginx', 'nginx'):.0f} µs |",
        "",
        "CPU per request: the process's cores busy during the load over its requests per second (the service's during "
        "the gateway's loads: what each request through the gateway costs it; 0 when the gateway answers alone).",
        "",
        f"- Goal: a class map's hot read at least {READ_GOAL}× the default map's through the gateway: "
        f"**{gw_read:.2f}×**, {meets(gw_read >= READ_GOAL)}"
        + ("" if gw_read >= READ_GOAL else f" by {(READ_GOAL - gw_read) / READ_GOAL * 100:.0f}%") + "; at the service: "
        f"**{svc_read:.2f}×**, {meets(svc_read >= READ_GOAL)}"
        + ("" if svc_read >= READ_GOAL else f" by {(READ_GOAL - svc_read) / READ_GOAL * 100:.0f}%") + ".",
        "",
    ]

    lines += [
        "### The gateway's memory with class maps read in turn",
        "",
        f"{MEMORY_MAPS:,} class maps in turn through the gateway, each map's list read and its live stream opened until "
        "`: connected` and closed (`lists`: the lists alone); a new service and gateway for each run, VmRSS from /proc. "
        f"A read or an opening not answered in {REQUEST_TIMEOUT} s counts as failed; a run stops past {MEMORY_BUDGET} s.",
        "",
        "| run (settings) | maps read | gateway RSS | service RSS | seconds so far | list read: median / max | "
        "stream opening: median / max | failed so far |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = {}
    for name, (settings, samples) in memory.items():
        read = samples[-1][0]
        bound = settings_bound(settings)
        shown = {0, SAMPLE_EVERY, bound, GROWTH_MAPS, 2 * GROWTH_MAPS, read}
        label = f"{name} ({' '.join(f'{k}={x}' for k, x in settings.items()) or 'default'})"
        for maps, gw, svc, seconds in samples:
            if maps in shown:
                timing = ("| | | |" if maps == 0 else
                          f"| {v[f'mem_{name}_{maps}_list_ms_median']} / {v[f'mem_{name}_{maps}_list_ms_max']} ms | "
                          f"{v[f'mem_{name}_{maps}_stream_ms_median']} / {v[f'mem_{name}_{maps}_stream_ms_max']} ms | "
                          f"{v[f'mem_{name}_{maps}_failed']} |")
                lines.append(f"| {label} | {maps:,} | {gw / 1024:.1f} MB | {svc / 1024:.1f} MB | {seconds:.1f} {timing}")
        by_maps = {maps: (gw, svc) for maps, gw, svc, _ in samples}
        # The goal's figure: the growth over the first GROWTH_MAPS maps (or as many as were read), per map; and
        # what filling the bound cost per map, and what came after it.
        goal_first = max(m for m in by_maps if m <= GROWTH_MAPS)
        first = max(m for m in by_maps if m <= min(bound, GROWTH_MAPS))
        growth = (by_maps[goal_first][0] - by_maps[0][0]) / max(goal_first, 1)
        service_growth = (by_maps[goal_first][1] - by_maps[0][1]) / max(goal_first, 1)
        filling = (by_maps[first][0] - by_maps[0][0]) / max(first, 1)
        service_filling = (by_maps[first][1] - by_maps[0][1]) / max(first, 1)
        later = (by_maps[read][0] - by_maps[first][0]) / max(read - first, 1)
        service_later = (by_maps[read][1] - by_maps[first][1]) / max(read - first, 1)
        for key, value in [("gw_kb_per_map_first", growth), ("gw_kb_per_map_after", later), ("gw_kb_per_map_filling", filling),
                           ("service_kb_per_map_first", service_growth), ("service_kb_per_map_after", service_later)]:
            results.record(f"mem_{name}_{key}", f"{value:.2f}")
        verdicts[name] = (growth, later, first, read, goal_first)
        if first != goal_first:
            lines.append(f"| {label}: per map, maps 1 to {first:,} (filling the bound) | | {filling:.1f} KB | "
                         f"{service_filling:.1f} KB | | | | |")
        lines.append(f"| {label}: per map, maps 1 to {goal_first:,} | | **{growth:.1f} KB** | {service_growth:.1f} KB | | | | |")
        if read > first:
            lines.append(f"| {label}: per map, maps {first:,} to {read:,} | | **{later:.1f} KB** | {service_later:.1f} KB | | | | |")
        lines.append(f"| {label}: failed | {v[f'mem_{name}_failed']} | "
                     f"{int(v[f'mem_{name}_feed_losses'])} feed losses logged | | | | | |")
    lines.append("")
    growth, _, _, _, first = verdicts["default"]
    lines += [
        f"- Goal: the gateway grows by at most {KB_PER_MAP_GOAL} KB per class map read: **{growth:.1f} KB** over the first "
        f"{first:,} (default settings), {meets(growth <= KB_PER_MAP_GOAL)}"
        + ("" if growth <= KB_PER_MAP_GOAL else f" by {(growth - KB_PER_MAP_GOAL) / KB_PER_MAP_GOAL * 100:.0f}%") + ".",
        "- Bounded: past the first maps the gateway grows by "
        + "; ".join(f"{later:.1f} KB per map in the {name} run (maps {first:,} to {read:,})"
                    for name, (_, later, first, read, _) in verdicts.items() if read > first) + ".",
        "",
    ]

    lost = [r["b_data_during_a"] for r in isolation_runs]
    last = [r["last_ms"] for r in isolation_runs]
    lines += [
        "### One change on map A, seen by the subscribers of map B",
        "",
        f"{SUBSCRIBERS:,} live streams on `/maps/iso-b{STREAM}` and one on map A, through the gateway (10,000 streams from "
        "each of 127.0.0.1, 127.0.0.2, ...; `MAX_STREAMS_PER_CLIENT` raised); one pin posted on A, and B's streams "
        f"watched until {QUIET_SECONDS} s after A's stream had it; then one pin posted on B (bench/map-isolation.c).",
        "",
        "| round | A's pin on A's stream | frames but heartbeats on B's streams meanwhile (streams sent any) | heartbeats; "
        "bytes | gateway CPU meanwhile | B's pin: last / median / first stream | B's frames after it | "
        "gateway memory per stream |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, r in enumerate(isolation_runs, 1):
        lines.append(
            f"| {k} | {r['a_reached_ms']:.0f} ms | **{r['b_data_during_a']}** ({r['b_streams_sent_data_during_a']}) | "
            f"{r['b_heartbeats_during_a']}; {r['b_bytes_during_a']:,} | {r['cpu_ticks_during_a'] * 1000 // HZ} ms in "
            f"{r['window_s']:.1f} s | {r['last_ms']:.0f} / {r['p50_ms']:.0f} / {r['first_ms']:.1f} ms "
            f"({r['received']:,} of {r['streams']:,}) | {r['b_data_after_b']:,} | "
            f"{(r['rss_open_kb'] - r['rss_before_kb']) / r['streams']:.1f} KB |")
    results.record("iso_b_frames_during_a_max", max(lost))
    results.record("iso_last_ms_median", f"{median(last):.1f}")
    lines += [
        "",
        f"- Goal: nothing but heartbeats reaches B's subscribers when A changes: at most **{max(lost)}** frames in a round, "
        f"{meets(max(lost) == 0)}. B's change reached the last of its {SUBSCRIBERS:,} streams in **{median(last):.0f} ms** "
        "(median of rounds), from the POST's sending.",
        "",
    ]

    rows = figures(replayed)
    ratio = median([r[2] for r in rows])
    results.record("replay_ratio", f"{ratio:.3f}")
    lines += [
        "### Replay over many maps",
        "",
        f"`locations-service replay` over {int(v['maps_replay_events']):,} events ({REPLAY_PINS:,} pins' history as "
        f"bench/generate-events.sql writes it, spread over {int(v['maps_replay_maps']):,} class maps and the default map "
        f"by bench/maps-spread.sql, with the maps' MapCreated events; written in "
        f"{float(v['maps_replay_generate_seconds']):.0f} s) against one SQL statement per read model rebuilding the "
        "same pins, maps and owners with their indexes (bench/maps-rebuild.sql, bench/maps-rebuild-indexes.sql); the "
        "default durability; replay's wall clock includes its start-up, its catch-up, the maps' fold and the swap. The "
        f"read models replay swapped in equal the SQL rebuild row for row ({int(v['maps_replay_live_pins']):,} pins on "
        f"{int(v['maps_replay_maps_with_pins']):,} class maps and the default map) and `replay --verify` finds them clean.",
        "",
        "| round | replay | SQL rebuild | ratio | replay's peak memory |",
        "| --- | --- | --- | --- | --- |",
    ]
    for k, (service_s, sql_s, r, peak) in enumerate(rows, 1):
        lines.append(f"| {k} | {service_s:.2f} s | {sql_s:.2f} s | {r:.2f}× | {peak:.1f} MB |")
    lines += [
        "",
        f"- Goal: replay at most {REPLAY_GOAL}× the SQL rebuild: **{ratio:.2f}×** (median of rounds), "
        f"{meets(ratio <= REPLAY_GOAL)}" + ("" if ratio <= REPLAY_GOAL else f" by {(ratio - REPLAY_GOAL) / REPLAY_GOAL * 100:.0f}%") + ".",
        "",
    ]
    summary = [
        f"class map hot read / default map's: gateway {gw_read:.2f}x, service {svc_read:.2f}x (goal >= {READ_GOAL}x: "
        f"{meets(gw_read >= READ_GOAL)}, {meets(svc_read >= READ_GOAL)}); "
        f"class map / nginx: gateway {median(read_ratios['gw_map/nginx']):.2f}x, service {median(read_ratios['service_map/nginx']):.2f}x",
        f"gateway memory per class map: {growth:.1f} KB over the first {first:,} (goal <= {KB_PER_MAP_GOAL} KB: "
        f"{meets(growth <= KB_PER_MAP_GOAL)}); after: "
        + ", ".join(f"{name} {later:.1f} KB/map from {first:,} to {read:,} maps"
                    for name, (_, later, first, read, _) in verdicts.items() if read > first),
        f"frames on B's {SUBSCRIBERS:,} streams when A changes: {max(lost)} (goal 0: {meets(max(lost) == 0)}); "
        f"B's change to its last stream: {median(last):.0f} ms",
        f"replay over {int(v['maps_replay_events']):,} events: {ratio:.2f}x the SQL rebuild (goal <= {REPLAY_GOAL}x: {meets(ratio <= REPLAY_GOAL)})",
    ]
    return lines, summary


DEFAULT_MAP_CACHE_SIZE = 256  # MapSlug.defaultCacheSize


def settings_bound(settings):
    return int(settings.get("MAP_CACHE_SIZE", DEFAULT_MAP_CACHE_SIZE))


def run(bench):
    if MEMORY_MAPS >= MAPS:
        raise BenchError(f"MEMORY_MAPS ({MEMORY_MAPS}) must be fewer than MAPS ({MAPS}): one more map is read first")
    ensure("wrk", "nginx", "postgresql", "gcc", "libc6-dev")
    raise_open_files("maps", SUBSCRIBERS)
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="maps-build")
    results = Results(RESULTS_FILE)
    work = bench.scratch("maps")
    client = work / "map-isolation"
    bench.processes.run_or_fail(["gcc", "-O2", "-Wall", "-o", client, "bench/map-isolation.c"], 120,
                                RESULTS_DIR / "maps-gcc.log", "compiling bench/map-isolation.c failed")
    started = time.monotonic()
    results.record("load_before", load_average())

    # 1 to 3 on one private PostgreSQL (fsync off: nothing measured there writes but the two isolation posts).
    stack = Stack(bench, "maps", binaries, NO_CAPS)
    benchmarks = Benchmarks(bench, results, stack.postgres, binaries)
    write_read_log(bench, stack, results)
    gateway = stack.gateway(log_name="maps-gateway.log")
    hot_read(bench, stack, benchmarks, gateway)
    isolation_runs = isolation(bench, stack, results, gateway, client)
    bench.processes.stop(gateway.proc)
    bench.processes.stop(stack.service.proc)
    memory = {}
    for name, settings, streams in [
            ("default", {}, True),
            ("small", {"MAP_CACHE_SIZE": str(SMALL_BOUND)}, True),
            ("lists", {}, False)]:
        memory[name] = (settings, memory_run(stack, results, name, settings, streams))
    bench.processes.stop_all()
    bench.stop_postgres(stack.postgres)

    # 4 on a cluster of its own, with the default durability, as the replay benchmark's.
    pg = bench.postgres()
    replayed = MapsReplayLog(Benchmarks(bench, results, pg, binaries), "bench_maps_replay", REPLAY_PINS, "maps_replay")
    replayed.write()
    replayed.rounds()
    replayed.verify()
    results.record("total_seconds", int(time.monotonic() - started))

    lines, summary = section(results, memory, isolation_runs, replayed)
    SECTION_FILE.write_text("\n".join(lines))
    log(f"class maps: figures in {RESULTS_FILE.relative_to(RESULTS_DIR.parent.parent)}, the section in "
        f"{SECTION_FILE.relative_to(RESULTS_DIR.parent.parent)}")
    print("\n".join(summary))
