"""The live fan-out: N subscribers on the gateway's /v1/StudentLocation/events, one pin posted through the
gateway, and the time from that POST until the last subscriber has it; against nchan (Debian's
libnginx-mod-nchan, one worker per core) publishing a message of the same size to the same number of
EventSource subscribers, measured by the same client (bench/sse-fanout.c) in the same run. Also the
gateway's resident memory per open stream, and what it holds again once the streams have gone.
Goals: at 50,000 subscribers, at most 1.0x nchan's time and 8 KB per subscriber. The streams come from
several loopback addresses (one has too few ports for 50,000 connections to one server). Writes the "Live
fan-out" section."""
import contextlib
import json
import os
import pwd
import random
import resource
import statistics
import time

from bench.install import ensure
from bench.processes import NO_CAPS, RESULTS_DIR, ROOT, BenchError, Server, Stack, free_port, log, output_of, \
    raise_open_files, request, setting, student_session
from bench.procfs import children_of, rss_kb
from bench.report import load_average, meets, stamp, write_sections
from harness.waiting import poll

TIME_GOAL, KB_GOAL, GOAL_SIZE = 1.0, 8.0, 50000


def http_post(path, body, headers=""):
    """A whole HTTP/1.1 POST of BODY (text) to PATH, as bytes, closing its connection."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Type: application/json\r\n"
            f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}").encode()


def gateway_trigger(marker, session):
    """The POST of a pin whose place is MARKER, with the session."""
    body = (f'{{"mapString":"{marker}","mediaURL":"https://example.com/fanout","latitude":48.8566,'
            f'"longitude":2.3522}}')
    return http_post("/v1/StudentLocation", body, f"Authorization: Bearer {session}\r\n")


def nchan_trigger(marker):
    """The publication of a message as long as the gateway's event for that pin."""
    body = (f'{{"objectId":"AbCdEfGhIj","uniqueKey":"0123456789abcdef0123456789abcdef","firstName":"Fan",'
            f'"lastName":"Out","mapString":"{marker}","mediaURL":"https://example.com/fanout","latitude":48.8566,'
            f'"longitude":2.3522,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}}')
    return http_post("/publish", body)


def start_nchan(bench, work):
    port = free_port()
    (work / "tmp").mkdir()
    template = (ROOT / "bench" / "nchan.conf.template").read_text()
    (work / "nchan.conf").write_text(template.replace("@DIR@", str(work)).replace("@PORT@", str(port)))
    with contextlib.suppress(KeyError, PermissionError):  # nchan's workers run as nobody
        os.chown(work / "tmp", pwd.getpwnam("nobody").pw_uid, -1)
    proc = bench.processes.start(["nginx", "-c", work / "nchan.conf", "-e", work / "nchan-error.log"],
                                 RESULTS_DIR / "fanout-nchan.log")
    nchan = Server("nchan", proc, port, work / "nchan-error.log")
    if poll(lambda: request(nchan.url("/publish"))[0] is not None, 5):
        return nchan
    raise BenchError("nchan did not start")


def run(bench):
    sizes = [int(n) for n in setting("SIZES", "1000 10000 50000", str).split()]
    rounds = setting("ROUNDS", 3)
    ensure("libnginx-mod-nchan", "nginx-light", "gcc", "libc6-dev")
    raise_open_files("fanout", max(sizes))
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="fanout-build")
    work = bench.scratch("fanout")
    client = work / "sse-fanout"
    bench.processes.run_or_fail(["gcc", "-O2", "-Wall", "-o", client, "bench/sse-fanout.c"], 120,
                                RESULTS_DIR / "fanout-gcc.log", "compiling bench/sse-fanout.c failed")
    stack = Stack(bench, "fanout", binaries, NO_CAPS)
    gateway = stack.gateway()
    session = student_session(gateway, "fanout@example.com", "fanout password 1", "Fan", "Out")
    nchan = start_nchan(bench, work)
    trigger = work / "trigger"

    def fan_out(server, marker, n):
        """One measurement by sse-fanout: N streams on SERVER, the trigger sent, and the memory of its processes."""
        pids = [gateway.pid] if server is gateway else [*children_of(nchan.pid), nchan.pid]
        return json.loads(bench.processes.output([client, server.port, "/v1/StudentLocation/events", n, trigger,
                                                  marker, *pids], 600))

    runs = []
    log(f"gateway idle: {rss_kb(gateway.pid)} kB")
    with open(RESULTS_DIR / "fanout.jsonl", "w") as out:
        for n in sizes:
            for round_number in range(1, rounds + 1):
                # The order flips from one round to the next, so a drift of the machine's speed favours neither.
                order = ["gateway", "nchan"] if round_number % 2 else ["nchan", "gateway"]
                for name in order:
                    marker = f"fanout-{name}-{n}-{round_number}-{random.randrange(10**9)}"
                    if name == "gateway":
                        trigger.write_bytes(gateway_trigger(marker, session))
                        line = fan_out(gateway, marker, n)
                        # The streams are gone, and the gateway has looked at its connections (every 5 s): what
                        # it holds now.
                        time.sleep(7)
                        line["rss_left_kb"] = rss_kb(gateway.pid)
                    else:
                        trigger.write_bytes(nchan_trigger(marker))
                        line = fan_out(nchan, marker, n)
                        time.sleep(3)
                    runs.append({"server": name, "round": round_number, **line})
                    print(json.dumps(runs[-1]), file=out, flush=True)
                    log(json.dumps(runs[-1]))
    write_sections(section(runs))


def section(runs):
    nginx = output_of("nginx", "-v").strip().rpartition("/")[2]
    nchan = output_of("dpkg-query", "-W", "-f", "${Version}", "libnginx-mod-nchan")
    sizes = sorted({r["streams"] for r in runs})

    def pick(server, n):
        return sorted((r for r in runs if r["server"] == server and r["streams"] == n), key=lambda r: r["round"])

    def median(values):
        return statistics.median(values) if values else float("nan")

    def times(rs):
        return (f"{median([r['last_ms'] for r in rs]):.0f} / {median([r['p50_ms'] for r in rs]):.0f} / "
                f"{median([r['first_ms'] for r in rs]):.1f} ms")

    lines = [
        "## Live fan-out",
        "",
        "`bench/run.py fanout`: N subscribers on `GET /v1/StudentLocation/events` through the gateway, then one pin",
        "posted through the gateway; the time from sending that POST until the last subscriber has the pin's",
        f"event. The limit: nchan {nchan} (nginx {nginx}, 2 workers) publishing a message of the same size to N",
        "EventSource subscribers, timed from the publishing request the same way. One client for both",
        "(`bench/sse-fanout.c`, epoll, all streams opened and answered before the clock starts, 10,000 from each of",
        "127.0.0.1, 127.0.0.2, ...); the rounds",
        f"alternate which server goes first. Release build on loopback; {stamp('Services', 'Shared', 'Package.swift')}",
        f"(load average {load_average()} at the end).",
        "",
        "| Subscribers | Gateway: last / median / first | nchan: last / median / first | Ratio (median of rounds) | "
        "Gateway memory per stream | Gateway RSS 7 s after they left |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    # The goals are judged at GOAL_SIZE; a run that could not open that many judges its largest size instead.
    judged = GOAL_SIZE if GOAL_SIZE in sizes else max(sizes)
    verdicts = {}
    for n in sizes:
        gateway, limit = pick("gateway", n), pick("nchan", n)
        ratios = [g["last_ms"] / c["last_ms"] for g, c in zip(gateway, limit)]
        ratio = median(ratios)
        kb = median([(r["rss_open_kb"] - r["rss_before_kb"]) / r["streams"] for r in gateway])
        left = median([r["rss_left_kb"] - r["rss_before_kb"] for r in gateway])
        lines.append(f"| {n:,} | {times(gateway)} | {times(limit)} | {ratio:.2f}× ({', '.join(f'{x:.2f}' for x in ratios)}) | "
                     f"{kb:.1f} KB | {left / 1024:+.1f} MB against before they came |")
        if n == judged:
            verdicts = {"time": ratio, "memory": kb}
    lines.append("")
    if judged != GOAL_SIZE:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        lines += [f"**The goals' {GOAL_SIZE:,} subscribers were not measured** (each process of this run could hold at "
                  f"most {limit:,} descriptors, its hard open-file limit), so the goals are judged at {judged:,}, the "
                  "largest size measured.", ""]
    lines += [
        f"**At {judged:,} subscribers: {verdicts['time']:.2f}× nchan's time** ({meets(verdicts['time'] <= TIME_GOAL)} "
        "the goal of at",
        f"most {TIME_GOAL:.1f}×); **{verdicts['memory']:.1f} KB of gateway memory per subscriber** "
        f"({meets(verdicts['memory'] <= KB_GOAL)} the goal of at most {KB_GOAL:.0f} KB).",
        "The gateway's time includes what nchan's does not: the POST itself (session, forwarding, the durable",
        "append) and the change reaching the gateway's feed from locations-service.",
        "",
    ]
    return lines
