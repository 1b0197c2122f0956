"""The hot read over TLS: GET latest-100 from the gateway serving HTTPS itself (TLS_CERT, TLS_KEY), over
HTTP/1.1 (wrk) and over HTTP/2 (h2load), against nginx serving the same bytes with the same certificate
and key, TLS 1.2 and 1.3 only and ALPN offering h2 first as the gateway does, measured alternately in the
same run. Goal: at least 0.8x nginx's throughput for each. Writes the "Hot read over TLS" section."""
import re
import statistics
import subprocess

from bench.install import ensure
from bench.limits import LOAD_SECONDS, ROUNDS, SUMMARY_LUA, WARMUP_SECONDS, in_order, seed_read_pins
from bench.processes import RESULTS_DIR, BenchError, Stack, log, request, trust_ca, wrk_summary
from bench.report import meets, stamp, write_sections

RATIO_GOAL = 0.8
# Requests in flight: 64 connections of one request each over HTTP/1.1, as the plain hot read; over HTTP/2
# 16 connections of 4 streams each, as browsers hold several requests on one connection.
H1_CONNECTIONS = 64
H2_CONNECTIONS, H2_STREAMS = 16, 4


def make_certificate(folder):
    """A CA and a certificate for 127.0.0.1 and localhost signed by it (ECDSA P-256, as Let's Encrypt issues
    by default): the paths of the CA, the certificate and its key."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, request_file = folder / "server.pem", folder / "server.key", folder / "server.csr"
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *curve, "-days", "2", "-subj", "/CN=On The Map bench CA", "-keyout", ca_key, "-out", ca)
    openssl("req", *curve, "-subj", "/CN=localhost", "-keyout", key, "-out", request_file)
    extensions = folder / "server.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", request_file, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
            "-extfile", extensions, "-out", cert)
    for path in (cert, key):
        path.chmod(0o644)  # nginx reads them as root, the gateway as whoever runs the bench
    return ca, cert, key


def run_wrk(bench, name, url, seconds):
    """wrk over HTTP/1.1 (TLS by the URL's scheme): its summary figures."""
    output = RESULTS_DIR / f"{name}.txt"
    bench.processes.run_or_fail(["wrk", "-t2", f"-c{H1_CONNECTIONS}", f"-d{seconds}s", url, "--latency", "-s", SUMMARY_LUA],
                                seconds + 30, output, f"wrk run {name} failed", show=None)
    return wrk_summary(output)


def run_h2load(bench, name, url, seconds):
    """h2load over HTTP/2: requests per second, and whether every request got a 2xx over h2."""
    output = RESULTS_DIR / f"{name}.txt"
    bench.processes.run_or_fail(["h2load", "-t2", f"-c{H2_CONNECTIONS}", f"-m{H2_STREAMS}", f"-D{seconds}", url],
                                seconds + 30, output, f"h2load run {name} failed", show=None)
    text = output.read_text()
    rate = re.search(r"^finished in [0-9.]+s, ([0-9.]+) req/s", text, re.MULTILINE)
    failed = re.search(r"^requests: .* ([0-9]+) failed, ([0-9]+) errored, ([0-9]+) timeout", text, re.MULTILINE)
    codes = re.search(r"^status codes: [0-9]+ 2xx, ([0-9]+) 3xx, ([0-9]+) 4xx, ([0-9]+) 5xx", text, re.MULTILINE)
    if not (rate and failed and codes) or "Application protocol: h2" not in text:
        raise BenchError(f"h2load run {name} did not speak HTTP/2 or printed no figures (bench/results/{name}.txt)")
    if any(int(count) for count in failed.groups() + codes.groups()):
        raise BenchError(f"h2load run {name}: requests failed or answered other than 2xx (bench/results/{name}.txt)")
    return {"rps": rate.group(1)}


def run(bench):
    ensure("wrk", "nghttp2-client", "nginx-light", "openssl")
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="tls-build")
    ca, cert, key = make_certificate(bench.scratch("tls-certificates"))
    trust_ca(ca)
    stack = Stack(bench, "tls", binaries)
    seed_read_pins(stack.service, bench.token)
    gateway = stack.gateway(env={"TLS_CERT": str(cert), "TLS_KEY": str(key)})
    # The gateway keeps the list once fetched; nginx serves the very bytes it answers with.
    for _ in range(5):
        status, body = request(gateway.url())
        if status != 200:
            raise BenchError(f"the gateway's read over HTTPS answered {status}")
    served = bench.scratch("tls-body") / "latest.json"
    served.write_bytes(body)
    nginx = bench.start_nginx(served, "tls", tls=(cert, key))

    loads = {"h1": run_wrk, "h2": run_h2load}
    servers = {"nginx": nginx, "gateway": gateway}
    log(f"hot read over TLS: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: "
        "nginx and the gateway, over HTTP/1.1 and HTTP/2")
    for protocol, load in loads.items():
        for name, server in servers.items():
            load(bench, f"tls-{protocol}-{name}-warmup", server.url(), WARMUP_SECONDS)
    rates = {(protocol, name): [] for protocol in loads for name in servers}
    for round_number in range(1, ROUNDS + 1):
        for protocol, load in loads.items():
            for name in in_order(round_number, list(servers)):
                figures = load(bench, f"tls-{protocol}-{name}-{round_number}", servers[name].url(), LOAD_SECONDS)
                rates[(protocol, name)].append(float(figures["rps"]))
                servers[name].expect_alive(f"the {protocol} load over TLS")
        log(f"hot read over TLS: round {round_number} of {ROUNDS} done")

    ratios = {protocol: statistics.median(gateway_rate / nginx_rate for gateway_rate, nginx_rate in
                                          zip(rates[(protocol, "gateway")], rates[(protocol, "nginx")]))
              for protocol in loads}
    section = [
        "## Hot read over TLS",
        "",
        f"`bench/run.py tls`: GET latest-100 ({len(body):,} bytes) from the gateway serving HTTPS itself",
        "(`TLS_CERT`, `TLS_KEY`: an ECDSA P-256 certificate of a CA made for the run) against nginx serving the",
        "same bytes with the same certificate and key, both TLS 1.2 and 1.3 only with ALPN offering h2 first,",
        f"on loopback. HTTP/1.1: wrk, {H1_CONNECTIONS} connections; HTTP/2: h2load, {H2_CONNECTIONS} connections of",
        f"{H2_STREAMS} streams each. {WARMUP_SECONDS} s of warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS} s, the",
        "order flipped each round; the ratio is the median of each round's ratio. Release build;",
        f"{stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "| | nginx (median req/s) | gateway (median req/s) | gateway / nginx | goal |",
        "| --- | --- | --- | --- | --- |",
    ]
    for protocol, title in [("h1", "HTTP/1.1 over TLS"), ("h2", "HTTP/2")]:
        ratio = ratios[protocol]
        section.append(f"| {title} | {statistics.median(rates[(protocol, 'nginx')]):,.0f} | "
                       f"{statistics.median(rates[(protocol, 'gateway')]):,.0f} | **{ratio:.2f}×** | "
                       f"≥ {RATIO_GOAL}× ({meets(ratio >= RATIO_GOAL)}) |")
    section.append("")
    write_sections(section)
    log("hot read over TLS: " + ", ".join(f"{protocol} {ratio:.2f}x nginx" for protocol, ratio in ratios.items())
        + "; wrote the Hot read over TLS section of BENCHMARKS.md")
