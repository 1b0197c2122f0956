#!/usr/bin/env python3
"""Writes BENCHMARKS.md from the KEY=VALUE lines bench/run.sh records.

Usage: bench/report.py bench/results/results.env BENCHMARKS.md
"""
import sys

from section import write_sections

# The goals each ratio is held to (service figure / limit measured in the same run).
READ_GOAL = 0.8     # hot read: at least 0.8 × nginx's requests/s
REPLAY_GOAL = 1.5   # replay: at most 1.5 × the SQL rebuild's wall-clock time
POST_GOAL = 0.7     # durable POST: at least 0.7 × pgbench's transactions/s
GW_READ_GOAL = 0.5  # hot read through auth-gateway: at least 0.5 × nginx's requests/s
GW_POST_GOAL = 0.7  # POST through auth-gateway: at least 0.7 × the service's own POST requests/s


def load(path):
    values = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, _, value = line.rstrip("\n").partition("=")
            if key:
                values[key] = value
    return values


# The runs measured in every round, with the figure that ranks them.
MEASURED = [("read_nginx", "rps"), ("gw_read_nginx", "rps"), ("read_service", "rps"), ("gw_read", "rps"),
            ("post_service", "rps"), ("gw_post", "rps"), ("post_pgbench", "tps")]


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def settle_rounds(r):
    """Lets PREFIX_* name the median round of each run measured in rounds (PREFIX_<round>_*): the round
    whose throughput is the median (the lower of the two middle ones when the count is even)."""
    rounds = int(r["rounds"])
    for prefix, figure in MEASURED:
        if f"{prefix}_1_{figure}" not in r:
            continue
        ranked = sorted(range(1, rounds + 1), key=lambda k: float(r[f"{prefix}_{k}_{figure}"]))
        chosen = f"{prefix}_{ranked[(rounds - 1) // 2]}_"
        for key in [key for key in r if key.startswith(chosen)]:
            r[prefix + "_" + key[len(chosen):]] = r[key]


def main(source, target):
    r = load(source)
    settle_rounds(r)
    rounds = int(r["rounds"])

    def num(key):
        return float(r[key])

    def mb(key):
        return f"{num(key) / 1024:.1f} MB"

    def count(value):
        return f"{value:,.0f}"

    def verdict(ok):
        return "PASS" if ok else "MISS"

    def fmt_ratio(value, goal):
        """Two decimals, or three where two would hide which side of the goal the ratio is on."""
        text = f"{value:.2f}"
        return f"{value:.3f}" if goal is not None and float(text) == goal else text

    def per_round(subject, limit, limit_figure="rps"):
        """The subject's throughput over its limit's, round by round."""
        return [num(f"{subject}_{k}_rps") / num(f"{limit}_{k}_{limit_figure}") for k in range(1, rounds + 1)]

    gw_limit = "read_nginx" if r["gw_read_same_bytes"] == "yes" else "gw_read_nginx"
    read_ratios = per_round("read_service", "read_nginx")
    post_ratios = per_round("post_service", "post_pgbench", "tps")
    gw_read_ratios = per_round("gw_read", gw_limit)
    gw_post_ratios = per_round("gw_post", "post_service")
    read_ratio, post_ratio = median(read_ratios), median(post_ratios)
    gw_read_ratio, gw_post_ratio = median(gw_read_ratios), median(gw_post_ratios)
    replay_ratio = num("replay_service_seconds") / num("replay_sql_seconds")
    replay_ratio_bare = num("replay_service_seconds") / num("replay_sql_noindex_seconds")
    idle = num("rss_idle_kb")
    gw_body_kb = num("gw_read_body_bytes") / 1024
    gw_source = ("forwarded to the service: the live feed was not following"
                 if int(r.get("gw_read_feed_lost", "0")) > 0 else "from the gateway's cache")
    if r["gw_read_same_bytes"] == "yes":
        gw_limit_text = f"nginx, same bytes (the hot read's nginx above): {count(num('read_nginx_rps'))} req/s"
    else:
        gw_limit_text = f"nginx, the gateway's bytes as a static file: {count(num('gw_read_nginx_rps'))} req/s"
    load_s = r["load_seconds"]
    body_kb = num("read_body_bytes") / 1024
    events = num("replay_events")
    live_pins = num("replay_live_pins")

    rows = [
        ("Hot read: `GET /v1/StudentLocation` (latest 100, "
         f"{body_kb:.1f} KB), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('read_service_rps'))} req/s",
         f"nginx, same bytes as a static file: {count(num('read_nginx_rps'))} req/s",
         f"{fmt_ratio(read_ratio, READ_GOAL)}×", f"≥ {READ_GOAL}×", verdict(read_ratio >= READ_GOAL)),
        ("Hot read, against the service's own `/healthz` (smallest route of the same HTTP stack; for information)",
         f"{count(num('read_service_rps'))} req/s",
         f"`GET /healthz`: {count(num('read_health_rps'))} req/s",
         f"{num('read_service_rps') / num('read_health_rps'):.2f}×", "—", "—"),
        (f"Replay: `locations-service replay`, {count(events)} events → {count(live_pins)} pins (wall clock)",
         f"{num('replay_service_seconds'):.2f} s",
         f"one SQL `INSERT … SELECT DISTINCT ON` + the same 3 indexes: {num('replay_sql_seconds'):.2f} s",
         f"{fmt_ratio(replay_ratio, REPLAY_GOAL)}×", f"≤ {REPLAY_GOAL}×", verdict(replay_ratio <= REPLAY_GOAL)),
        ("Replay, against the SQL rebuild without indexes (for information)",
         f"{num('replay_service_seconds'):.2f} s",
         f"SQL rebuild, no indexes: {num('replay_sql_noindex_seconds'):.2f} s",
         f"{replay_ratio_bare:.2f}×", "—", "—"),
        (f"Durable POST: `POST /v1/StudentLocation` (one event + one pin, fsync on), wrk -c32, {rounds} × {load_s} s",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c32 -j2, one POST's transaction each (bench/append.sql): {count(num('post_pgbench_tps'))} tps",
         f"{fmt_ratio(post_ratio, POST_GOAL)}×", f"≥ {POST_GOAL}×", verdict(post_ratio >= POST_GOAL)),
        (f"Durable POST, against pgbench with the service's {r['post_pgbench_pool_clients']} append connections "
         "(for information)",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c{r['post_pgbench_pool_clients']}: {count(num('post_pgbench_pool_tps'))} tps",
         f"{num('post_service_rps') / num('post_pgbench_pool_tps'):.2f}×", "—", "—"),
        ("Through auth-gateway: hot read `GET /v1/StudentLocation` (latest 100, "
         f"{gw_body_kb:.1f} KB, {gw_source}), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('gw_read_rps'))} req/s", gw_limit_text,
         f"{fmt_ratio(gw_read_ratio, GW_READ_GOAL)}×", f"≥ {GW_READ_GOAL}×", verdict(gw_read_ratio >= GW_READ_GOAL)),
        ("Through auth-gateway: `POST /v1/StudentLocation` with `Authorization: Bearer <session id>`, "
         f"wrk -c32, {rounds} × {load_s} s",
         f"{count(num('gw_post_rps'))} req/s",
         f"locations-service's own durable POST (above): {count(num('post_service_rps'))} req/s",
         f"{fmt_ratio(gw_post_ratio, GW_POST_GOAL)}×", f"≥ {GW_POST_GOAL}×", verdict(gw_post_ratio >= GW_POST_GOAL)),
        ("Memory (VmRSS) idle, after start", mb("rss_idle_kb"), "—", "—", "—", "reported"),
        ("Memory during the hot read: peak / at end", f"{mb('rss_read_peak_kb')} / {mb('rss_read_end_kb')}",
         f"idle: {mb('rss_idle_kb')}", f"{num('rss_read_peak_kb') / idle:.2f}× (peak)", "—", "reported"),
        ("Memory during the durable POST: peak / at end", f"{mb('rss_post_peak_kb')} / {mb('rss_post_end_kb')}",
         f"idle: {mb('rss_post_idle_kb')}", f"{num('rss_post_peak_kb') / num('rss_post_idle_kb'):.2f}× (peak)",
         "—", "reported"),
        (f"Memory of `replay` over {count(events)} events: peak", mb("rss_replay_peak_kb"), "—", "—", "—", "reported"),
        ("Memory of auth-gateway (VmRSS) idle, after start", mb("rss_gw_idle_kb"), "—", "—", "—", "reported"),
        ("Memory of auth-gateway during its hot read: peak / at end",
         f"{mb('rss_gw_read_peak_kb')} / {mb('rss_gw_read_end_kb')}", f"idle: {mb('rss_gw_idle_kb')}",
         f"{num('rss_gw_read_peak_kb') / num('rss_gw_idle_kb'):.2f}× (peak)", "—", "reported"),
        ("Memory of auth-gateway during its POST: peak / at end",
         f"{mb('rss_gw_post_peak_kb')} / {mb('rss_gw_post_end_kb')}", f"idle: {mb('rss_gw_post_idle_kb')}",
         f"{num('rss_gw_post_peak_kb') / num('rss_gw_post_idle_kb'):.2f}× (peak)", "—", "reported"),
    ]

    def ms(key):
        return f"{num(key) / 1000:.2f} ms"

    def us(cores, rate):
        return f"{cores / rate * 1e6:,.0f} µs"

    def per_event(cpu_seconds):
        return f"{cpu_seconds / events * 1e6:.1f} µs"

    others = {}  # run -> cores used by processes outside the benchmark

    def cores(prefix, server=None, behind=None):
        """server / PostgreSQL / client / interrupts / other, in cores; a server in front of another
        (the gateway before the service) shows both, as "front + behind"."""
        used = num(prefix + "_cpu_postgres") + num(prefix + "_cpu_client") + num(prefix + "_cpu_interrupts")
        server_text = "—"
        if server:
            used += num(f"{prefix}_cpu_{server}")
            server_text = r[f"{prefix}_cpu_{server}"]
        if behind:
            used += num(f"{prefix}_cpu_{behind}")
            server_text += f" + {r[f'{prefix}_cpu_{behind}']}"
        other = max(0.0, num(prefix + "_cpu_machine") - used)
        others[prefix] = other
        return (f"{server_text} / {r[prefix + '_cpu_postgres']} / {r[prefix + '_cpu_client']} / "
                f"{r[prefix + '_cpu_interrupts']} / {other:.2f}")

    def wrk_row(name, prefix, server, behind=None):
        rate = num(prefix + "_rps")
        server_us = us(num(f"{prefix}_cpu_{server}"), rate)
        if behind:
            server_us += f" + {us(num(f'{prefix}_cpu_{behind}'), rate)}"
        return (f"| {name} | {count(rate)} req/s | {ms(prefix + '_p50_us')} | {ms(prefix + '_p99_us')} | "
                f"{r[prefix + '_status_errors']} status, {r[prefix + '_socket_errors']} socket | "
                f"{cores(prefix, server, behind)} | "
                f"{server_us} / {us(num(prefix + '_cpu_postgres'), rate)} |")

    def pgbench_row(name, prefix):
        rate = num(prefix + "_tps")
        return (f"| {name} | {count(rate)} tps | {r[prefix + '_latency_ms']} ms (mean) | — | "
                f"{r.get(prefix + '_failed') or '0'} failed | {cores(prefix)} | "
                f"— / {us(num(prefix + '_cpu_postgres'), rate)} |")

    cpus = r["cpus"]
    lines = [
        "# Benchmarks",
        "",
        "Figures for `locations-service`, and for `auth-gateway` in front of it, each set against a limit measured",
        "in the same run on the same machine, so the ratio says how close the service comes to what the machine",
        "can do. Produced by `bench/run.sh` (one command: installs what is missing, starts a private PostgreSQL",
        "with default durability, builds the release binaries, runs everything, stops what it started, rewrites",
        "this file). Raw outputs of the last run are in `bench/results/` (not versioned).",
        "",
        "## Machine",
        "",
        f"- {r['cpu_model']}, {cpus} cores (`nproc`), {count(num('memory_mb'))} MB memory, {r['os']}",
        f"- Run on {r['date']}, commit {r['commit']}; benchmarks took {r['total_seconds']} s; load average "
        f"(1, 5, 15 min) {r['load_before']} before and {r['load_after']} after",
        f"- PostgreSQL {r['postgres_version']} (private cluster, default settings: fsync on, synchronous_commit on, "
        f"shared_buffers 128 MB), nginx {r['nginx_version']}, wrk {r['wrk_version']}, Swift {r['swift_version']}",
        f"- Each server and pgbench first got {r['warmup_seconds']} s of unmeasured load; every measured load lasted {load_s} s.",
        "  Load generator, server and PostgreSQL all share the same cores, as they do in every row.",
        f"- The four throughputs held to a limit (hot read, durable POST, and both through the gateway) were measured in",
        f"  {rounds} rounds, each next to its limit, in an order that flips from one round to the next. A ratio below is",
        f"  the median of its {rounds} rounds' ratios (each round's figure over the same round's limit); a throughput is",
        "  the median of its rounds, and its row in Details is that round. Every round is listed under Rounds.",
        "",
        "## Results",
        "",
        "| Benchmark | Service | Limit (same run) | Ratio | Goal | Result |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]

    def round_cell(subject, limit, ratios, k, limit_figure="rps"):
        return (f"{count(num(f'{subject}_{k}_rps'))} / {count(num(f'{limit}_{k}_{limit_figure}'))} = "
                f"{ratios[k - 1]:.2f}×")

    lines += [
        "",
        "## Rounds",
        "",
        "Each cell: the figure / its limit = the ratio, all from the same round (req/s; pgbench in tps).",
        "",
        "| Round | Hot read / nginx | Durable POST / pgbench -c32 | Gateway hot read / nginx | Gateway POST / service POST |",
        "| --- | --- | --- | --- | --- |",
    ] + [
        f"| {k} | {round_cell('read_service', 'read_nginx', read_ratios, k)} | "
        f"{round_cell('post_service', 'post_pgbench', post_ratios, k, 'tps')} | "
        f"{round_cell('gw_read', gw_limit, gw_read_ratios, k)} | "
        f"{round_cell('gw_post', 'post_service', gw_post_ratios, k)} |"
        for k in range(1, rounds + 1)
    ] + [
        f"| median | {read_ratio:.2f}× (goal ≥ {READ_GOAL}×) | {post_ratio:.2f}× (goal ≥ {POST_GOAL}×) | "
        f"{gw_read_ratio:.2f}× (goal ≥ {GW_READ_GOAL}×) | {gw_post_ratio:.2f}× (goal ≥ {GW_POST_GOAL}×) |",
        f"| rounds at or past the goal | {sum(x >= READ_GOAL for x in read_ratios)} of {rounds} | "
        f"{sum(x >= POST_GOAL for x in post_ratios)} of {rounds} | {sum(x >= GW_READ_GOAL for x in gw_read_ratios)} of {rounds} | "
        f"{sum(x >= GW_POST_GOAL for x in gw_post_ratios)} of {rounds} |",
    ]
    lines += [
        "",
        "## Details",
        "",
        "| Run | Throughput | p50 | p99 | Errors | Cores busy: server / PostgreSQL / client / interrupts / other | "
        "CPU per request: server / PostgreSQL |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        wrk_row("hot read, nginx", "read_nginx", "nginx"),
        wrk_row("hot read, service", "read_service", "service"),
        wrk_row("/healthz, service", "read_health", "service"),
    ] + ([wrk_row("hot read, nginx with the gateway's bytes", "gw_read_nginx", "nginx")]
         if r["gw_read_same_bytes"] != "yes" else []) + [
        wrk_row("hot read, gateway + service", "gw_read", "gateway", "service"),
        wrk_row("POST, service", "post_service", "service"),
        wrk_row("POST, gateway + service", "gw_post", "gateway", "service"),
        pgbench_row("POST, pgbench -c32", "post_pgbench"),
        pgbench_row(f"POST, pgbench -c{r['post_pgbench_pool_clients']}", "post_pgbench_pool"),
        f"| replay, service (the client is `replay`) | {count(events / num('replay_service_seconds'))} events/s | — | — | — | "
        f"{cores('replay_service')} | {per_event(num('replay_service_cpu_client') * num('replay_service_seconds'))} / "
        f"{per_event(num('replay_service_cpu_postgres') * num('replay_service_seconds'))} per event |",
        f"| replay, SQL (the client is psql) | {count(events / num('replay_sql_seconds'))} events/s | — | — | — | "
        f"{cores('replay_sql')} | "
        f"— / {per_event(num('replay_sql_cpu_postgres') * num('replay_sql_seconds'))} per event |",
        "",
        "",
        "Cores are averages over each measured run, 1.0 being one core busy throughout: the server under test,",
        "PostgreSQL (all its processes), the client (wrk, pgbench, `replay` or psql), interrupt work that the",
        "kernel charges to no process (irq and softirq, which is where much of loopback TCP is done), and the",
        "rest: processes that are not part of the benchmark, and time the hypervisor kept (steal). In the",
        "gateway's rows the server is auth-gateway + locations-service behind it.",
        "",
        f"- The POST run answered {count(num('post_service_requests'))} requests and the log gained "
        f"{count(num('post_service_events'))} events (wrk does not count the up to 32 requests still in flight "
        f"when it stops); the service had {r['post_service_db_connections']} PostgreSQL connections open, one of them "
        f"held for LISTEN. Over the service's life PostgreSQL committed {count(num('post_service_all_commits'))} "
        f"transactions in its database for {count(num('post_service_all_events'))} appended events, "
        f"{num('post_service_all_commits') / num('post_service_all_events'):.2f} per event (pgbench: 1).",
        f"- The POST run through the gateway answered {count(num('gw_post_requests'))} requests with one session "
        f"(`Authorization: Bearer`) and the service's log gained {count(num('gw_post_events'))} events. The gateway's "
        f"hot read answered {count(num('gw_read_body_bytes'))} bytes per request, "
        + ("byte for byte the service's." if r["gw_read_same_bytes"] == "yes" else "not the service's bytes, so nginx was measured again on them."),
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
    ]
    if num("read_nginx_cpu_client") >= num("read_nginx_cpu_nginx"):
        nginx_note = (f"In the nginx run wrk needed as much CPU as nginx or more ({r['read_nginx_cpu_client']} against "
                      f"{r['read_nginx_cpu_nginx']} cores): on shared cores the load generator bounds that figure, so "
                      "it is a floor for what nginx can serve and the ratio, if anything, flatters the service.")
    else:
        nginx_note = (f"In the nginx run nginx used {r['read_nginx_cpu_nginx']} cores and wrk "
                      f"{r['read_nginx_cpu_client']}.")
    replay_pg_seconds = num("replay_service_cpu_postgres") * num("replay_service_seconds")
    replay_cpu = num("replay_service_cpu_seconds")
    if replay_cpu > 1.3 * replay_pg_seconds:
        replay_note = ("The replay process is the busier side: it decodes every event row it reads and folds the "
                       "log in memory on one task, while PostgreSQL waits for it.")
    elif replay_pg_seconds > 1.3 * replay_cpu:
        replay_note = "Most of the work is PostgreSQL's: reading the log, loading and indexing the pins."
    else:
        replay_note = ("Neither side fills a core: replay works on one connection, one step at a time (read and "
                       "fold the log, then load the pins, then build each index), so the two mostly take turns "
                       "and their times add up rather than overlap.")
    pool_tps, full_tps = num("post_pgbench_pool_tps"), num("post_pgbench_tps")
    if pool_tps < 0.9 * full_tps:
        pool_note = (f"pgbench keeps 32 transactions in flight ({count(full_tps)} tps); held to the "
                     f"{r['post_pgbench_pool_clients']} connections the service can append on (its pool opened "
                     f"{r['post_service_db_connections']}, one is held for LISTEN) it does {count(pool_tps)} tps, so "
                     "the pool's size accounts for part of the gap.")
    else:
        pool_note = (f"pgbench does {count(full_tps)} tps with 32 connections and {count(pool_tps)} with the "
                     f"{r['post_pgbench_pool_clients']} the service can append on (its pool opened "
                     f"{r['post_service_db_connections']}, one is held for LISTEN): the pool's size is not what holds "
                     "the service back here.")
    cpu_per_post = (num("post_service_cpu_service") + num("post_service_cpu_postgres")
                    + num("post_service_cpu_client")) / num("post_service_rps")
    worst = max(others, key=others.get)
    if others[worst] >= 0.15:
        noise_note = (f"Other processes on the machine also took CPU during this run (up to {others[worst]:.2f} cores, "
                      f"in {worst.replace('_', ' ')}): the figures of the runs they disturbed are lower than the "
                      "machine can do, on whichever side they fell.")
    else:
        noise_note = "Nothing else on the machine took a noticeable share of the CPU during this run."
    gw_post_cpu = (num("gw_post_cpu_gateway") + num("gw_post_cpu_service") + num("gw_post_cpu_postgres")
                   + num("gw_post_cpu_client")) / num("gw_post_rps")
    gw_read_gateway_us = us(num("gw_read_cpu_gateway"), num("gw_read_rps"))
    gw_read_service_us = us(num("gw_read_cpu_service"), num("gw_read_rps"))
    feed_lost = int(r.get("gw_read_feed_lost", "0"))
    if feed_lost > 0:
        gw_read_note = (
            f"The gateway's live feed lost locations-service {feed_lost} time{'s' if feed_lost > 1 else ''} between "
            "its start and the end of its hot read (`HTTPClientError.readTimeout`: the feed's long poll asks the service to wait up to 20 s "
            "for a change, and the gateway's HTTP client gives up reading after 10 s), and the cached list is only "
            "trusted while the feed follows the log; with no writes the feed never caught up, so every read went "
            f"on to the service: {gw_read_gateway_us} of gateway CPU and {gw_read_service_us} of service CPU per "
            f"{gw_body_kb:.0f} KB response, against {us(num('read_service_cpu_service'), num('read_service_rps'))} "
            f"for the service answering alone and {us(num('read_nginx_cpu_nginx'), num('read_nginx_rps'))} for nginx. "
            "Keeping the long poll under the client's read timeout (or the timeout above the wait) would let the "
            "gateway answer from its cache.")
    else:
        gw_read_note = (
            "The gateway answered the default list from its own cache (its live feed drops it when the log "
            f"moves): {gw_read_gateway_us} of gateway CPU per {gw_body_kb:.0f} KB response and {gw_read_service_us} "
            f"in the service, against {us(num('read_service_cpu_service'), num('read_service_rps'))} for the "
            f"service's own hot read and {us(num('read_nginx_cpu_nginx'), num('read_nginx_rps'))} for nginx: the "
            "same HTTP stack's per-request cost as the service's.")
    # One bullet per line of Markdown, whatever its length.
    lines += ["- " + " ".join(parts) for parts in [
        [f"**Shared cores.** {cpus} cores carry everything at once: the load generator (wrk or pgbench), the server",
         "under test and PostgreSQL; whatever CPU one of them uses, the others cannot.", noise_note],
        [f"**Hot read.** nginx spends {us(num('read_nginx_cpu_nginx'), num('read_nginx_rps'))} of CPU per",
         f"{body_kb:.0f} KB response, the service {us(num('read_service_cpu_service'), num('read_service_rps'))}.",
         "The service's smallest route, `/healthz`, already costs",
         f"{us(num('read_health_cpu_service'), num('read_health_rps'))}: most of the gap is the per-request cost of",
         "the HTTP stack (NIO event loop, then a Swift concurrency task per request, Hummingbird's router and",
         "middlewares, the hops between the two thread pools), not the cached bytes being sent.",
         nginx_note],
        ["**Durable POST.** Every append waits for its WAL flush (synchronous_commit on), so throughput comes from",
         "group commit: the more transactions wait for the same flush, the more commit per flush.", pool_note,
         "What the service adds is CPU on the same cores:",
         f"{us(num('post_service_cpu_service'), num('post_service_rps'))} per POST in the service and",
         f"{us(num('post_service_cpu_postgres'), num('post_service_rps'))} in PostgreSQL",
         f"({num('post_service_all_commits') / num('post_service_all_events'):.2f} commits per event: the append, and",
         "the NOTIFY that tells other replicas the log moved), against",
         f"{us(num('post_pgbench_cpu_postgres'), num('post_pgbench_tps'))} for pgbench's transaction. With {cpus}",
         f"cores for all of it, {cpu_per_post * 1e6:,.0f} µs per POST (service, PostgreSQL and wrk together) allows",
         f"about {float(cpus) / cpu_per_post:,.0f} POSTs/s."],
        ["**Through the gateway.**", gw_read_note,
         "A POST is the service's POST plus a second HTTP exchange on the same cores: the gateway finds the session",
         "in its own memory (PostgreSQL is asked at most once a minute per session) and forwards the pin on a",
         "kept-alive connection of the same event loop, so the request never leaves the thread that read it; its",
         "live feed, with no stream open, only asks the service how far the log has moved. Per POST",
         f"that is {us(num('gw_post_cpu_gateway'), num('gw_post_rps'))} of gateway CPU, "
         f"{us(num('gw_post_cpu_service'), num('gw_post_rps'))} in the service and",
         f"{us(num('gw_post_cpu_postgres'), num('gw_post_rps'))} in PostgreSQL, against",
         f"{us(num('post_service_cpu_service'), num('post_service_rps'))} and",
         f"{us(num('post_service_cpu_postgres'), num('post_service_rps'))} for the service's own POST:",
         f"{gw_post_cpu * 1e6:,.0f} µs per POST in all (wrk included), which {cpus} cores allow about",
         f"{float(cpus) / gw_post_cpu:,.0f} times a second. The service and PostgreSQL spend more per POST here than",
         "under their own load: at the lower rate fewer posts wait for, and share, each commit."],
        [f"**Replay.** The replay process used {num('replay_service_cpu_seconds'):.1f} s of CPU in",
         f"{num('replay_service_seconds'):.1f} s while PostgreSQL kept {r['replay_service_cpu_postgres']} cores busy",
         f"({replay_pg_seconds:.1f} s of CPU).", replay_note,
         "The SQL rebuild is one sort inside PostgreSQL (default work_mem, so partly on disk) with no round trips."],
        [f"**Memory.** The running service stays small and flat ({mb('rss_idle_kb')} idle); it grows with open",
         f"connections and their buffers, not with the log. So does the gateway ({mb('rss_gw_idle_kb')} idle,",
         f"{mb('rss_gw_read_peak_kb')} and {mb('rss_gw_post_peak_kb')} at the peaks of its two loads). `replay` holds the latest state of every pin in memory",
         f"before loading it: {mb('rss_replay_peak_kb')} at peak for {count(live_pins)} pins."],
    ]]
    # The sections other benchmarks write (fuzzing, the command line, the web client, the live fan-out) stay.
    write_sections(target, lines)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
