"""The map at a past moment: GET /v1/StudentLocation?at=<moment> from locations-service over a log of
AT_PINS x 4 events (10,000,000 by default), at moments drawn uniformly over the log, against the limit of one
SQL query over the log for the same moment (bench/at-limit.sql: DISTINCT ON each stream's last event up to
it). Goal: the service's p99 at most 50 ms, measured with wrk (AT_CONNECTIONS connections); the SQL query's
latencies with pgbench, in the same run. Both answer the same pins for the same moment (checked first).
Then GET /v1/StudentLocation/{objectId}/history for pins drawn from the same log, p99 at most 50 ms too.
Writes the "The map at a past moment" section."""
import re
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.install import ensure
from bench.limits import LOAD_SECONDS, ROUNDS, elapsed
from bench.processes import RESULTS_DIR, BenchError, log, request, setting, wrk_summary
from bench.report import meets, stamp, write_sections

AT_PINS = setting("AT_PINS", 2_500_000)  # 4 events per pin
AT_CONNECTIONS = setting("AT_CONNECTIONS", 4)
LIMIT_QUERIES = setting("AT_LIMIT_QUERIES", 3)  # per round: each reads the log up to its moment, 10-40 s at 10 M events
P99_GOAL_MS = 50


def generate(bench, pg, database):
    """The log (bench/generate-events.sql, as the replay benchmark writes it), its versions kept by the
    service's own trigger as it is written; then settled."""
    log(f"the map at a past moment: writing {AT_PINS * 4:,} events over {AT_PINS:,} pins")
    start = time.monotonic()
    pg.write_events(database, AT_PINS, RESULTS_DIR / "at-generate.log")
    seconds = elapsed(start)
    pg.psql(database, "-c", "VACUUM (ANALYZE) locations.events", "-c", "VACUUM (ANALYZE) locations.pin_versions",
            "-c", "CHECKPOINT")
    figures = {"generate_seconds": seconds}
    for key, query in [
        ("events", "SELECT count(*) FROM locations.events"),
        ("versions", "SELECT count(*) FROM locations.pin_versions"),
        ("events_mb", "SELECT pg_total_relation_size('locations.events') / 1048576"),
        ("versions_mb", "SELECT pg_total_relation_size('locations.pin_versions') / 1048576"),
        ("first", "SELECT extract(epoch FROM min(recorded_at))::bigint FROM locations.events"),
        ("last", "SELECT extract(epoch FROM max(recorded_at))::bigint FROM locations.events"),
    ]:
        figures[key] = int(float(pg.value(database, query)))
    return figures


def same_answers(bench, pg, database, service, first, last):
    """The service and the SQL limit give the same pins at five moments across the log."""
    limit_sql = Path("bench/at-limit.sql").read_text().split("\n")
    query = "\n".join(line for line in limit_sql if not line.startswith(("--", "\\set")))
    for k in range(5):
        moment = first + (last - first) * (k + 0.5) / 5
        at = datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        status, body = request(service.url(f"/v1/StudentLocation?at={at}"),
                               headers={"Authorization": f"Bearer {bench.token}"}, timeout=60)
        if status != 200:
            raise BenchError(f"?at={at} answered {status}")
        answered = re.findall(rb'"objectId":"([^"]+)"', body)
        expected = pg.psql(database, "-tA", "-c",
                           query.replace(":moment / 1000.0", str(int(moment) * 1000) + " / 1000.0")).splitlines()
        ids = [line.split("|")[0].encode() for line in expected if line]
        if answered != ids or len(ids) != 100:
            raise BenchError(f"?at={at}: the service and the SQL limit answer different pins ({len(answered)} and "
                             f"{len(ids)}; first {answered[:3]} and {ids[:3]})")


def run_wrk(bench, name, service, script, env, seconds, seed):
    """wrk with `script` against the service: its summary (bench/summary.lua)."""
    output = RESULTS_DIR / f"{name}.txt"
    env = {**env, "INTERNAL_TOKEN": bench.token, "AT_SEED": str(seed)}
    bench.processes.run_or_fail(["wrk", "-t2", f"-c{AT_CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", script,
                                 service.url("/")], seconds + 30, output, f"wrk run {name} failed", env=env, show=None)
    figures = wrk_summary(output)
    if int(figures["status_errors"]) or int(figures["socket_errors"]):
        raise BenchError(f"wrk run {name}: errors ({figures})")
    return figures


def run_limit(bench, pg, database, name, first, last):
    """pgbench running the SQL limit LIMIT_QUERIES times on one connection: each query's latency, in ms."""
    folder = bench.scratch("at-pgbench")
    bench.processes.run_or_fail(
        [pg.bin / "pgbench", "-h", "127.0.0.1", "-p", pg.port, "-U", "onthemap", "-n", "-c", "1", "-t", LIMIT_QUERIES,
         "-D", f"first={first}", "-D", f"last={last}", "-f", Path("bench/at-limit.sql").resolve(), "-l",
         "--log-prefix", folder / "at", database], 3600, RESULTS_DIR / f"{name}.txt", f"pgbench run {name} failed",
        show=None)
    logs = list(folder.glob("at*"))
    latencies = [int(line.split()[2]) / 1000 for path in logs for line in path.read_text().splitlines()]
    if len(latencies) != LIMIT_QUERIES:
        raise BenchError(f"pgbench run {name} logged {len(latencies)} queries")
    return latencies


def run_history(bench, pg, database, service):
    """wrk asking for the history of pins drawn from a sample of the log's (up to 20,000, from pages read at
    random): each round's p99, p50 and rate."""
    events = int(pg.value(database, "SELECT count(*) FROM locations.events"))
    percent = min(100.0, 100.0 * 200_000 / max(events, 1))
    ids = pg.psql(database, "-tA", "-c",
                  f"SELECT substr(stream_name, 10) FROM locations.events TABLESAMPLE SYSTEM ({percent:.4f}) "
                  "WHERE stream_version = 1 LIMIT 20000").split()
    if len(ids) < 100:
        raise BenchError(f"only {len(ids)} pins sampled for the history load")
    path = RESULTS_DIR / "history-ids.txt"
    path.write_text("\n".join(ids) + "\n")
    status, body = request(service.url(f"/v1/StudentLocation/{ids[0]}/history"),
                           headers={"Authorization": f"Bearer {bench.token}"}, timeout=60)
    if status != 200 or b'"event":"posted"' not in body:
        raise BenchError(f"the history of {ids[0]} answered {status}: {body[:200]!r}")
    env = {"HISTORY_IDS": str(path.resolve())}
    log(f"a pin's history: {ROUNDS} rounds of {LOAD_SECONDS}s (wrk, {AT_CONNECTIONS} connections) over {len(ids):,} pins")
    run_wrk(bench, "history-warmup", service, "bench/history.lua", env, LOAD_SECONDS, 0)
    figures = {"p99": [], "p50": [], "rps": [], "pins": len(ids)}
    for round_number in range(1, ROUNDS + 1):
        result = run_wrk(bench, f"history-{round_number}", service, "bench/history.lua", env, LOAD_SECONDS, round_number)
        figures["p99"].append(int(result["p99_us"]) / 1000)
        figures["p50"].append(int(result["p50_us"]) / 1000)
        figures["rps"].append(float(result["rps"]))
        service.expect_alive("the history load")
    return figures


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def run(bench):
    ensure("wrk")
    binaries = bench.binaries("locations-service", log_name="at-build")
    # fsync off: the log is written once, then only read.
    pg = bench.postgres("fsync=off", "shared_buffers=1GB", "max_wal_size=8GB")
    database = "bench_at"
    pg.create_database(database)
    env = {"DATABASE_URL": pg.url(database), "LOG_LEVEL": "warning"}
    bench.processes.run_or_fail([binaries / "locations-service", "migrate"], 120, RESULTS_DIR / "at-migrate.log",
                                "migrating failed", env)
    figures = generate(bench, pg, database)
    first, last = figures["first"], figures["last"]
    service = bench.start_server("locations-service", [binaries / "locations-service", "serve", "--host", "127.0.0.1"],
                                 "at-locations-service.log", env)
    same_answers(bench, pg, database, service, first, last)

    log(f"the map at a past moment: {ROUNDS} rounds of {LOAD_SECONDS}s of ?at= (wrk, {AT_CONNECTIONS} connections) "
        f"and {LIMIT_QUERIES} queries of the SQL limit")
    moments = {"AT_FIRST": str(first), "AT_LAST": str(last)}
    run_wrk(bench, "at-service-warmup", service, "bench/at.lua", moments, LOAD_SECONDS, 0)
    service_p99, service_p50, service_rps, limit_ms = [], [], [], []
    for round_number in range(1, ROUNDS + 1):
        result = run_wrk(bench, f"at-service-{round_number}", service, "bench/at.lua", moments, LOAD_SECONDS, round_number)
        service_p99.append(int(result["p99_us"]) / 1000)
        service_p50.append(int(result["p50_us"]) / 1000)
        service_rps.append(float(result["rps"]))
        service.expect_alive("the ?at= load")
        limit_ms += run_limit(bench, pg, database, f"at-limit-{round_number}", first, last)
        log(f"the map at a past moment: round {round_number} of {ROUNDS} done")

    history = run_history(bench, pg, database, service)

    worst_p99 = max(service_p99)
    limit_p99 = p99(limit_ms)
    start = datetime.fromtimestamp(first, timezone.utc).date()
    days = timedelta(seconds=last - first).days
    section = [
        "## The map at a past moment",
        "",
        f"`bench/run.py at`: GET `/v1/StudentLocation?at=<moment>` from locations-service over a log of "
        f"{figures['events']:,} events ({AT_PINS:,} pins, written by bench/generate-events.sql in "
        f"{float(figures['generate_seconds']):.0f} s with the service's trigger keeping {figures['versions']:,} pin versions: "
        f"{figures['events_mb']:,} MB of log and {figures['versions_mb']:,} MB of versions, indexes included), at moments "
        f"drawn uniformly over its {days} days from {start}; wrk with {AT_CONNECTIONS} connections, {ROUNDS} rounds of "
        f"{LOAD_SECONDS} s after one of warm-up. The limit: the same list in one SQL query over the log "
        f"(bench/at-limit.sql, each stream's last event up to the moment, DISTINCT ON), {LIMIT_QUERIES} queries a round "
        f"on one connection (pgbench). Both gave the same 100 pins at five moments first. Release build; "
        f"{stamp('Services', 'Shared', 'Package.swift', 'bench/moments.py')}.",
        "",
        "| | p50 | p99 | requests/s | goal |",
        "| --- | --- | --- | --- | --- |",
        f"| `?at=` (worst round's p99; median p50 and rate) | {statistics.median(service_p50):.1f} ms | "
        f"**{worst_p99:.1f} ms** | {statistics.median(service_rps):,.0f} | p99 ≤ {P99_GOAL_MS} ms ({meets(worst_p99 <= P99_GOAL_MS)}) |",
        f"| the SQL limit ({len(limit_ms)} queries) | {statistics.median(limit_ms):,.0f} ms | {limit_p99:,.0f} ms | "
        f"{1000 / statistics.mean(limit_ms):.2f} | |",
        f"| `?at=` p99 / the limit's p99 | | **{worst_p99 / limit_p99:.4f}×** | | |",
        f"| a pin's history (worst round's p99; median p50 and rate) | {statistics.median(history['p50']):.1f} ms | "
        f"**{max(history['p99']):.1f} ms** | {statistics.median(history['rps']):,.0f} | p99 ≤ {P99_GOAL_MS} ms "
        f"({meets(max(history['p99']) <= P99_GOAL_MS)}) |",
        "",
        f"Each round's p99: {', '.join(f'{value:.1f}' for value in service_p99)} ms for `?at=`, "
        f"{', '.join(f'{value:.1f}' for value in history['p99'])} ms for history (GET "
        f"`/v1/StudentLocation/{{objectId}}/history` of pins drawn uniformly from {history['pins']:,} of the log's, "
        f"{ROUNDS} rounds of {LOAD_SECONDS} s after one of warm-up, on the same connections).",
        "",
    ]
    write_sections(section)
    log(f"the map at a past moment: p99 {worst_p99:.1f} ms (goal {P99_GOAL_MS} ms), the SQL limit's p99 {limit_p99:,.0f} ms;"
        f" a pin's history p99 {max(history['p99']):.1f} ms; wrote the section of BENCHMARKS.md")
