#!/usr/bin/env python3
"""Writes BENCHMARKS.md from the KEY=VALUE lines bench/run.sh records.

Usage: bench/report.py bench/results/results.env BENCHMARKS.md
"""
import sys

# The goals each ratio is held to (service figure / limit measured in the same run).
READ_GOAL = 0.8     # hot read: at least 0.8 × nginx's requests/s
REPLAY_GOAL = 1.5   # replay: at most 1.5 × the SQL rebuild's wall-clock time
POST_GOAL = 0.7     # durable POST: at least 0.7 × pgbench's transactions/s


def load(path):
    values = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, _, value = line.rstrip("\n").partition("=")
            if key:
                values[key] = value
    return values


def main(source, target):
    r = load(source)

    def num(key):
        return float(r[key])

    def mb(key):
        return f"{num(key) / 1024:.1f} MB"

    def count(value):
        return f"{value:,.0f}"

    def verdict(ok):
        return "PASS" if ok else "MISS"

    read_ratio = num("read_service_rps") / num("read_nginx_rps")
    replay_ratio = num("replay_service_seconds") / num("replay_sql_seconds")
    replay_ratio_bare = num("replay_service_seconds") / num("replay_sql_noindex_seconds")
    post_ratio = num("post_service_rps") / num("post_pgbench_tps")
    idle = num("rss_idle_kb")
    load_s = r["load_seconds"]
    body_kb = num("read_body_bytes") / 1024
    events = num("replay_events")
    live_pins = num("replay_live_pins")

    rows = [
        ("Hot read: `GET /v1/StudentLocation` (latest 100, "
         f"{body_kb:.1f} KB), wrk -t2 -c64 {load_s} s",
         f"{count(num('read_service_rps'))} req/s",
         f"nginx, same bytes as a static file: {count(num('read_nginx_rps'))} req/s",
         f"{read_ratio:.2f}×", f"≥ {READ_GOAL}×", verdict(read_ratio >= READ_GOAL)),
        (f"Replay: `locations-service replay`, {count(events)} events → {count(live_pins)} pins (wall clock)",
         f"{num('replay_service_seconds'):.2f} s",
         f"one SQL `INSERT … SELECT DISTINCT ON` + the same 3 indexes: {num('replay_sql_seconds'):.2f} s",
         f"{replay_ratio:.2f}×", f"≤ {REPLAY_GOAL}×", verdict(replay_ratio <= REPLAY_GOAL)),
        ("Replay, against the SQL rebuild without indexes (for information)",
         f"{num('replay_service_seconds'):.2f} s",
         f"SQL rebuild, no indexes: {num('replay_sql_noindex_seconds'):.2f} s",
         f"{replay_ratio_bare:.2f}×", "—", "—"),
        (f"Durable POST: `POST /v1/StudentLocation` (one event + one pin, fsync on), wrk -c32 {load_s} s",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c32 -j2, the same statement (bench/append.sql): {count(num('post_pgbench_tps'))} tps",
         f"{post_ratio:.2f}×", f"≥ {POST_GOAL}×", verdict(post_ratio >= POST_GOAL)),
        (f"Durable POST, against pgbench with the service's {r['post_pgbench_pool_clients']} append connections "
         "(for information)",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c{r['post_pgbench_pool_clients']}: {count(num('post_pgbench_pool_tps'))} tps",
         f"{num('post_service_rps') / num('post_pgbench_pool_tps'):.2f}×", "—", "—"),
        ("Memory (VmRSS) idle, after start", mb("rss_idle_kb"), "—", "—", "—", "reported"),
        ("Memory during the hot read: peak / at end", f"{mb('rss_read_peak_kb')} / {mb('rss_read_end_kb')}",
         f"idle: {mb('rss_idle_kb')}", f"{num('rss_read_peak_kb') / idle:.2f}× (peak)", "—", "reported"),
        ("Memory during the durable POST: peak / at end", f"{mb('rss_post_peak_kb')} / {mb('rss_post_end_kb')}",
         f"idle: {mb('rss_post_idle_kb')}", f"{num('rss_post_peak_kb') / num('rss_post_idle_kb'):.2f}× (peak)",
         "—", "reported"),
        (f"Memory of `replay` over {count(events)} events: peak", mb("rss_replay_peak_kb"), "—", "—", "—", "reported"),
    ]

    def ms(key):
        return f"{num(key) / 1000:.2f} ms"

    def cpu(prefix, *names):
        parts = [f"machine {r[prefix + '_cpu_machine']}"]
        parts += [f"{name} {r[f'{prefix}_cpu_{name}']}" for name in names]
        parts.append(f"PostgreSQL {r[prefix + '_cpu_postgres']}")
        return ", ".join(parts)

    cpus = r["cpus"]
    lines = [
        "# Benchmarks",
        "",
        "Figures for `locations-service`, each set against a limit measured in the same run on the same machine,",
        "so the ratio says how close the service comes to what the machine can do. Produced by `bench/run.sh`",
        "(one command: installs what is missing, starts a private PostgreSQL with default durability, builds the",
        "release binary, runs everything, stops what it started, rewrites this file). Raw outputs of the last run",
        "are in `bench/results/` (not versioned).",
        "",
        "## Machine",
        "",
        f"- {r['cpu_model']}, {cpus} cores (`nproc`), {count(num('memory_mb'))} MB memory, {r['os']}",
        f"- Run on {r['date']}, commit {r['commit']}; load average before the run: {r['load_before']}; "
        f"benchmarks took {r['total_seconds']} s",
        f"- PostgreSQL {r['postgres_version']} (private cluster, default settings: fsync on, synchronous_commit on, "
        f"shared_buffers 128 MB), nginx {r['nginx_version']}, wrk {r['wrk_version']}, Swift {r['swift_version']}",
        f"- Every load: {r['warmup_seconds']} s unmeasured warm-up, then {load_s} s measured. Load generator, server and",
        "  PostgreSQL all share the same cores, as they do in every row.",
        "",
        "## Results",
        "",
        "| Benchmark | Service | Limit (same run) | Ratio | Goal | Result |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += [
        "",
        "## Details",
        "",
        "| Run | Throughput | p50 | p99 | Errors | CPU used, in cores (of " + cpus + ") |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| hot read, nginx | {count(num('read_nginx_rps'))} req/s | {ms('read_nginx_p50_us')} | {ms('read_nginx_p99_us')} | "
        f"{r['read_nginx_status_errors']} status, {r['read_nginx_socket_errors']} socket | {cpu('read_nginx', 'nginx')} |",
        f"| hot read, service | {count(num('read_service_rps'))} req/s | {ms('read_service_p50_us')} | {ms('read_service_p99_us')} | "
        f"{r['read_service_status_errors']} status, {r['read_service_socket_errors']} socket | {cpu('read_service', 'service')} |",
        f"| POST, service | {count(num('post_service_rps'))} req/s | {ms('post_service_p50_us')} | {ms('post_service_p99_us')} | "
        f"{r['post_service_status_errors']} status, {r['post_service_socket_errors']} socket | {cpu('post_service', 'service')} |",
        f"| POST, pgbench | {count(num('post_pgbench_tps'))} tps | {r['post_pgbench_latency_ms']} ms (mean) | — | "
        f"{r.get('post_pgbench_failed') or '0'} failed | {cpu('post_pgbench')} |",
        f"| POST, pgbench -c{r['post_pgbench_pool_clients']} | {count(num('post_pgbench_pool_tps'))} tps | "
        f"{r['post_pgbench_pool_latency_ms']} ms (mean) | — | {r.get('post_pgbench_pool_failed') or '0'} failed | "
        f"{cpu('post_pgbench_pool')} |",
        f"| replay, service | {count(events / num('replay_service_seconds'))} events/s | — | — | — | "
        f"{cpu('replay_service')}; the replay process itself {num('replay_service_cpu_seconds') / num('replay_service_seconds'):.2f} |",
        f"| replay, SQL | {count(events / num('replay_sql_seconds'))} events/s | — | — | — | {cpu('replay_sql')} |",
        "",
        f"- The POST run answered {count(num('post_service_requests'))} requests and the log gained "
        f"{count(num('post_service_events'))} events (wrk does not count the up to 32 requests still in flight "
        f"when it stops); the service had {r['post_service_db_connections']} PostgreSQL connections open, one of them "
        "held for LISTEN.",
        f"- Replay log: {count(events)} events in {r['replay_transactions']} transactions over "
        f"{count(num('replay_live_pins') + num('replay_deleted_streams'))} streams ({count(num('replay_deleted_streams'))} "
        f"ending in LocationDeleted), {r['replay_events_mb']} MB with indexes, written by bench/generate-events.sql in "
        f"{num('replay_generate_seconds'):.0f} s.",
        f"- After the replay, `replay --verify` reported no difference ({num('replay_verify_seconds'):.1f} s), and the "
        f"swapped-in read model equals the SQL rebuild row for row: {count(live_pins)} = {count(num('replay_sql_pins'))} "
        f"rows, {r['replay_differing_rows']} differing.",
        "",
        "## What limits these figures",
        "",
        f"- **Shared cores.** There are {cpus} cores for everything: wrk or pgbench, the server under test and",
        "  PostgreSQL. In the CPU column, \"machine\" is how many cores were busy on average; what the named processes",
        "  do not account for is mostly the load generator. When the machine is at its limit, any CPU the load",
        "  generator spends is taken from the server, and more so for the side that needs more requests per second.",
        "- **Hot read.** nginx answers from the page cache with `sendfile` and a C event loop; the service copies a",
        "  ready-made buffer but runs each request through Hummingbird's router, middlewares (request id, metrics,",
        "  error mapping, token check) and Swift concurrency tasks. Both saturate the cores together with wrk,",
        "  which also has to read every 32 KB body.",
        "- **Durable POST.** Each append waits for its WAL flush (synchronous_commit on), so throughput comes from",
        "  group commit: how many transactions are waiting to commit together. pgbench keeps 32 connections busy",
        "  all the time; the service funnels 32 HTTP connections through its PostgreSQL pool (PostgresNIO's",
        "  default of at most 20 connections), and also parses HTTP and JSON, validates, encodes the event and",
        "  sends a coalesced `NOTIFY`, all on the same cores as PostgreSQL and wrk.",
        "- **Replay.** The SQL rebuild runs entirely inside PostgreSQL (a sort of the log by stream). The service",
        "  streams every event out in commit order (PostgreSQL extracts the JSON fields, the service decodes rows",
        "  and folds them in a dictionary), then sends the pins back with `COPY` and builds the same indexes; the",
        "  two processes overlap, but the fold is one thread.",
        "- **Memory.** The service holds the latest-100 bytes and its connection pools; RSS grows with the number of",
        "  open HTTP connections and their buffers, not with the size of the log.",
        "",
    ]
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
