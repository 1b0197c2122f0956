"""What WAL archiving costs the durable POST: locations-service on a private cluster whose every WAL segment
pgBackRest archives (as scripts/up.sh runs it: asynchronous archive-push to an encrypted, compressed
repository folder, archive_timeout 60 s), against the same service on a cluster with no archiving, both with
the default durability (fsync and synchronous_commit on), measured alternately in the same run. The goal:
at least 0.9x the POST without archiving. Writes the "WAL archiving's cost" section of BENCHMARKS.md."""
import statistics
import subprocess

from bench.install import ensure
from bench.limits import FIRST_NAMES, LOAD_SECONDS, ROUNDS, WARMUP_SECONDS, in_order
from bench.processes import RESULTS_DIR, ROOT, BenchError, PostgreSQL, actor_header, log
from bench.tracing import run_wrk
from bench.report import stamp, write_sections

# As the main run's durable POST: 32 connections, each POST as one of 8 students.
CONNECTIONS = 32
GOAL = 0.9


def backup_lib(backups, snippet):
    """SNIPPET in bash with scripts/lib.sh and scripts/backup-lib.sh sourced and the backup settings of the
    folder BACKUPS (its repository, configuration and key beneath it): what it printed."""
    script = (f'source "{ROOT}/scripts/lib.sh"; source "{ROOT}/scripts/backup-lib.sh"; '
              f'BACKUP_REPO="{backups}/repository"; backup_settings "{backups}"; {snippet}')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"pgBackRest's setup failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def archived_cluster(bench):
    """A private cluster whose WAL pgBackRest archives, its stanza made and checked (a segment archived)."""
    backups = bench.scratch("bench-backups")
    cluster = PostgreSQL(bench.processes, bench.scratch("bench-pg-archived"))
    cluster.settings = backup_lib(backups, f'write_backup_config "{cluster.data_dir}" {cluster.port}; archive_settings').splitlines()
    bench.clusters.append(cluster)
    cluster.start()
    backup_lib(backups, "ensure_stanza >/dev/null")
    return cluster


def run(bench):
    ensure("wrk")
    binaries = bench.binaries("locations-service", log_name="archiving-build")
    clusters = {"off": bench.postgres(), "on": archived_cluster(bench)}
    services = {}
    for name, cluster in clusters.items():
        env = {"DATABASE_URL": cluster.url("postgres"), "LOG_LEVEL": "warning", "PINS_PER_STUDENT": str(10**6)}
        bench.processes.run_or_fail([binaries / "locations-service", "migrate"], 120, RESULTS_DIR / f"archiving-{name}-migrate.log",
                                    "migrating failed", env)
        services[name] = bench.start_server(f"locations-service (archiving {name})",
                                            [binaries / "locations-service", "serve", "--host", "127.0.0.1"],
                                            f"archiving-{name}-service.log", env)
    actors = [actor_header(5550001000 + i, first, "Student") for i, first in enumerate(FIRST_NAMES)]
    post_args = ["-s", "bench/post.lua", "--", bench.token, *actors]

    log(f"WAL archiving's cost: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: "
        "the durable POST with archiving off and on")
    for name, service in services.items():
        run_wrk(bench, f"archiving-{name}-warmup", service.url(), CONNECTIONS, WARMUP_SECONDS, post_args)
    rates = {name: [] for name in services}
    for round_number in range(1, ROUNDS + 1):
        for name in in_order(round_number, list(services)):
            rates[name].append(run_wrk(bench, f"archiving-{name}-{round_number}", services[name].url(), CONNECTIONS, LOAD_SECONDS, post_args))
            services[name].expect_alive(f"the POST load with archiving {name}")
        log(f"WAL archiving's cost: round {round_number} of {ROUNDS} done")

    # Archiving must have happened, and without a failure, for the figure to mean anything. A switch closes
    # the segment the load was writing, and the spool is given time to push it.
    archived = clusters["on"]
    archived.psql("postgres", "-c", "SELECT pg_switch_wal()")
    counts = archived.value("postgres", "SELECT archived_count || ' ' || failed_count || ' ' || "
                                        "pg_size_pretty(pg_current_wal_lsn() - '0/0'::pg_lsn) FROM pg_stat_archiver")
    segments, failures, written = counts.split(" ", 2)
    if int(segments) == 0 or int(failures) != 0:
        raise BenchError(f"archiving did not work as measured: {segments} segments archived, {failures} failures")

    ratios = [on / off for on, off in zip(rates["on"], rates["off"])]
    ratio = statistics.median(ratios)
    verdict = "met" if ratio >= GOAL else "NOT met"
    section = [
        "## WAL archiving's cost",
        "",
        "`bench/run.py archiving`: the durable POST (wrk, 32 connections, `bench/post.lua` as 8 students) on",
        "locations-service over a private cluster whose WAL pgBackRest archives as `scripts/up.sh` sets it up",
        "(`archive-push` asynchronous, several segments at once, to an encrypted zstd-compressed repository",
        "folder; `archive_timeout` 60 s), against the same service on a cluster without archiving; fsync and",
        f"synchronous_commit on for both. {WARMUP_SECONDS} s of warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS} s,",
        "the order flipped each round; the ratio is the median of each round's ratio. Goal: at least",
        f"{GOAL}x without archiving. Release build; {stamp('Services', 'Shared', 'Package.swift', 'scripts/backup-lib.sh')}.",
        "",
        "| durable POST | archiving off (median req/s) | archiving on (median req/s) | on / off | goal |",
        "| --- | --- | --- | --- | --- |",
        f"| locations-service | {statistics.median(rates['off']):,.0f} | {statistics.median(rates['on']):,.0f} | "
        f"**{ratio:.2f}×** | ≥ {GOAL}×: {verdict} |",
        "",
        "Rounds (req/s, off / on): " + ", ".join(f"{off:,.0f} / {on:,.0f}" for off, on in zip(rates["off"], rates["on"])) + ".",
        f"The archived cluster wrote {written} of WAL in all and archived {int(segments):,} segments, none failed.",
        "",
    ]
    write_sections(section)
    log(f"WAL archiving's cost: {ratio:.2f}x the POST without it ({verdict}); {segments} segments archived")
