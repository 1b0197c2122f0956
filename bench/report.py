"""BENCHMARKS.md: each benchmark writes the sections it measured and leaves the others, each from its own
run, where they are; and the main report (bench/run.py's tables), written from the figures recorded in
bench/results/results.env alone, so that --report-only can write it again."""
import os
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from bench.processes import FLOOR_MODES, ROOT, output_of
from bench.procfs import CPUS

# The goals each ratio is held to (service figure / limit measured in the same run).
READ_GOAL = 1.0     # hot read: at least 1.0 × nginx's requests/s
REPLAY_GOAL = 1.5   # replay: at most 1.5 × the SQL rebuild's wall-clock time
POST_GOAL = 1.0     # durable POST: at least pgbench's transactions/s
GW_READ_GOAL = 1.0  # hot read through auth-gateway: at least nginx's requests/s
GW_POST_GOAL = 0.85  # POST through auth-gateway: at least 0.85 × the service's own POST requests/s


def split(lines):
    """The lines before the first `## ` heading, and each section as (heading, its lines)."""
    preamble, sections = [], []
    for line in lines:
        if line.startswith("## "):
            sections.append((line, [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return preamble, sections


def trimmed(lines):
    text = "\n".join(lines).strip("\n")
    return [text] if text else []


def write_sections(lines, target=ROOT / "BENCHMARKS.md"):
    """Writes `lines` into `target`: their sections replace those of the same heading (or are added at
    the end), their preamble, if any, the file's; every other section stays as it was."""
    old = open(target, encoding="utf-8").read().split("\n") if os.path.exists(target) else []
    old_preamble, old_sections = split(old)
    new_preamble, new_sections = split(lines)
    new = dict(new_sections)
    blocks = trimmed(new_preamble) or trimmed(old_preamble)
    blocks += [block for heading, body in old_sections for block in trimmed(new.pop(heading, body))]
    blocks += [block for heading, body in new_sections if heading in new for block in trimmed(body)]
    with open(target, "w", encoding="utf-8") as out:
        out.write("\n\n".join(blocks) + "\n")


def commit(*paths):
    """The commit measured, and whether PATHS (the sources of what was measured) differ from it."""
    if not shutil.which("git") or subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode:
        return "unknown"
    changed = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *paths], cwd=ROOT).returncode
    return output_of("git", "rev-parse", "--short", "HEAD").strip() + (" with local changes" if changed else "")


def utc_now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(*paths):
    """When, at which commit (PATHS: the sources measured) and on how many cores a section was measured."""
    return f"run on {utc_now()}, commit {commit(*paths)}, {CPUS} cores"


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def meets(ok):
    return "meets" if ok else "misses"


class Results:
    """Every figure of the run, kept in memory for the report and appended to bench/results/results.env as it
    comes, so that a run that fails still shows what it had measured."""

    def __init__(self, path):
        self.path = path
        self.values = {}
        path.unlink(missing_ok=True)

    def record(self, key, value):
        self.values[key] = str(value)
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(f"{key}={value}\n")

    def record_max(self, key, pattern):
        """KEY: the largest value recorded so far under a key matching PATTERN (a regular expression)."""
        self.record(key, max((value for name, value in self.values.items() if re.fullmatch(pattern, name)), key=float))


def load_results(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return dict(line.partition("=")[::2] for line in lines if line.partition("=")[0])


# The runs measured in every round, with the figure that ranks them.
MEASURED = [("read_nginx", "rps"), ("gw_read_nginx", "rps"), ("read_service", "rps"), ("gw_read", "rps"),
            ("post_service", "rps"), ("gw_post", "rps"), ("post_pgbench", "tps"), ("replay_service", "seconds"),
            ("replay_sql", "seconds"), ("read_floor_parsed", "rps"), ("read_floor_raw", "rps")]

# The runs whose CPU the Details table shows: prefix, and the servers under test in it (a server in
# front of another, the gateway before the service, shows both).
CPU_RUNS = [("read_nginx", ["nginx"]), ("read_service", ["service"]), ("read_health", ["service"]),
            ("gw_read_nginx", ["nginx"]), ("gw_read", ["gateway", "service"]), ("post_service", ["service"]),
            ("gw_post", ["gateway", "service"]), ("post_pgbench", []), ("post_pgbench_pool", []),
            ("replay_service", []), ("replay_sql", []), ("read_floor_parsed", ["floor"]), ("read_floor_raw", ["floor"])]


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def settle_rounds(r):
    """Lets PREFIX_* name the median round of each run measured in rounds (PREFIX_<round>_*): the round
    whose figure (throughput or time) is the median (the lower of the two middle ones when the count is even)."""
    rounds = int(r["rounds"])
    for prefix, figure in MEASURED:
        if f"{prefix}_1_{figure}" not in r:
            continue
        ranked = sorted(range(1, rounds + 1), key=lambda k: float(r[f"{prefix}_{k}_{figure}"]))
        chosen = f"{prefix}_{ranked[(rounds - 1) // 2]}_"
        for key in [key for key in r if key.startswith(chosen)]:
            r[prefix + "_" + key[len(chosen):]] = r[key]


def count(value):
    return f"{value:,.0f}"


def us(cores, rate):
    """CPU per request: cores busy over requests per second, in microseconds."""
    return f"{cores / rate * 1e6:,.0f} µs"


def verdict(ok):
    return "PASS" if ok else "MISS"


def fmt_ratio(value, goal):
    """Two decimals, or three where two would hide which side of the goal the ratio is on."""
    text = f"{value:.2f}"
    return f"{value:.3f}" if goal is not None and float(text) == goal else text


class Figures:
    """The recorded figures (median rounds settled), as the report reads them: `f[key]` as recorded,
    `f.num(key)` as a number."""

    def __init__(self, r):
        settle_rounds(r)
        self.r = r
        self.rounds = int(r["rounds"])
        self.load_seconds = r["load_seconds"]
        self.events = self.num("replay_events")
        self.live_pins = self.num("replay_live_pins")
        self.same_bytes = r["gw_read_same_bytes"] == "yes"
        # The gateway's hot read is held to nginx serving the gateway's bytes.
        self.gw_limit = "read_nginx" if self.same_bytes else "gw_read_nginx"
        self.ratios = {
            "read": self.per_round("read_service", "read_nginx"),
            "post": self.per_round("post_service", "post_pgbench", "tps"),
            "gw_read": self.per_round("gw_read", self.gw_limit),
            "gw_post": self.per_round("gw_post", "post_service"),
            "replay": self.per_round("replay_service", "replay_sql", "seconds", "seconds"),
        }
        self.medians = {name: median(ratios) for name, ratios in self.ratios.items()}
        # SwiftNIO alone answering the hot read's bytes (bench/floor), in runs that measured it.
        self.floors = {mode: median(self.per_round(f"read_floor_{mode}", "read_nginx")) for mode in FLOOR_MODES
                       if f"read_floor_{mode}_1_rps" in r}

    def __getitem__(self, key):
        return self.r[key]

    def num(self, key):
        return float(self.r[key])

    def mb(self, key):
        return f"{self.num(key) / 1024:.1f} MB"

    def ms(self, key):
        return f"{self.num(key) / 1000:.2f} ms"

    def per_event(self, cpu_seconds):
        return f"{cpu_seconds / self.events * 1e6:.1f} µs"

    def per_request(self, prefix, process, rate_figure="rps"):
        """CPU per request of PROCESS in run PREFIX."""
        return us(self.num(f"{prefix}_cpu_{process}"), self.num(f"{prefix}_{rate_figure}"))

    def per_round(self, subject, limit, limit_figure="rps", figure="rps"):
        """The subject's figure (a throughput, or replay's time) over its limit's, round by round."""
        return [self.num(f"{subject}_{k}_{figure}") / self.num(f"{limit}_{k}_{limit_figure}")
                for k in range(1, self.rounds + 1)]

    def other_cores(self, prefix, servers):
        """Cores busy during run PREFIX that neither its servers, PostgreSQL, the client nor interrupts used."""
        used = sum(self.num(f"{prefix}_cpu_{part}") for part in ["postgres", "client", "interrupts", *servers])
        return max(0.0, self.num(prefix + "_cpu_machine") - used)


def machine_section(f):
    rounds, cpus = f.rounds, f["cpus"]
    return [
        "# Benchmarks",
        "",
        "Figures for `locations-service`, and for `auth-gateway` in front of it, each set against a limit measured",
        "in the same run on the same machine, so the ratio says how close the service comes to what the machine",
        "can do. Produced by `bench/run.py` (one command: installs what is missing, starts a private PostgreSQL",
        "with default durability, builds the release binaries, runs everything, stops what it started, rewrites",
        "this file). Raw outputs of the last run are in `bench/results/` (not versioned).",
        "",
        "## Machine",
        "",
        f"- {f['cpu_model']}, {cpus} cores (`nproc`), {count(f.num('memory_mb'))} MB memory, {f['os']}",
        f"- Run on {f['date']}, commit {f['commit']}; benchmarks took {f['total_seconds']} s; load average "
        f"(1, 5, 15 min) {f['load_before']} before and {f['load_after']} after",
        f"- PostgreSQL {f['postgres_version']} (private cluster, default settings: fsync on, synchronous_commit on, "
        f"shared_buffers 128 MB), nginx {f['nginx_version']}, wrk {f['wrk_version']}, Swift {f['swift_version']}",
        f"- Each server and pgbench first got {f['warmup_seconds']} s of unmeasured load; every measured load lasted "
        f"{f.load_seconds} s.",
        "  Load generator, server and PostgreSQL all share the same cores, as they do in every row.",
        "- The four throughputs held to a limit (hot read, durable POST, and both through the gateway) and replay were",
        f"  measured in {rounds} rounds, each next to its limit, in an order that flips from one round to the next. A ratio",
        f"  below is the median of its {rounds} rounds' ratios (each round's figure over the same round's limit); a",
        "  throughput or a time is the median of its rounds, and its row in Details is that round. Every round is listed",
        "  under Rounds.",
        "",
    ]


def throughput_rows(f):
    """The Results rows of the four throughputs and the two replay rows, each against its limit."""
    rounds, load_s, num = f.rounds, f.load_seconds, f.num
    read_ratio, post_ratio = f.medians["read"], f.medians["post"]
    gw_read_ratio, gw_post_ratio = f.medians["gw_read"], f.medians["gw_post"]
    replay_ratio = f.medians["replay"]
    gw_source = ("forwarded to the service: the live feed was not following"
                 if int(f.r.get("gw_read_feed_lost", "0")) > 0 else "from the gateway's cache")
    if f.same_bytes:
        gw_limit_text = f"nginx, same bytes (the hot read's nginx above): {count(num('read_nginx_rps'))} req/s"
    else:
        gw_limit_text = f"nginx, the gateway's bytes as a static file: {count(num('gw_read_nginx_rps'))} req/s"
    return [
        ("Hot read: `GET /v1/StudentLocation` (latest 100, "
         f"{num('read_body_bytes') / 1024:.1f} KB), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('read_service_rps'))} req/s",
         f"nginx, same bytes as a static file: {count(num('read_nginx_rps'))} req/s",
         f"{fmt_ratio(read_ratio, READ_GOAL)}×", f"≥ {READ_GOAL}×", verdict(read_ratio >= READ_GOAL)),
        ("Hot read, against the service's own `/healthz` (smallest route of the same HTTP stack; for information)",
         f"{count(num('read_service_rps'))} req/s",
         f"`GET /healthz`: {count(num('read_health_rps'))} req/s",
         f"{num('read_service_rps') / num('read_health_rps'):.2f}×", "—", "—"),
    ] + [
        (f"Hot read's floor: SwiftNIO alone answering the same bytes, pre-built, {FLOOR_MODES[mode]} "
         "(bench/floor; for information)",
         f"{count(num(f'read_floor_{mode}_rps'))} req/s",
         f"nginx, same bytes as a static file: {count(num('read_nginx_rps'))} req/s",
         f"{ratio:.2f}×", "—", "—")
        for mode, ratio in f.floors.items()
    ] + [
        (f"Replay: `locations-service replay`, {count(f.events)} events → {count(f.live_pins)} pins (wall clock), "
         f"{rounds} rounds",
         f"{num('replay_service_seconds'):.2f} s",
         f"one SQL `INSERT … SELECT DISTINCT ON` + the same 3 indexes: {num('replay_sql_seconds'):.2f} s",
         f"{fmt_ratio(replay_ratio, REPLAY_GOAL)}×", f"≤ {REPLAY_GOAL}×", verdict(replay_ratio <= REPLAY_GOAL)),
        ("Replay, against the SQL rebuild without indexes (for information)",
         f"{num('replay_service_seconds'):.2f} s",
         f"SQL rebuild, no indexes: {num('replay_sql_noindex_seconds'):.2f} s",
         f"{num('replay_service_seconds') / num('replay_sql_noindex_seconds'):.2f}×", "—", "—"),
        (f"Durable POST: `POST /v1/StudentLocation` (one event + one pin, fsync on), wrk -c32, {rounds} × {load_s} s",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c32 -j2, one POST's transaction each (bench/append.sql): {count(num('post_pgbench_tps'))} tps",
         f"{fmt_ratio(post_ratio, POST_GOAL)}×", f"≥ {POST_GOAL}×", verdict(post_ratio >= POST_GOAL)),
        (f"Durable POST, against pgbench with the service's {f['post_pgbench_pool_clients']} append connections "
         "(for information)",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c{f['post_pgbench_pool_clients']}: {count(num('post_pgbench_pool_tps'))} tps",
         f"{num('post_service_rps') / num('post_pgbench_pool_tps'):.2f}×", "—", "—"),
        ("Through auth-gateway: hot read `GET /v1/StudentLocation` (latest 100, "
         f"{num('gw_read_body_bytes') / 1024:.1f} KB, {gw_source}), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('gw_read_rps'))} req/s", gw_limit_text,
         f"{fmt_ratio(gw_read_ratio, GW_READ_GOAL)}×", f"≥ {GW_READ_GOAL}×", verdict(gw_read_ratio >= GW_READ_GOAL)),
        ("Through auth-gateway: `POST /v1/StudentLocation` with `Authorization: Bearer <session id>`, "
         f"wrk -c32, {rounds} × {load_s} s",
         f"{count(num('gw_post_rps'))} req/s",
         f"locations-service's own durable POST (above): {count(num('post_service_rps'))} req/s",
         f"{fmt_ratio(gw_post_ratio, GW_POST_GOAL)}×", f"≥ {GW_POST_GOAL}×", verdict(gw_post_ratio >= GW_POST_GOAL)),
    ]


def memory_rows(f):
    """The Results rows of resident memory, each load's peak against the same server idle."""
    num, mb = f.num, f.mb

    def during(what, peak, end, idle):
        return (f"{what}: peak / at end", f"{mb(peak)} / {mb(end)}", f"idle: {mb(idle)}",
                f"{num(peak) / num(idle):.2f}× (peak)", "—", "reported")

    return [
        ("Memory (VmRSS) idle, after start", mb("rss_idle_kb"), "—", "—", "—", "reported"),
        during("Memory during the hot read", "rss_read_peak_kb", "rss_read_end_kb", "rss_idle_kb"),
        during("Memory during the durable POST", "rss_post_peak_kb", "rss_post_end_kb", "rss_post_idle_kb"),
        (f"Memory of `replay` over {count(f.events)} events: peak", mb("rss_replay_peak_kb"), "—", "—", "—", "reported"),
        ("Memory of auth-gateway (VmRSS) idle, after start", mb("rss_gw_idle_kb"), "—", "—", "—", "reported"),
        during("Memory of auth-gateway during its hot read", "rss_gw_read_peak_kb", "rss_gw_read_end_kb", "rss_gw_idle_kb"),
        during("Memory of auth-gateway during its POST", "rss_gw_post_peak_kb", "rss_gw_post_end_kb",
               "rss_gw_post_idle_kb"),
    ]


def results_section(f):
    return [
        "## Results",
        "",
        "| Benchmark | Service | Limit (same run) | Ratio | Goal | Result |",
        "| --- | --- | --- | --- | --- | --- |",
    ] + ["| " + " | ".join(row) + " |" for row in throughput_rows(f) + memory_rows(f)] + [""]


def rounds_section(f):
    rounds, ratios, medians = f.rounds, f.ratios, f.medians

    def cell(name, subject, limit, k, limit_figure="rps"):
        return (f"{count(f.num(f'{subject}_{k}_rps'))} / {count(f.num(f'{limit}_{k}_{limit_figure}'))} = "
                f"{ratios[name][k - 1]:.2f}×")

    def at_goal(name, goal, at_most=False):
        return f"{sum((x <= goal) if at_most else (x >= goal) for x in ratios[name])} of {rounds}"

    def replay_cell(k):
        return (f"{f.num(f'replay_service_{k}_seconds'):.2f} s / {f.num(f'replay_sql_{k}_seconds'):.2f} s = "
                f"{ratios['replay'][k - 1]:.2f}×")

    return [
        "## Rounds",
        "",
        "Each cell: the figure / its limit = the ratio, all from the same round (req/s; pgbench in tps; replay "
        "in seconds, so lower is better).",
        "",
        "| Round | Hot read / nginx | Durable POST / pgbench -c32 | Gateway hot read / nginx | Gateway POST / service POST "
        "| Replay / SQL |",
        "| --- | --- | --- | --- | --- | --- |",
    ] + [
        f"| {k} | {cell('read', 'read_service', 'read_nginx', k)} | "
        f"{cell('post', 'post_service', 'post_pgbench', k, 'tps')} | "
        f"{cell('gw_read', 'gw_read', f.gw_limit, k)} | "
        f"{cell('gw_post', 'gw_post', 'post_service', k)} | {replay_cell(k)} |"
        for k in range(1, rounds + 1)
    ] + [
        f"| median | {medians['read']:.2f}× (goal ≥ {READ_GOAL}×) | {medians['post']:.2f}× (goal ≥ {POST_GOAL}×) | "
        f"{medians['gw_read']:.2f}× (goal ≥ {GW_READ_GOAL}×) | {medians['gw_post']:.2f}× (goal ≥ {GW_POST_GOAL}×) | "
        f"{medians['replay']:.2f}× (goal ≤ {REPLAY_GOAL}×) |",
        f"| rounds at or past the goal | {at_goal('read', READ_GOAL)} | {at_goal('post', POST_GOAL)} | "
        f"{at_goal('gw_read', GW_READ_GOAL)} | {at_goal('gw_post', GW_POST_GOAL)} | "
        f"{at_goal('replay', REPLAY_GOAL, at_most=True)} |",
        "",
    ]


def details_section(f):
    num, ms = f.num, f.ms
    servers = dict(CPU_RUNS)

    def cores(prefix):
        """server / PostgreSQL / client / interrupts / other, in cores; a server in front of another (the
        gateway before the service) shows both, as "front + behind"."""
        server_text = " + ".join(f[f"{prefix}_cpu_{server}"] for server in servers[prefix]) or "—"
        return (f"{server_text} / {f[prefix + '_cpu_postgres']} / {f[prefix + '_cpu_client']} / "
                f"{f[prefix + '_cpu_interrupts']} / {f.other_cores(prefix, servers[prefix]):.2f}")

    def wrk_row(name, prefix):
        server_us = " + ".join(f.per_request(prefix, server) for server in servers[prefix])
        return (f"| {name} | {count(num(prefix + '_rps'))} req/s | {ms(prefix + '_p50_us')} | {ms(prefix + '_p99_us')} | "
                f"{f[prefix + '_status_errors']} status, {f[prefix + '_socket_errors']} socket | {cores(prefix)} | "
                f"{server_us} / {f.per_request(prefix, 'postgres')} |")

    def pgbench_row(name, prefix):
        return (f"| {name} | {count(num(prefix + '_tps'))} tps | {f[prefix + '_latency_ms']} ms (mean) | — | "
                f"{f.r.get(prefix + '_failed') or '0'} failed | {cores(prefix)} | "
                f"— / {f.per_request(prefix, 'postgres', 'tps')} |")

    def replay_row(name, prefix, client_per_event):
        seconds = num(f"{prefix}_seconds")
        return (f"| {name} | {count(f.events / seconds)} events/s | — | — | — | {cores(prefix)} | "
                f"{client_per_event} / {f.per_event(num(f'{prefix}_cpu_postgres') * seconds)} per event |")

    replay_client = f.per_event(num("replay_service_cpu_client") * num("replay_service_seconds"))
    return [
        "## Details",
        "",
        "| Run | Throughput | p50 | p99 | Errors | Cores busy: server / PostgreSQL / client / interrupts / other | "
        "CPU per request: server / PostgreSQL |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        wrk_row("hot read, nginx", "read_nginx"),
        wrk_row("hot read, service", "read_service"),
        wrk_row("/healthz, service", "read_health"),
    ] + [wrk_row(f"hot read, SwiftNIO's floor ({mode})", f"read_floor_{mode}") for mode in f.floors] + (
        [] if f.same_bytes else [wrk_row("hot read, nginx with the gateway's bytes", "gw_read_nginx")]) + [
        wrk_row("hot read, gateway + service", "gw_read"),
        wrk_row("POST, service", "post_service"),
        wrk_row("POST, gateway + service", "gw_post"),
        pgbench_row("POST, pgbench -c32", "post_pgbench"),
        pgbench_row(f"POST, pgbench -c{f['post_pgbench_pool_clients']}", "post_pgbench_pool"),
        replay_row("replay, service (the client is `replay`)", "replay_service", replay_client),
        replay_row("replay, SQL (the client is psql)", "replay_sql", "—"),
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
        f"when it stops); the service had {f['post_service_db_connections']} PostgreSQL connections open, one of them "
        f"held for LISTEN. Over the service's life PostgreSQL committed {count(num('post_service_all_commits'))} "
        f"transactions in its database for {count(num('post_service_all_events'))} appended events, "
        f"{num('post_service_all_commits') / num('post_service_all_events'):.2f} per event (pgbench: 1).",
        f"- The POST run through the gateway answered {count(num('gw_post_requests'))} requests with one session "
        f"(`Authorization: Bearer`) and the service's log gained {count(num('gw_post_events'))} events. The gateway's "
        f"hot read answered {count(num('gw_read_body_bytes'))} bytes per request, "
        + ("byte for byte the service's." if f.same_bytes
           else "not the service's bytes, so nginx was measured again on them."),
        f"- Replay log: {count(f.events)} events in {f['replay_transactions']} transactions over "
        f"{count(f.live_pins + num('replay_deleted_streams'))} streams ({count(num('replay_deleted_streams'))} "
        f"ending in LocationDeleted), {f['replay_events_mb']} MB with indexes, written by bench/generate-events.sql in "
        f"{num('replay_generate_seconds'):.0f} s.",
        f"- After the replay, `replay --verify` reported no difference ({num('replay_verify_seconds'):.1f} s), and the "
        f"swapped-in read model equals the SQL rebuild row for row: {count(f.live_pins)} = {count(num('replay_sql_pins'))} "
        f"rows, {f['replay_differing_rows']} differing.",
        "",
    ]


def noise_note(f):
    others = {prefix: f.other_cores(prefix, servers) for prefix, servers in CPU_RUNS
              if f"{prefix}_cpu_machine" in f.r}
    worst = max(others, key=others.get)
    if others[worst] >= 0.15:
        return (f"Other processes on the machine also took CPU during this run (up to {others[worst]:.2f} cores, "
                f"in {worst.replace('_', ' ')}): the figures of the runs they disturbed are lower than the "
                "machine can do, on whichever side they fell.")
    return "Nothing else on the machine took a noticeable share of the CPU during this run."


def nginx_note(f):
    if f.num("read_nginx_cpu_client") >= f.num("read_nginx_cpu_nginx"):
        return (f"In the nginx run wrk needed as much CPU as nginx or more ({f['read_nginx_cpu_client']} against "
                f"{f['read_nginx_cpu_nginx']} cores): on shared cores the load generator bounds that figure, so "
                "it is a floor for what nginx can serve and the ratio, if anything, flatters the service.")
    return f"In the nginx run nginx used {f['read_nginx_cpu_nginx']} cores and wrk {f['read_nginx_cpu_client']}."


def floor_note(f):
    """What SwiftNIO alone does with the hot read's bytes (bench/floor), in runs that measured it."""
    if len(f.floors) < 2:
        return ""
    parsed, raw = f.floors["parsed"], f.floors["raw"]
    text = (f"SwiftNIO alone, answering the same pre-built bytes after its HTTP/1.1 parser with one handler, reached "
            f"{parsed:.2f}× nginx in the same rounds ({f.per_request('read_floor_parsed', 'floor')} of CPU per answer), "
            f"and {raw:.2f}× with no parser at all ({f.per_request('read_floor_raw', 'floor')}); the service reached "
            f"{f.medians['read'] / parsed:.2f} of the first.")
    if parsed < READ_GOAL <= raw:
        text += (f" So the {READ_GOAL}× goal lies above what the services' HTTP parser allows on this machine: it would "
                 "take reading requests without it.")
    elif raw < READ_GOAL:
        text += f" So the {READ_GOAL}× goal lies above what SwiftNIO does on this machine, with or without its parser."
    return text


def pool_note(f):
    pool_tps, full_tps = f.num("post_pgbench_pool_tps"), f.num("post_pgbench_tps")
    if pool_tps < 0.9 * full_tps:
        return (f"pgbench keeps 32 transactions in flight ({count(full_tps)} tps); held to the "
                f"{f['post_pgbench_pool_clients']} connections the service can append on (its pool opened "
                f"{f['post_service_db_connections']}, one is held for LISTEN) it does {count(pool_tps)} tps, so "
                "the pool's size accounts for part of the gap.")
    return (f"pgbench does {count(full_tps)} tps with 32 connections and {count(pool_tps)} with the "
            f"{f['post_pgbench_pool_clients']} the service can append on (its pool opened "
            f"{f['post_service_db_connections']}, one is held for LISTEN): the pool's size is not what holds "
            "the service back here.")


def gateway_read_note(f):
    gateway_us, service_us = f.per_request("gw_read", "gateway"), f.per_request("gw_read", "service")
    body_kb = f.num("gw_read_body_bytes") / 1024
    alone_us, nginx_us = f.per_request("read_service", "service"), f.per_request("read_nginx", "nginx")
    feed_lost = int(f.r.get("gw_read_feed_lost", "0"))
    if feed_lost > 0:
        return (
            f"The gateway's live feed lost locations-service {feed_lost} time{'s' if feed_lost > 1 else ''} between "
            "its start and the end of its hot read (`HTTPClientError.readTimeout`: the feed's long poll asks the service to wait up to 20 s "
            "for a change, and the gateway's HTTP client gives up reading after 10 s), and the cached list is only "
            "trusted while the feed follows the log; with no writes the feed never caught up, so every read went "
            f"on to the service: {gateway_us} of gateway CPU and {service_us} of service CPU per "
            f"{body_kb:.0f} KB response, against {alone_us} for the service answering alone and {nginx_us} for nginx. "
            "Keeping the long poll under the client's read timeout (or the timeout above the wait) would let the "
            "gateway answer from its cache.")
    return (
        "The gateway answered the default list from its own cache (its live feed drops it when the log "
        f"moves): {gateway_us} of gateway CPU per {body_kb:.0f} KB response and {service_us} in the service, "
        f"against {alone_us} for the service's own hot read and {nginx_us} for nginx: the same HTTP stack's "
        "per-request cost as the service's.")


def replay_note(f):
    replay_pg_seconds = f.num("replay_service_cpu_postgres") * f.num("replay_service_seconds")
    replay_cpu = f.num("replay_service_cpu_seconds")
    if replay_cpu > 1.3 * replay_pg_seconds:
        return ("The replay process is the busier side: it decodes every event row it reads and folds the "
                "log in memory on one task, while PostgreSQL waits for it.")
    if replay_pg_seconds > 1.3 * replay_cpu:
        return "Most of the work is PostgreSQL's: reading the log, loading and indexing the pins."
    return ("Neither side fills a core: replay works on one connection, one step at a time (read and "
            "fold the log, then load the pins, then build each index), so the two mostly take turns "
            "and their times add up rather than overlap.")


def limits_section(f):
    num, mb, cpus = f.num, f.mb, f["cpus"]
    cpu_per_post = (num("post_service_cpu_service") + num("post_service_cpu_postgres")
                    + num("post_service_cpu_client")) / num("post_service_rps")
    gw_post_cpu = (num("gw_post_cpu_gateway") + num("gw_post_cpu_service") + num("gw_post_cpu_postgres")
                   + num("gw_post_cpu_client")) / num("gw_post_rps")
    replay_pg_seconds = num("replay_service_cpu_postgres") * num("replay_service_seconds")
    bullets = [
        [f"**Shared cores.** {cpus} cores carry everything at once: the load generator (wrk or pgbench), the server",
         "under test and PostgreSQL; whatever CPU one of them uses, the others cannot.", noise_note(f)],
        [f"**Hot read.** nginx spends {f.per_request('read_nginx', 'nginx')} of CPU per",
         f"{num('read_body_bytes') / 1024:.0f} KB response, the service {f.per_request('read_service', 'service')}.",
         "The service answers it before its router, from bytes rendered once per version of the list; its",
         f"smallest route through the router, `/healthz` (15 bytes), costs {f.per_request('read_health', 'service')}.",
         "What is left of the gap is the per-request cost of the HTTP stack (NIO's event loop, its HTTP parser,",
         "the handlers each request passes), not the bytes being sent.",
         nginx_note(f), floor_note(f)],
        ["**Durable POST.** Every append waits for its WAL flush (synchronous_commit on), so throughput comes from",
         "group commit: the more transactions wait for the same flush, the more commit per flush.", pool_note(f),
         "What the service adds is CPU on the same cores:",
         f"{f.per_request('post_service', 'service')} per POST in the service and",
         f"{f.per_request('post_service', 'postgres')} in PostgreSQL",
         f"({num('post_service_all_commits') / num('post_service_all_events'):.2f} commits per event: the append, and",
         "the NOTIFY that tells other replicas the log moved), against",
         f"{f.per_request('post_pgbench', 'postgres', 'tps')} for pgbench's transaction. With {cpus}",
         f"cores for all of it, {cpu_per_post * 1e6:,.0f} µs per POST (service, PostgreSQL and wrk together) allows",
         f"about {float(cpus) / cpu_per_post:,.0f} POSTs/s."],
        ["**Through the gateway.**", gateway_read_note(f),
         "A POST is the service's POST plus a second HTTP exchange on the same cores: the gateway finds the session",
         "in its own memory (PostgreSQL is asked at most once a minute per session) and forwards the pin on a",
         "kept-alive connection of the same event loop, so the request never leaves the thread that read it; its",
         "live feed, with no stream open, only asks the service how far the log has moved. Per POST",
         f"that is {f.per_request('gw_post', 'gateway')} of gateway CPU, "
         f"{f.per_request('gw_post', 'service')} in the service and",
         f"{f.per_request('gw_post', 'postgres')} in PostgreSQL, against",
         f"{f.per_request('post_service', 'service')} and",
         f"{f.per_request('post_service', 'postgres')} for the service's own POST:",
         f"{gw_post_cpu * 1e6:,.0f} µs per POST in all (wrk included), which {cpus} cores allow about",
         f"{float(cpus) / gw_post_cpu:,.0f} times a second. The service and PostgreSQL spend more per POST here than",
         "under their own load: at the lower rate fewer posts wait for, and share, each commit."],
        [f"**Replay.** The replay process used {num('replay_service_cpu_seconds'):.1f} s of CPU in",
         f"{num('replay_service_seconds'):.1f} s while PostgreSQL kept {f['replay_service_cpu_postgres']} cores busy",
         f"({replay_pg_seconds:.1f} s of CPU).", replay_note(f),
         "The SQL rebuild is one sort inside PostgreSQL (default work_mem, so partly on disk) with no round trips."],
        [f"**Memory.** The running service stays small and flat ({mb('rss_idle_kb')} idle); it grows with open",
         f"connections and their buffers, not with the log. So does the gateway ({mb('rss_gw_idle_kb')} idle,",
         f"{mb('rss_gw_read_peak_kb')} and {mb('rss_gw_post_peak_kb')} at the peaks of its two loads). `replay` holds "
         "nothing per pin: PostgreSQL folds the log",
         f"into the new read model in one statement, so {mb('rss_replay_peak_kb')} at peak for {count(f.live_pins)} pins is "
         "the process itself (`bench/run.py replay` shows it flat up to 2,500,000 pins)."],
    ]
    # One bullet per line of Markdown, whatever its length.
    return ["## What limits these figures", ""] + ["- " + " ".join(parts) for parts in bullets]


def write_report(r, target=ROOT / "BENCHMARKS.md"):
    """BENCHMARKS.md's preamble and main sections; the sections other benchmarks write (fuzzing, the command
    line, the web client, the live fan-out) stay as they are."""
    f = Figures(dict(r))
    write_sections(machine_section(f) + results_section(f) + rounds_section(f) + details_section(f)
                   + limits_section(f), target)

