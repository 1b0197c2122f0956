"""The soak: mixed traffic through the gateway for 30 minutes (MINUTES): wrk reading and posting back to back,
each of its connections kept for the whole run, as a proxy in front of the gateway keeps its own; logins;
live-feed subscribers coming and going, and a crowd of 5,000 that comes and leaves. Every 5 s: both
services' resident memory and open descriptors, and the gateway's count of answers. Reports the slopes, and
what the gateway holds once the crowd has left; fails when a service's memory grows faster than
SLOPE_BOUND_KB away from the crowd. Writes the "Soak" section."""
import csv
import json
import os
import random
import selectors
import socket
import statistics
import threading
import time

from bench.install import ensure
from bench.processes import NO_CAPS, RESULTS_DIR, BenchError, Stack, log, post_json, raise_open_files, request, setting, student_session, \
    wrk_summary
from bench.procfs import open_fds, rss_kb
from bench.report import stamp, write_sections

STEADY_STREAMS, CROWD, CROWD_FROM, CROWD_TO = 200, 5000, 0.4, 0.5
# The most a service's resident memory may grow a minute, least squares over the samples of a calm stretch
# (from 20% of the run to the crowd, and from 60% to its end). The leak this guards against
# kept 24 bytes for every answer from before the router on a kept-alive connection: at the 600 such
# answers a second this load gets on 2 cores (reads and posts; each post fanned out to every stream), 0.9 MB
# a minute, four times the bound. 200 kB a minute is under 300 MB a day, what an operator would see on a
# dashboard but not yet be woken by, and more than a run without the leak shows (BENCHMARKS.md, "Soak").
SLOPE_BOUND_KB = 200
READ, POST = "GET /v1/StudentLocation", "POST /v1/StudentLocation"


def open_stream(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET /v1/StudentLocation/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    sock.setblocking(False)
    return sock


def streams(port, seconds, stop):
    """Keeps STEADY_STREAMS streams open, each for 5 to 30 s, and the crowd during its window; reads and
    drops what they are sent. Counts streams that the server closed or refused."""
    selector = selectors.DefaultSelector()
    steady, crowd = {}, []  # socket -> when it leaves
    started = time.monotonic()
    refused = 0

    def add():
        nonlocal refused
        try:
            sock = open_stream(port)
        except OSError:
            refused += 1
            return None
        selector.register(sock, selectors.EVENT_READ)
        return sock

    def drop(sock):
        selector.unregister(sock)
        sock.close()

    while not stop.is_set():
        now = time.monotonic()
        progress = (now - started) / seconds
        for sock, leaves in list(steady.items()):
            if now >= leaves:
                drop(sock)
                del steady[sock]
        while len(steady) < STEADY_STREAMS:
            sock = add()
            if sock is None:
                break
            steady[sock] = now + random.uniform(5, 30)
        if CROWD_FROM <= progress < CROWD_TO and not crowd:
            crowd = [sock for sock in (add() for _ in range(CROWD)) if sock]
        if progress >= CROWD_TO and crowd:
            for sock in crowd:
                drop(sock)
            crowd = []
        for key, _ in selector.select(timeout=0.2):
            try:
                closed = not key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:  # (a stream the server reset is closed as well)
                closed = True
            if closed:
                refused += 1
                drop(key.fileobj)
                steady.pop(key.fileobj, None)
                if key.fileobj in crowd:
                    crowd.remove(key.fileobj)
    log(f"soak: streams closed or refused by the server: {refused}")


def logins(gateway, stop):
    email = f"soak-login-{os.getpid()}@example.com"
    post_json(gateway + "/v1/accounts", {"email": email, "password": "soak password 1", "firstName": "Soak", "lastName": "Login"})
    failures = 0
    while not stop.wait(0.5):
        status, _ = post_json(gateway + "/v1/session", {"udacity": {"username": email, "password": "soak password 1"}})
        failures += status not in (200, 201)
    log(f"soak: failed logins: {failures}")


def sample(pid):
    return rss_kb(pid) or 0, open_fds(pid)


def answers(gateway):
    """The gateway's answers so far to the read and to the post, from both doors, by its /metrics (the
    count of each route's timer, one series a class of status)."""
    counts = {READ: 0, POST: 0}
    status, text = request(gateway + "/metrics", timeout=4)
    if status != 200:
        return None  # the crowd's minute may keep it from answering in time: the sample says nothing
    for line in text.decode().splitlines():
        if not line.startswith("onthemap_http_request_duration_seconds_count{"):
            continue
        for route in counts:
            if f'route="{route}"' in line:
                counts[route] += float(line.rsplit(" ", 1)[1])
    return counts[READ], counts[POST]


def sample_side(gateway, gateway_pid, service_pid, seconds, samples):
    """About 200 live streams at any time, each held 5 to 30 s; from 40% to 50% of the run a crowd of 5,000
    more; a login every 0.5 s; every 5 s a sample of VmRSS (kB), open descriptors, and the gateway's count of
    answers to the read and the post, into SAMPLES (CSV)."""
    port = int(gateway.rsplit(":", 1)[1])
    stop = threading.Event()
    threads = [threading.Thread(target=streams, args=(port, seconds, stop)), threading.Thread(target=logins, args=(gateway, stop))]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    with open(samples, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["seconds", "gateway_rss_kb", "gateway_fds", "service_rss_kb", "service_fds", "reads", "posts"])
        counted = (0, 0)
        while time.monotonic() - started < seconds:
            counted = answers(gateway) or counted
            out.writerow([round(time.monotonic() - started, 1), *sample(gateway_pid), *sample(service_pid), *counted])
            handle.flush()
            time.sleep(5)
    stop.set()
    for thread in threads:
        thread.join()
    time.sleep(7)  # the crowd and the last streams gone, and a look at the connections since: the end state
    with open(samples, "a", newline="") as handle:
        csv.writer(handle).writerow([round(time.monotonic() - started, 1), *sample(gateway_pid), *sample(service_pid), *(answers(gateway) or counted)])


def run(bench):
    seconds = setting("MINUTES", 30) * 60
    ensure("wrk")
    raise_open_files("soak", STEADY_STREAMS + CROWD)
    stack = Stack(bench, "soak", bench.binaries("locations-service", "auth-gateway", log_name="soak-build"), NO_CAPS)
    gateway = stack.gateway()
    session = student_session(gateway, "soak@example.com", "soak password 1", "Soak", "Test")
    samples = RESULTS_DIR / "soak-samples.csv"
    log(f"soak: {seconds // 60} minutes")
    side = threading.Thread(target=sample_side, args=(gateway.base, gateway.pid, stack.service.pid, seconds, samples))
    side.start()
    # 16 readers and 4 writers, each pin of which every live stream gets.
    wrk = {kind: bench.processes.start(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", "bench/soak.lua",
                                        gateway.url(), "--", kind, session], RESULTS_DIR / f"soak-{kind}.txt")
           for kind, connections in [("read", 16), ("post", 4)]}
    for proc in wrk.values():
        bench.processes.finish(proc, seconds + 60)
    side.join()
    runs = {}
    with open(RESULTS_DIR / "soak-wrk.jsonl", "w") as out:
        for kind in wrk:
            runs[kind] = {"kind": kind, **{k: float(v) for k, v in wrk_summary(RESULTS_DIR / f"soak-{kind}.txt").items()}}
            print(json.dumps(runs[kind]), file=out)
            log(json.dumps(runs[kind]))
    report(samples, runs)


def slope(points):
    """Least-squares slope of (x, y) points, per unit of x."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def report(samples, runs):
    """The "Soak" section from the samples (SAMPLES, a CSV file) and wrk's figures (RUNS, by kind); fails past
    the bound."""
    rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(open(samples))]
    seconds = rows[-2]["seconds"] + 5
    crowd = (CROWD_FROM * seconds, CROWD_TO * seconds)
    # The slopes over calm stretches, in kB per minute: from 20% of the run (locations-service's memory
    # climbs for its first 5 minutes of posting back to back, as its pools and buffers reach the sizes the
    # load needs, then holds) to the crowd, and from 60% of the run (the crowd gone, its memory given back)
    # to the end.
    stretches = {
        "before the crowd": [r for r in rows[:-1] if 0.2 * seconds <= r["seconds"] < crowd[0] - 5],
        "after the crowd": [r for r in rows[:-1] if r["seconds"] >= 0.6 * seconds],
    }
    per_minute = lambda key, rows: slope([(r["seconds"] / 60, r[key]) for r in rows])
    slopes = {(name, key): per_minute(key, stretch) for name, stretch in stretches.items() for key in ("gateway_rss_kb", "service_rss_kb")}
    before = [r for r in rows if r["seconds"] < crowd[0]][-1]
    during = max((r for r in rows if crowd[0] <= r["seconds"] <= crowd[1]), key=lambda r: r["gateway_rss_kb"])
    after = rows[-1]
    minutes = int(seconds // 60)
    table = [
        "## Soak",
        "",
        f"`bench/run.py soak`: {minutes} minutes of mixed traffic through the gateway, every connection of wrk kept for the",
        "whole run as a proxy keeps its own: 16 connections reading the latest 100 back to back, 4 posting pins back to",
        f"back (each pin goes to every live stream); a login every 0.5 s; about {STEADY_STREAMS} live streams, each held 5 to 30 s;",
        f"and from {CROWD_FROM:.0%} to {CROWD_TO:.0%} of the run a crowd of {CROWD:,} more streams that then leaves. Release build on",
        "loopback, its own PostgreSQL with fsync off (the soak watches memory and descriptors, not durability);",
        f"{stamp('Services', 'Shared', 'Package.swift')}.",
        "",
        "| Minute | Reads/s | Posts/s | Gateway RSS | Gateway fds | Service RSS | Service fds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for minute in range(minutes):
        start = [r for r in rows[:-1] if r["seconds"] <= minute * 60][-1] if minute else rows[0]
        last = [r for r in rows[:-1] if r["seconds"] <= (minute + 1) * 60][-1]
        span = max(last["seconds"] - start["seconds"], 1)
        table.append(f"| {minute + 1} | {(last['reads'] - start['reads']) / span:,.0f} | {(last['posts'] - start['posts']) / span:,.0f} | "
                     f"{last['gateway_rss_kb'] / 1024:.1f} MB | {int(last['gateway_fds'])} | {last['service_rss_kb'] / 1024:.1f} MB | {int(last['service_fds'])} |")
    errors = sum(r["status_errors"] + r["socket_errors"] for r in runs.values())
    over = [f"{key.split('_')[0]} {name}" for (name, key), value in slopes.items() if value > SLOPE_BOUND_KB]
    table += [
        "",
        f"Resident memory's slopes, least squares over the samples every 5 s, held to at most {SLOPE_BOUND_KB} kB/min:",
        f"before the crowd, gateway {slopes[('before the crowd', 'gateway_rss_kb')]:+.0f} kB/min and locations-service "
        f"{slopes[('before the crowd', 'service_rss_kb')]:+.0f} kB/min; after it,",
        f"gateway {slopes[('after the crowd', 'gateway_rss_kb')]:+.0f} kB/min and locations-service "
        f"{slopes[('after the crowd', 'service_rss_kb')]:+.0f} kB/min{'; past the bound: ' + ', '.join(over) if over else ''}.",
        f"The crowd: gateway RSS {before['gateway_rss_kb'] / 1024:.1f} MB before it, {during['gateway_rss_kb'] / 1024:.1f} MB with it, {after['gateway_rss_kb'] / 1024:.1f} MB",
        f"after everything stopped. wrk over the whole run: reads {runs['read']['rps']:,.0f}/s (p99 {runs['read']['p99_us'] / 1000:.1f} ms), "
        f"posts {runs['post']['rps']:,.0f}/s (p99 {runs['post']['p99_us'] / 1000:.1f} ms);",
        f"{int(errors)} errors in all.",
        "",
    ]
    write_sections(table)
    print("\n".join(table))
    log("wrote the Soak section of BENCHMARKS.md")
    if over:
        raise BenchError(f"soak: memory grew faster than {SLOPE_BOUND_KB} kB/min: {', '.join(over)}")
