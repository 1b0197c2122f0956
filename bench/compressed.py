"""The hot read as real clients ask for it, compressed: the latest 100 from locations-service and through
the gateway with `Accept-Encoding: gzip, deflate, br` (what URLSession and browsers send; brotli is chosen)
against nginx with brotli_static serving the same brotli bytes, and with `Accept-Encoding: gzip` against
nginx with gzip_static serving the same gzip bytes; each measured in rounds, alternately. The goal: at least
1.0x nginx. Also the bytes a client gets for the latest 100 in each coding, and, for information, SwiftNIO
alone answering the same coded bytes (bench/floor). Writes the "Compressed hot read" section of BENCHMARKS.md."""
import gzip
import statistics

from bench.install import ensure, ensure_module
from bench.limits import LOAD_SECONDS, READ_PINS, ROUNDS, SUMMARY_LUA, WARMUP_SECONDS, in_order, seed_read_pins
from bench.processes import FLOOR_MODES, BenchError, Stack, log, request
from bench.report import stamp, write_sections
from bench.tracing import run_wrk

CONNECTIONS = 64
GOAL = 1.0
# (what the client sends, the coding it gets, who sends it)
CLIENTS = [("gzip, deflate, br", "br", "iOS's URLSession and browsers"), ("gzip", "gzip", "scripts asking for gzip")]


def decoded(coding, body):
    import brotli  # installed by `run`
    return gzip.decompress(body) if coding == "gzip" else brotli.decompress(body)


def fetch(url, headers, coding, plain, what):
    """The body of a GET of URL with HEADERS, checked to be PLAIN coded in CODING."""
    status, body = request(url, headers=headers)
    if status != 200:
        raise BenchError(f"{what} answered {status}")
    if coding and decoded(coding, body) != plain:
        raise BenchError(f"{what}'s {coding} answer does not decode to the plain one")
    return body


def run(bench):
    ensure("wrk", "nginx", "libnginx-mod-http-brotli-static")
    ensure_module("brotli", "Brotli")
    binaries = bench.binaries("locations-service", "auth-gateway", "HTTPFloor", log_name="compressed-build")
    stack = Stack(bench, "compressed", binaries)
    service = stack.service
    log(f"compressed hot read: seeding {READ_PINS} pins")
    seed_read_pins(service, bench.token)
    gateway = stack.gateway()
    token = {"Authorization": f"Bearer {bench.token}"}
    plain = fetch(service.url(), token, None, None, "the service's read")
    bodies = bench.scratch("compressed-bodies")
    (bodies / "latest.json").write_bytes(plain)
    sizes = {"identity": len(plain)}
    servers = {}
    for asked, coding, _ in CLIENTS:
        accept = {"Accept-Encoding": asked}
        service_body = fetch(service.url(), {**token, **accept}, coding, plain, "the service's coded read")
        # The gateway keeps the list once fetched: a few reads fill its cache before anything is measured.
        for _ in range(5):
            gateway_body = fetch(gateway.url(), accept, coding, plain, "the gateway's coded read")
        if gateway_body != service_body:
            raise BenchError(f"the gateway's {coding} bytes differ from the service's")
        sizes[coding] = len(service_body)
        (bodies / f"latest.json.{coding}").write_bytes(service_body)
        nginx = bench.start_nginx(bodies / "latest.json", f"compressed-{coding}", coded=(coding, bodies / f"latest.json.{coding}"))
        status, served = request(nginx.url(), headers=accept)
        if status != 200 or served != service_body:
            raise BenchError(f"nginx does not serve the same {coding} bytes")
        # For information: SwiftNIO alone, its HTTP parser and one handler, answering the same coded bytes.
        floor = bench.start_floor(binaries, bodies / f"latest.json.{coding}", "parsed")
        servers[coding] = {"nginx": nginx, "service": service, "gateway": gateway, "floor": floor}

    def args(name, asked):
        headers = ["-H", f"Accept-Encoding: {asked}"]
        return [*headers, "-H", f"Authorization: Bearer {bench.token}", "-s", SUMMARY_LUA] if name == "service" else \
            [*headers, "-s", SUMMARY_LUA]

    log(f"compressed hot read: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s")
    rates = {}
    for asked, coding, _ in CLIENTS:
        for name, server in servers[coding].items():
            run_wrk(bench, f"compressed-{coding}-{name}-warmup", server.url(), CONNECTIONS, WARMUP_SECONDS, args(name, asked))
            rates[coding, name] = []
    for round_number in range(1, ROUNDS + 1):
        for asked, coding, _ in CLIENTS:
            for name in in_order(round_number, ["nginx", "service", "gateway", "floor"]):
                server = servers[coding][name]
                rates[coding, name].append(run_wrk(bench, f"compressed-{coding}-{name}-{round_number}", server.url(),
                                                   CONNECTIONS, LOAD_SECONDS, args(name, asked)))
        service.expect_alive("the compressed hot read")
        gateway.expect_alive("the compressed hot read")
        log(f"compressed hot read: round {round_number} of {ROUNDS} done")

    rows, verdicts = [], []
    for asked, coding, who in CLIENTS:
        module = "gzip_static" if coding == "gzip" else "brotli_static"
        for name in ["service", "gateway", "floor"]:
            ratios = [ours / limit for ours, limit in zip(rates[coding, name], rates[coding, "nginx"])]
            ratio = statistics.median(ratios)
            verdict = "met" if ratio >= GOAL else "NOT met"
            if name != "floor":
                verdicts.append(f"{name} {coding} {ratio:.2f}x ({verdict})")
            label = {"service": "locations-service", "gateway": "through auth-gateway",
                     "floor": f"SwiftNIO alone, {FLOOR_MODES['parsed']} (bench/floor; for information)"}[name]
            goal = "—" if name == "floor" else f"≥ {GOAL}×: {verdict}"
            rows.append(f"| `{asked}` ({who}) → {coding} | {label} | {statistics.median(rates[coding, name]):,.0f} | "
                        f"nginx `{module} on`: {statistics.median(rates[coding, 'nginx']):,.0f} | **{ratio:.2f}×** | "
                        f"{goal} |")
    rounds = []
    for _, coding, _ in CLIENTS:
        for name in ["service", "gateway", "floor"]:
            rounds.append(f"{coding}, {name} / nginx: " + ", ".join(
                f"{ours:,.0f} / {limit:,.0f}" for ours, limit in zip(rates[coding, name], rates[coding, "nginx"])))
    section = [
        "## Compressed hot read",
        "",
        f"`bench/run.py compressed`: the latest 100 ({READ_PINS} pins seeded as the main run seeds them) asked for",
        "as real clients ask, with `Accept-Encoding`, from locations-service (with its token) and through the",
        "gateway (from its cache), against nginx serving the very same coded bytes from a file beside the plain",
        "one (`gzip_static` or Debian's `brotli_static` module, `gzip_vary on`). wrk -t2 -c64 with the header;",
        f"{WARMUP_SECONDS} s of warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS} s, the order flipped each round;",
        "a ratio is the median of each round's ratio. Every coded answer was checked to decode to the plain one,",
        "and the gateway's bytes to be the service's. In the same rounds, for information: SwiftNIO alone",
        "(bench/floor) answering the same coded bytes, pre-built, after NIO's HTTP/1.1 parser and one handler.",
        f"Release build; {stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "What a client gets for the latest 100: "
        + ", ".join(f"{coding} {size:,} bytes" for coding, size in sizes.items())
        + f" (brotli {sizes['identity'] / sizes['br']:.1f} and gzip {sizes['identity'] / sizes['gzip']:.1f} times smaller).",
        "",
        "| client asks | server | median req/s | limit (same run), median req/s | ratio | goal |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "Rounds (req/s): " + "; ".join(rounds) + ".",
        "",
    ]
    write_sections(section)
    log("compressed hot read: " + ", ".join(verdicts))
