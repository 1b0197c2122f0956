"""What tracing costs: the hot read and a pin's POST through the gateway (each with locations-service
behind it), with OTEL_EXPORTER_OTLP_ENDPOINT set and the spans exported over OTLP/HTTP to a collector on
loopback that answers every export at once (Tests/tracing/otlp_receiver.py --discard), at the default
sampler (TRACE_SAMPLE_RATIO 0.1, failures and slow requests kept) and with every request kept
(TRACE_SAMPLE_RATIO=1), against the same system with the setting unset; measured alternately in the same
run. Goals: at least 0.9x untraced at the default sampler; at 100%, at least 0.7x. Writes the "Tracing's
cost" section."""
import statistics
import sys

from bench.install import ensure
from bench.limits import FIRST_NAMES, LOAD_SECONDS, ROUNDS, SUMMARY_LUA, WARMUP_SECONDS, in_order, seed_read_pins
from bench.processes import RESULTS_DIR, BenchError, Stack, free_port, log, request, student_session, wrk_summary
from bench.report import stamp, write_sections

# As the main run's loads through the gateway: 64 connections reading, 32 posting.
READ_CONNECTIONS, POST_CONNECTIONS = 64, 32
# Each traced system against the untraced one: its settings beside the endpoint, and its goal.
TRACED = {"default": ({}, 0.9), "all": ({"TRACE_SAMPLE_RATIO": "1"}, 0.7)}


def run_wrk(bench, name, url, connections, seconds, args=()):
    """One wrk run (the summary script unless ARGS names the POST's, which loads it): requests per second,
    every answer a 2xx."""
    output = RESULTS_DIR / f"{name}.txt"
    script = list(args) or ["-s", SUMMARY_LUA]
    bench.processes.run_or_fail(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", url, "--latency", *script],
                                seconds + 30, output, f"wrk run {name} failed", show=None)
    figures = wrk_summary(output)
    if int(figures["status_errors"]) or int(figures["socket_errors"]):
        raise BenchError(f"wrk run {name}: answers other than 2xx, or socket errors (bench/results/{name}.txt)")
    return float(figures["rps"])


def run(bench):
    ensure("wrk")
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="tracing-build")
    port = free_port()
    bench.processes.start([sys.executable, "Tests/tracing/otlp_receiver.py", "--port", port, "--discard"],
                          RESULTS_DIR / "tracing-collector.log")
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    systems = {}
    for name, env in [("off", {}), *((name, {**endpoint, **settings}) for name, (settings, _) in TRACED.items())]:
        stack = Stack(bench, f"tracing-{name}", binaries, env=env)
        seed_read_pins(stack.service, bench.token)
        gateway = stack.gateway()
        status, _ = request(gateway.url())
        if status != 200:
            raise BenchError(f"the gateway's read (tracing {name}) answered {status}")
        sessions = [student_session(gateway, f"{first.lower()}@example.com", "bench-password", first, "Student")
                    for first in FIRST_NAMES]
        systems[name] = (gateway, ["-s", "bench/gateway-post.lua", "--", *sessions])

    loads = {"read": (READ_CONNECTIONS, False), "post": (POST_CONNECTIONS, True)}
    log(f"tracing's cost: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: "
        "the gateway's read and POST, tracing off, at the default sampler and at 100%")
    for load, (connections, posts) in loads.items():
        for name, (gateway, post_args) in systems.items():
            run_wrk(bench, f"tracing-{load}-{name}-warmup", gateway.url(), connections, WARMUP_SECONDS, post_args if posts else ())
    rates = {(load, name): [] for load in loads for name in systems}
    for round_number in range(1, ROUNDS + 1):
        for load, (connections, posts) in loads.items():
            for name in in_order(round_number, list(systems)):
                gateway, post_args = systems[name]
                rates[(load, name)].append(run_wrk(bench, f"tracing-{load}-{name}-{round_number}", gateway.url(), connections,
                                                   LOAD_SECONDS, post_args if posts else ()))
                gateway.expect_alive(f"the {load} load with tracing {name}")
        log(f"tracing's cost: round {round_number} of {ROUNDS} done")

    def ratio(load, name):
        return statistics.median(on / off for on, off in zip(rates[(load, name)], rates[(load, "off")]))

    section = [
        "## Tracing's cost",
        "",
        "`bench/run.py tracing`: the gateway with locations-service behind it, on loopback, with",
        "`OTEL_EXPORTER_OTLP_ENDPOINT` set (the spans exported over OTLP/HTTP to a collector on loopback that",
        "answers each export at once), at the default sampler (`TRACE_SAMPLE_RATIO` 0.1 of requests traced whole,",
        "failures and requests slower than `TRACE_SLOW_MS` 500 as their request's span alone; a cached read from",
        "memory leaves no span) and with every request kept (`TRACE_SAMPLE_RATIO=1`), against the same system",
        f"without it. Reads: wrk, {READ_CONNECTIONS} connections, GET latest-100; POSTs: wrk, {POST_CONNECTIONS} connections,",
        "`bench/gateway-post.lua` with 8 students' sessions (a traced POST with a session the gateway holds is 2 spans in the gateway, its request and its hop, and 3 in the service: its request, the group commit and its statement).",
        f"{WARMUP_SECONDS} s of warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS} s, the order flipped each round;",
        "a ratio is the median of each round's ratio. fsync off on both clusters: this measures the CPU",
        f"that tracing takes. Release build; {stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "| through the gateway | tracing off (median req/s) | default sampler (median req/s) | default / off | goal | "
        "every request (median req/s) | all / off | goal |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = []
    for load, title in [("read", "hot read"), ("post", "POST a pin")]:
        cells = [title, f"{statistics.median(rates[(load, 'off')]):,.0f}"]
        for name, (_, goal) in TRACED.items():
            value = ratio(load, name)
            verdict = "met" if value >= goal else "NOT met"
            verdicts.append(f"{load} {name} {value:.2f}x ({verdict})")
            cells += [f"{statistics.median(rates[(load, name)]):,.0f}", f"**{value:.2f}×**", f"≥ {goal}×: {verdict}"]
        section.append("| " + " | ".join(cells) + " |")
    section += ["", "Rounds (req/s, off / default / every request): " + "; ".join(
        f"{load} " + ", ".join(" / ".join(f"{rates[(load, name)][k]:,.0f}" for name in systems) for k in range(ROUNDS))
        for load in loads) + ".", ""]
    write_sections(section)
    log("tracing's cost: " + ", ".join(verdicts) + "; wrote the Tracing's cost section of BENCHMARKS.md")
