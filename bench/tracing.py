"""What tracing costs: the hot read and a pin's POST through the gateway (each with locations-service
behind it), with OTEL_EXPORTER_OTLP_ENDPOINT set, every request traced and its spans exported over
OTLP/HTTP to a collector on loopback that answers every export at once (Tests/tracing/otlp_receiver.py
--discard), against the same system with the setting unset, measured alternately in the same run. No
goal of its own: the goals of BENCHMARKS.md are met with tracing off (the main run), and this section says
what turning it on takes from them. Writes the "Tracing's cost" section."""
import statistics
import sys

from install import ensure
from limits import FIRST_NAMES, LOAD_SECONDS, ROUNDS, SUMMARY_LUA, WARMUP_SECONDS, in_order, seed_read_pins
from processes import RESULTS_DIR, BenchError, Stack, free_port, log, request, student_session, wrk_summary
from report import stamp, write_sections

# As the main run's loads through the gateway: 64 connections reading, 32 posting.
READ_CONNECTIONS, POST_CONNECTIONS = 64, 32


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
    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    systems = {}
    for name, env in [("off", {}), ("on", traced)]:
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
        "the gateway's read and POST, tracing off and on")
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

    ratios = {load: statistics.median(on / off for on, off in zip(rates[(load, "on")], rates[(load, "off")])) for load in loads}
    section = [
        "## Tracing's cost",
        "",
        "`bench/run.py tracing`: the gateway with locations-service behind it, on loopback, with",
        "`OTEL_EXPORTER_OTLP_ENDPOINT` set (every request traced, the default sampler; the spans exported over",
        "OTLP/HTTP to a collector on loopback that answers each export at once) against the same system without",
        f"it. Reads: wrk, {READ_CONNECTIONS} connections, GET latest-100; POSTs: wrk, {POST_CONNECTIONS} connections,",
        "`bench/gateway-post.lua` with 8 students' sessions (a POST is 5 spans in the gateway, 4 in the service).",
        f"{WARMUP_SECONDS} s of warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS} s, the order flipped each round;",
        "the ratio is the median of each round's ratio. fsync off on both clusters: this measures the CPU",
        f"that tracing takes. Release build; {stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "| through the gateway | tracing off (median req/s) | tracing on (median req/s) | on / off |",
        "| --- | --- | --- | --- |",
    ]
    for load, title in [("read", "hot read"), ("post", "POST a pin")]:
        section.append(f"| {title} | {statistics.median(rates[(load, 'off')]):,.0f} | "
                       f"{statistics.median(rates[(load, 'on')]):,.0f} | **{ratios[load]:.2f}×** |")
    section += ["", "Rounds (req/s, off / on): " + "; ".join(
        f"{load} " + ", ".join(f"{off:,.0f} / {on:,.0f}" for off, on in zip(rates[(load, 'off')], rates[(load, 'on')]))
        for load in loads) + ".", ""]
    write_sections(section)
    log("tracing's cost: " + ", ".join(f"{load} {ratio:.2f}x untraced" for load, ratio in ratios.items())
        + "; wrote the Tracing's cost section of BENCHMARKS.md")
