"""The benchmarks of locations-service held to limits measured in the same run, on one private PostgreSQL
with the default durability (see bench/run.py for what each is measured against), and the passes that
follow them (micro-measurements, fuzzing, the command line). Every figure is recorded into results.env."""
import contextlib
import json
import platform
import re
import signal
import time
from pathlib import Path

from bench import cli
from bench.install import ensure
from bench.processes import FLOOR_MODES, RESULTS_DIR, ROOT, BenchError, actor_header, log, output_of, request, setting, \
    show_tail, student_session, wrk_summary
from bench.procfs import CPUS, HZ, Sampler, cpu_used, rss_kb
from bench.report import Results, commit, load_average, utc_now, write_report, write_sections

RESULTS_FILE = RESULTS_DIR / "results.env"
SUMMARY_LUA = "bench/summary.lua"  # commands run from the project's root
LOAD_SECONDS = setting("LOAD_SECONDS", 10)     # each measured load (wrk, pgbench)
WARMUP_SECONDS = setting("WARMUP_SECONDS", 3)  # unmeasured load first: connections open, caches and pools warm
ROUNDS = setting("ROUNDS", 5)                  # each throughput and its limit are measured this many times, alternately
REPLAY_PINS = setting("REPLAY_PINS", 250000)   # the replay log holds 4 events per pin
READ_PINS = 100                                # the hot read returns the newest 100, so 100 pins fill it


def elapsed(start):
    return f"{time.monotonic() - start:.2f}"


FIRST_NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken"]  # of the bench's accounts


def in_order(round_number, runs):
    """The runs in that order in odd rounds and reversed in even ones."""
    return runs if round_number % 2 else runs[::-1]


def seed_read_pins(service, token):
    """READ_PINS pins posted to locations-service as the gateway posts them: different accounts, realistic
    place names and links (~320 bytes each)."""
    places = ["Mountain View, California, United States", "Berlin, Brandenburg, Germany",
              "Lagos, Lagos State, Nigeria", "Kyoto, Kyoto Prefecture, Japan", "Sao Paulo, Sao Paulo, Brazil"]
    lasts = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth"]
    for i in range(1, READ_PINS + 1):
        actor = actor_header(3903878700 + i, FIRST_NAMES[i % 8], lasts[i % 6])
        # Written out rather than by json.dumps: the coordinates' digits are part of the bytes served.
        body = (f'{{"mapString":"{places[i % 5]}","mediaURL":"https://www.udacity.com/course/'
                f'ios-developer-nanodegree--nd003?student={i}","latitude":{i % 80}.{100000 + i * 7919 % 900000},'
                f'"longitude":-{i % 170}.{100000 + i * 104729 % 900000}}}')
        status, _ = request(service.url(), "POST", {"Authorization": f"Bearer {token}", "X-Actor": actor,
                                                "Content-Type": "application/json"}, body.encode())
        if status is None or status >= 400:
            raise BenchError(f"seeding pin {i} was refused")


class Benchmarks:
    """The three benchmarks of locations-service, each with the gateway in front of it where it has one,
    on one private PostgreSQL; they record what they measure into `results`."""

    def __init__(self, bench, results, postgres, binaries):
        self.bench = bench
        self.processes = bench.processes
        self.results = results
        self.pg = postgres
        self.service_bin = binaries / "locations-service"
        self.gateway_bin = binaries / "auth-gateway"
        self.binaries = binaries
        self.token = bench.token

    def record(self, key, value):
        self.results.record(key, value)

    def start(self, database, log_name, idle_key, service=None):
        """`locations-service serve` on a new DATABASE, or auth-gateway in front of SERVICE with its accounts and
        sessions there; returned once it is ready, and its VmRSS 2 s later recorded as IDLE_KEY."""
        self.pg.create_database(database)
        # Posts as fast as wrk can, all as one student: the cap on a student's pins is raised so that it takes
        # none off (it is still checked on every post).
        env = {"DATABASE_URL": self.pg.url(database)}
        if service is None:
            env["PINS_PER_STUDENT"] = str(10**6)
            server = self.bench.start_server("locations-service", [self.service_bin, "serve"], log_name, env, tries=100)
        else:
            # One session posts as fast as wrk can: the write limit is raised so that every post is let
            # through, and still counted (its cost is part of what is measured).
            env.update(LOCATIONS_URL=service.base, LOG_LEVEL="warning", WRITE_BURST=str(10**6))
            server = self.bench.start_server("auth-gateway", [self.gateway_bin, "serve", "--host", "127.0.0.1"],
                                             log_name, env)
        time.sleep(2)
        self.record(idle_key, rss_kb(server.pid))
        return server

    def record_memory(self, key, prefix, server):
        """The highest VmRSS of SERVER in the rounds of run PREFIX, and now: rss_KEY_peak_kb and rss_KEY_end_kb."""
        self.results.record_max(f"rss_{key}_peak_kb", rf"{prefix}_[0-9]*_rss_peak_kb")
        self.record(f"rss_{key}_end_kb", rss_kb(server.pid))

    @contextlib.contextmanager
    def cpu_measured(self, prefix, watched=()):
        """Who used the cores during the block (procfs.cpu_used), recorded as PREFIX_cpu_*."""
        with cpu_used(self.pg.postmaster_pid(), watched) as figures:
            yield
        for name, cores in figures.items():
            self.record(f"{prefix}_cpu_{name}", cores)

    def run_wrk(self, name, connections, seconds, url, args=()):
        """One bounded wrk run; output in bench/results/NAME.txt."""
        output = RESULTS_DIR / f"{name}.txt"
        # The URL before the other arguments: whatever follows `--` is for the Lua script.
        self.processes.run_or_fail(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", url, *args], seconds + 30,
                                   output, f"wrk run {name} failed", show=None)

    def measure_wrk(self, name, prefix, connections, url, args, watched):
        """One measured wrk run of LOAD_SECONDS, recorded as PREFIX_*: wrk's figures, the CPU of each watched
        (name, pid) and the peak VmRSS of the first of them."""
        sampler = Sampler(watched[0][1], LOAD_SECONDS + 1)
        with self.cpu_measured(prefix, watched):
            self.run_wrk(name, connections, LOAD_SECONDS, url, ["--latency", *args])
        self.record(f"{prefix}_rss_peak_kb", sampler.result().peak_kb)
        for key, value in wrk_summary(RESULTS_DIR / f"{name}.txt").items():
            self.record(f"{prefix}_{key}", value)

    def run_pgbench(self, name, clients, seconds):
        """bench/append.sql on the pgbench database; output in bench/results/NAME.txt."""
        self.processes.run_or_fail(self.pg.pgbench_args(clients, seconds), seconds + 60, RESULTS_DIR / f"{name}.txt",
                                   f"pgbench {name} failed", show=None)

    def measure_pgbench(self, name, prefix, clients):
        """One measured pgbench run of LOAD_SECONDS: its throughput, mean latency, failures and CPU."""
        with self.cpu_measured(prefix):
            self.run_pgbench(name, clients, LOAD_SECONDS)
        out = (RESULTS_DIR / f"{name}.txt").read_text()

        def figure(pattern):
            found = re.search(pattern, out, re.MULTILINE)
            return found.group(1) if found else ""

        self.record(f"{prefix}_tps", figure(r"^tps = ([0-9.]*) "))
        self.record(f"{prefix}_latency_ms", figure(r"^latency average = ([0-9.]*) ms"))
        self.record(f"{prefix}_failed", figure(r"^number of failed transactions: ([0-9]*)"))

    # Each throughput (and replay) is measured in every one of ROUNDS rounds, right next to the limit it is held
    # to, and the order inside a round flips from one round to the next, so a drift of the machine's speed (other
    # guests, CPU frequency, a growing table) falls on both sides alike. The report sets each round's figure
    # against its own round's limit and reports the median of those ratios.
    def alternate(self, what, runs):
        """RUNS (name: a function of the round's number) ROUNDS times, in the order `in_order` gives."""
        for round_number in range(1, ROUNDS + 1):
            for name in in_order(round_number, list(runs)):
                runs[name](round_number)
            log(f"{what}: round {round_number} of {ROUNDS} done")

    def fetch_body(self, url, headers, target, failure):
        """The body of a successful GET of URL, also written to TARGET."""
        status, body = request(url, headers=headers)
        if status != 200:
            raise BenchError(f"{failure} (status {status})")
        target.write_bytes(body)
        return body

    def hot_read(self):
        """1. The hot read against nginx, 5. the same through the gateway, and the memory of both (4, 7)."""
        log(f"hot read: seeding {READ_PINS} pins")
        service = self.start("bench_read", "service-read.log", "rss_idle_kb")
        seed_read_pins(service, self.token)
        auth = {"Authorization": f"Bearer {self.token}"}
        wrk_auth = ["-H", f"Authorization: Bearer {self.token}"]

        # nginx serves the very bytes the service answers with.
        bodies = self.bench.scratch("bench-bodies")
        service_body = self.fetch_body(service.url(), auth, bodies / "service.json", "the service's read failed")
        if len(json.loads(service_body)["results"]) != READ_PINS:
            raise BenchError(f"the hot read did not return {READ_PINS} pins")
        self.record("read_body_bytes", len(service_body))
        nginx = self.bench.start_nginx(bodies / "service.json", "service")
        # For information: SwiftNIO alone answering the same bytes, with its HTTP parser and without.
        floors = {mode: self.bench.start_floor(self.binaries, bodies / "service.json", mode)
                  for mode in FLOOR_MODES}

        # The gateway in front of the same service. It keeps the default list once fetched (and drops it when
        # its live feed sees the log move): a few requests fill it before anything is measured.
        gateway = self.start("bench_gateway_read", "gateway-read.log", "rss_gw_idle_kb", service)
        for _ in range(5):
            gateway_body = self.fetch_body(gateway.url(), {}, bodies / "gateway.json", "the gateway's read failed")
        self.record("gw_read_body_bytes", len(gateway_body))
        # The gateway's limit is nginx serving the gateway's bytes: the same nginx when they are the same.
        same_bytes = gateway_body == service_body
        self.record("gw_read_same_bytes", "yes" if same_bytes else "no")
        gateway_nginx = nginx if same_bytes else self.bench.start_nginx(bodies / "gateway.json", "gateway")

        log(f"hot read: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: nginx, service, gateway")
        self.run_wrk("read-nginx-warmup", 64, WARMUP_SECONDS, nginx.url(), wrk_auth)
        self.run_wrk("read-service-warmup", 64, WARMUP_SECONDS, service.url(), wrk_auth)
        self.run_wrk("gateway-read-warmup", 64, WARMUP_SECONDS, gateway.url())
        for mode, floor in floors.items():
            self.run_wrk(f"read-floor-{mode}-warmup", 64, WARMUP_SECONDS, floor.url())

        def nginx_round(k):
            self.measure_wrk(f"read-nginx-{k}", f"read_nginx_{k}", 64, nginx.url(), [*wrk_auth, "-s", SUMMARY_LUA],
                             [("nginx", nginx.pid)])
            if gateway_nginx is not nginx:
                self.measure_wrk(f"gateway-read-nginx-{k}", f"gw_read_nginx_{k}", 64, gateway_nginx.url(),
                                 ["-s", SUMMARY_LUA], [("nginx", gateway_nginx.pid)])

        def service_round(k):
            self.measure_wrk(f"read-service-{k}", f"read_service_{k}", 64, service.url(),
                             [*wrk_auth, "-s", SUMMARY_LUA], [("service", service.pid)])
            service.expect_alive("the hot read")

        def gateway_round(k):
            self.measure_wrk(f"gateway-read-{k}", f"gw_read_{k}", 64, gateway.url(), ["-s", SUMMARY_LUA],
                             [("gateway", gateway.pid), ("service", service.pid)])
            gateway.expect_alive("the hot read")
            service.expect_alive("the hot read through the gateway")

        def floor_round(k):
            for mode, floor in floors.items():
                self.measure_wrk(f"read-floor-{mode}-{k}", f"read_floor_{mode}_{k}", 64, floor.url(),
                                 ["-s", SUMMARY_LUA], [("floor", floor.pid)])
                floor.expect_alive("the hot read")

        self.alternate("hot read", {"nginx": nginx_round, "service": service_round, "gateway": gateway_round,
                                    "floor": floor_round})
        for floor in floors.values():
            self.processes.stop(floor.proc)
        self.record_memory("read", "read_service", service)
        self.record_memory("gw_read", "gw_read", gateway)
        # The cached list is trusted only while the live feed follows the log: each loss forwards reads again.
        feed_lost = sum("live feed lost" in line for line in gateway.log_path.read_text(errors="replace").splitlines())
        self.record("gw_read_feed_lost", feed_lost)
        self.processes.stop(gateway.proc)

        # For information: the service's smallest route, /healthz (a constant 15-byte body, no token check),
        # is what this HTTP stack costs per request before any work of the service's own.
        log(f"hot read: locations-service /healthz (for information, {LOAD_SECONDS}s)")
        self.measure_wrk("read-health", "read_health", 64, service.url("/healthz"), ["-s", SUMMARY_LUA],
                         [("service", service.pid)])
        service.expect_alive("the /healthz load")
        self.processes.stop(service.proc)

    def durable_post(self):
        """3. The durable POST against pgbench, 6. the same through the gateway with a session, and the
        memory of both (4, 7)."""
        service = self.start("bench_post_service", "service-post.log", "rss_post_idle_kb")
        actors = [actor_header(5550001000 + i, first, "Student") for i, first in enumerate(FIRST_NAMES)]
        post_args = ["-s", "bench/post.lua", "--", self.token, *actors]

        # The gateway in front of the same service, with a session for each of as many students as the
        # service's own load posts as.
        gateway = self.start("bench_gateway_post", "gateway-post.log", "rss_gw_post_idle_kb", service)
        sessions = [student_session(gateway, f"{first.lower()}@example.com", "bench-password", first, "Student")
                    for first in FIRST_NAMES]
        gateway_args = ["-s", "bench/gateway-post.lua", "--", *sessions]

        # pgbench runs one POST's transaction (bench/append.sql) in a database of its own.
        self.pg.create_database("bench_post_pgbench")
        self.processes.run_or_fail([self.service_bin, "migrate"], 120, RESULTS_DIR / "pgbench-migrate.log",
                                   "migrating the pgbench database failed", {"DATABASE_URL": self.pg.url("bench_post_pgbench")})

        log(f"durable POST: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: pgbench, service, gateway")
        self.run_wrk("post-service-warmup", 32, WARMUP_SECONDS, service.url(), post_args)
        self.run_wrk("gateway-post-warmup", 32, WARMUP_SECONDS, gateway.url(), gateway_args)
        self.run_pgbench("post-pgbench-warmup", 32, WARMUP_SECONDS)

        # Every answered POST must be a committed event: the events each load appended are counted.
        def pgbench_round(k):
            self.measure_pgbench(f"post-pgbench-{k}", f"post_pgbench_{k}", 32)

        def service_round(k):
            before = self.pg.events_in("bench_post_service")
            self.measure_wrk(f"post-service-{k}", f"post_service_{k}", 32, service.url(), post_args,
                             [("service", service.pid)])
            service.expect_alive("the POST load")
            self.record(f"post_service_{k}_events", self.pg.events_in("bench_post_service") - before)

        def gateway_round(k):
            before = self.pg.events_in("bench_post_service")
            self.measure_wrk(f"gateway-post-{k}", f"gw_post_{k}", 32, gateway.url(), gateway_args,
                             [("gateway", gateway.pid), ("service", service.pid)])
            gateway.expect_alive("the POST load")
            service.expect_alive("the POST load through the gateway")
            self.record(f"gw_post_{k}_events", self.pg.events_in("bench_post_service") - before)

        self.alternate("durable POST", {"pgbench": pgbench_round, "service": service_round, "gateway": gateway_round})
        self.record_memory("post", "post_service", service)
        self.record_memory("gw_post", "gw_post", gateway)
        # The pool keeps what it opened for a while: this is how many connections the loads made it use.
        connections = int(self.pg.value("bench_post_service", "SELECT count(*) FROM pg_stat_activity WHERE "
                                        "datname = current_database() AND backend_type = 'client backend' "
                                        "AND pid <> pg_backend_pid()"))
        self.record("post_service_db_connections", connections)
        self.processes.stop(gateway.proc)
        self.processes.stop(service.proc)
        # Transactions committed in that database over the service's whole life (its connections have ended,
        # so their statistics are in), against the events it appended: what each POST costs PostgreSQL in commits.
        time.sleep(0.5)
        self.record("post_service_all_commits", self.pg.value(
            "bench_post_service", "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))
        self.record("post_service_all_events", self.pg.events_in("bench_post_service"))

        # For information: pgbench with only as many connections as the service could append on (all it
        # opened but the one held for LISTEN). With synchronous commits, throughput follows the number of
        # transactions that can wait for the same WAL flush, so this separates the pool's size from the rest.
        appenders = max(connections - 1, 1)
        log(f"durable POST: pgbench with {appenders} connections (for information)")
        self.run_pgbench("post-pgbench-pool-warmup", appenders, WARMUP_SECONDS)
        self.measure_pgbench("post-pgbench-pool", "post_pgbench_pool", appenders)
        self.record("post_pgbench_pool_clients", appenders)

    def replay(self):
        """2. Replay against the same rebuild in SQL."""
        # In rounds, as the throughputs: one run of each on this machine's shared cores moved the ratio
        # from 1.19x to 1.51x between two runs of the same code.
        ReplayLog(self, "bench_replay", REPLAY_PINS).measure()


class ReplayLog:
    """A log of PINS x 4 events in DATABASE, replayed by the service and rebuilt in SQL round by round, every
    figure recorded through BENCHMARKS (a limits.Benchmarks) as KEY_*."""

    def __init__(self, benchmarks, database, pins, key="replay"):
        self.benchmarks = benchmarks
        self.pg = benchmarks.pg
        self.processes = benchmarks.processes
        self.service_bin = benchmarks.service_bin
        self.database = database
        self.pins = pins
        self.key = key
        self.env = {"DATABASE_URL": self.pg.url(database)}

    def record(self, name, value):
        self.benchmarks.record(f"{self.key}_{name}", value)

    def write(self):
        """The database, migrated, and the events bench/generate-events.sql writes, then settled (hint bits,
        visibility map, statistics) so that neither contender pays for that. The trigger that keeps
        locations.pin_versions (the map at past moments, which replay neither reads nor writes) is off while
        they are written, and fsync too: 10,000,000 events took 31 minutes with both, and the log is the
        same without them. fsync is on again, and everything on disk, before anything is measured."""
        self.pg.create_database(self.database)
        self.processes.run_or_fail([self.service_bin, "migrate"], 120, RESULTS_DIR / f"{self.key}-migrate.log",
                                   "migrating the replay database failed", self.env)
        log(f"replay: writing {self.pins * 4:,} events over {self.pins:,} pins")
        self.pg.psql(self.database, "-c", "ALTER SYSTEM SET fsync = off", "-c", "SELECT pg_reload_conf()",
                     "-c", "ALTER TABLE locations.events DISABLE TRIGGER events_pin_versions")
        start = time.monotonic()
        self.pg.write_events(self.database, self.pins, RESULTS_DIR / f"{self.key}-generate.log")
        self.record("generate_seconds", elapsed(start))
        self.pg.psql(self.database, "-c", "ALTER TABLE locations.events ENABLE TRIGGER events_pin_versions",
                     "-c", "ALTER SYSTEM RESET fsync", "-c", "SELECT pg_reload_conf()",
                     "-c", "VACUUM (ANALYZE) locations.events")
        if self.pg.value(self.database, "SHOW fsync") != "on":
            raise BenchError("fsync did not come back on after the log was written")
        self.pg.psql(self.database, "-c", "CHECKPOINT")
        for name, query in [
            ("events", "SELECT count(*) FROM locations.events"),
            ("deleted_streams", "SELECT count(*) FROM locations.events WHERE event_type = 'LocationDeleted'"),
            ("transactions", "SELECT count(DISTINCT transaction_id) FROM locations.events"),
            ("events_mb", "SELECT pg_total_relation_size('locations.events') / 1048576"),
        ]:
            self.record(name, self.pg.value(self.database, query))

    def by_service(self, k):
        """Wall clock of the whole command (start-up and connecting included); its memory and CPU time are
        sampled while it runs."""
        prefix = f"service_{k}"
        output = RESULTS_DIR / f"{self.key}.log"
        with self.benchmarks.cpu_measured(f"{self.key}_{prefix}"):
            start = time.monotonic()
            replay = self.processes.start([self.service_bin, "replay"], output, self.env)
            sampler = Sampler(replay.pid, 3600)
            if not self.processes.finish(replay, 3600):
                show_tail(output)
                raise BenchError("replay failed")
            seconds = elapsed(start)
        sampler.result()
        self.record(f"{prefix}_seconds", seconds)
        self.record(f"{prefix}_cpu_seconds", f"{sampler.ticks / HZ:.2f}")
        self.record(f"{prefix}_rss_peak_kb", sampler.peak_kb)
        self.pg.psql(self.database, "-c", "CHECKPOINT")

    def by_sql(self, k):
        prefix = f"sql_{k}"
        self.pg.psql(self.database, "-c", "DROP TABLE IF EXISTS bench.sql_pins", "-c", "CHECKPOINT")
        with self.benchmarks.cpu_measured(f"{self.key}_{prefix}"):
            start = time.monotonic()
            self.pg.psql(self.database, "-f", "bench/rebuild.sql")
            without_indexes = elapsed(start)
            self.pg.psql(self.database, "-f", "bench/rebuild-indexes.sql")
            with_indexes = elapsed(start)
        self.record(f"{prefix}_noindex_seconds", without_indexes)
        self.record(f"{prefix}_seconds", with_indexes)
        self.pg.psql(self.database, "-c", "CHECKPOINT")

    def rounds(self):
        log(f"replay of {self.pins * 4:,} events: {ROUNDS} rounds of locations-service replay and the same rebuild in SQL")
        self.benchmarks.alternate(f"replay of {self.pins * 4:,} events", {"service": self.by_service, "sql": self.by_sql})
        self.benchmarks.results.record_max(f"rss_{self.key}_peak_kb", rf"{self.key}_service_[0-9]*_rss_peak_kb")

    def verify(self):
        """`replay --verify` must find no difference, and the swapped-in read model must equal the SQL
        rebuild row for row."""
        log(f"replay of {self.pins * 4:,} events: verify")
        start = time.monotonic()
        verify_log = RESULTS_DIR / f"{self.key}-verify.log"
        self.processes.run_or_fail([self.service_bin, "replay", "--verify"], 3600, verify_log,
                                   "replay --verify found differences", self.env)
        self.record("verify_seconds", elapsed(start))
        if "matches the live one" not in verify_log.read_text(errors="replace"):
            raise BenchError("replay --verify did not confirm a match")
        self.record("verify", "match")
        live, sql, differing = self.pg.psql(self.database, "-tA", "-f", "bench/compare.sql").strip().split("|")
        self.record("live_pins", live)
        self.record("sql_pins", sql)
        self.record("differing_rows", differing)
        if differing != "0" or live != sql:
            raise BenchError(f"replay and the SQL rebuild disagree ({live} vs {sql} rows, {differing} differ)")

    def measure(self):
        self.write()
        self.rounds()
        self.verify()

def record_machine(results, postgres):
    cpu_model = re.search(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    memory_kb = re.search(r"^MemTotal: *([0-9]+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    swift = re.search(r"Swift version (\S+)", output_of("swift", "--version"))
    results.record("date", utc_now())
    results.record("cpus", CPUS)
    results.record("cpu_model", cpu_model.group(1) if cpu_model else "")
    results.record("memory_mb", int(memory_kb.group(1)) // 1024)
    results.record("os", platform.freedesktop_os_release().get("PRETTY_NAME", ""))
    results.record("load_before", load_average())
    results.record("postgres_version", postgres.version())
    results.record("nginx_version", output_of("nginx", "-v").strip().rpartition("/")[2])
    results.record("wrk_version", (output_of("wrk", "-v").split("\n", 1)[0].split() + ["", ""])[1])
    results.record("swift_version", swift.group(1) if swift else "")
    results.record("commit", commit("Services", "Shared", "Package.swift"))
    results.record("load_seconds", LOAD_SECONDS)
    results.record("warmup_seconds", WARMUP_SECONDS)
    results.record("rounds", ROUNDS)


def micro_measurements(bench):
    """bench/micro: the code behind claims in comments against the simpler code it replaced; it prints its
    own section of BENCHMARKS.md."""
    log("micro-measurements against the simpler code (their own section of BENCHMARKS.md)")
    binaries = bench.binaries("MicroBenchmarks", log_name="micro-build")
    section = bench.processes.output([binaries / "MicroBenchmarks",
                                      ROOT / "Services" / "Geocoding" / "Resources" / "gazetteer.tsv"], 600)
    (RESULTS_DIR / "micro.md").write_text(section)
    write_sections(section.split("\n"))


def run_extras(bench):
    """The passes that write their own sections of BENCHMARKS.md after the main report."""
    micro_measurements(bench)
    log("fuzzing the parsers of client input, a million runs each")
    # Stopped, if need be, as a Ctrl-C on the terminal would stop it: it builds, and cleans up on SIGINT.
    bench.processes.run_or_fail(["bench/fuzz.sh"], None, RESULTS_DIR / "fuzz.log", "fuzzing failed",
                                stop_signal=signal.SIGINT)
    log("the command-line client against curl (its own section of BENCHMARKS.md)")
    cli.run(bench)


def run(bench, extras=True):
    """Everything, in order, then the extras unless EXTRAS is false."""
    for old in [*RESULTS_DIR.glob("*.log"), *RESULTS_DIR.glob("*.txt")]:
        old.unlink()
    results = Results(RESULTS_FILE)
    ensure("wrk", "nginx", "postgresql")
    binaries = bench.binaries("locations-service", "auth-gateway", "HTTPFloor")
    postgres = bench.postgres()
    log(f"PostgreSQL {postgres.version()} on 127.0.0.1:{postgres.port}")

    record_machine(results, postgres)
    started = time.monotonic()
    benchmarks = Benchmarks(bench, results, postgres, binaries)
    benchmarks.hot_read()
    benchmarks.durable_post()
    benchmarks.replay()
    results.record("total_seconds", int(time.monotonic() - started))
    results.record("load_after", load_average())

    write_report(results.values)
    log("wrote BENCHMARKS.md")
    # The passes after this start what they need themselves: nginx and the cluster would only stand idle.
    bench.processes.stop_all()
    bench.stop_postgres(postgres)
    if extras:
        run_extras(bench)
    table = re.search(r"^\| Benchmark.*?\n\n", (ROOT / "BENCHMARKS.md").read_text(), re.MULTILINE | re.DOTALL)
    print(table.group(0) if table else "", end="")
