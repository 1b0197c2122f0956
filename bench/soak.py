#!/usr/bin/env python3
"""The side of bench/soak.sh that is not wrk: live-feed subscribers coming and going, students logging in,
and a sampler of both services' resident memory and open descriptors; then the report.

    soak.py run GATEWAY_URL GATEWAY_PID SERVICE_PID SECONDS SAMPLES_CSV
        about 200 live streams at any time, each held 5 to 30 s; from 40% to 50% of the run a crowd of
        5,000 more; a login every 0.5 s; every 5 s a sample of VmRSS (kB) and open descriptors.
    soak.py report SAMPLES_CSV WRK_JSONL BENCHMARKS.md DATE COMMIT CPUS
        writes the "Soak" section of BENCHMARKS.md.
"""
import csv
import json
import os
import random
import selectors
import socket
import statistics
import sys
import threading
import time
import urllib.request

STEADY_STREAMS, CROWD, CROWD_FROM, CROWD_TO = 200, 5000, 0.4, 0.5


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
                if not key.fileobj.recv(65536):
                    refused += 1
                    drop(key.fileobj)
                    steady.pop(key.fileobj, None)
                    if key.fileobj in crowd:
                        crowd.remove(key.fileobj)
            except BlockingIOError:
                pass
    print(f"soak: streams closed or refused by the server: {refused}", flush=True)


def logins(gateway, stop):
    def call(path, body):
        request = urllib.request.Request(gateway + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST")
        return urllib.request.urlopen(request, timeout=10).status
    email = f"soak-login-{os.getpid()}@example.com"
    call("/v1/accounts", {"email": email, "password": "soak password 1", "firstName": "Soak", "lastName": "Login"})
    failures = 0
    while not stop.wait(0.5):
        try:
            call("/v1/session", {"udacity": {"username": email, "password": "soak password 1"}})
        except Exception:
            failures += 1
    print(f"soak: failed logins: {failures}", flush=True)


def sample(pid):
    rss = next((int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS:")), 0)
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def run(gateway, gateway_pid, service_pid, seconds, samples):
    port = int(gateway.rsplit(":", 1)[1])
    stop = threading.Event()
    threads = [threading.Thread(target=streams, args=(port, seconds, stop)), threading.Thread(target=logins, args=(gateway, stop))]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    with open(samples, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["seconds", "gateway_rss_kb", "gateway_fds", "service_rss_kb", "service_fds"])
        while time.monotonic() - started < seconds:
            out.writerow([round(time.monotonic() - started, 1), *sample(gateway_pid), *sample(service_pid)])
            handle.flush()
            time.sleep(5)
    stop.set()
    for thread in threads:
        thread.join()
    time.sleep(7)  # the crowd and the last streams gone, and a look at the connections since: the end state
    with open(samples, "a", newline="") as handle:
        csv.writer(handle).writerow([round(time.monotonic() - started, 1), *sample(gateway_pid), *sample(service_pid)])


def slope(points):
    """Least-squares slope of (x, y) points, per unit of x."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def report(samples, wrk_lines, target, date, commit, cpus):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from section import write_sections

    rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(open(samples))]
    runs = [json.loads(line) for line in open(wrk_lines) if line.strip()]
    seconds = rows[-2]["seconds"] + 5
    crowd = (CROWD_FROM * seconds, CROWD_TO * seconds)
    # The slope over the samples away from the crowd (it comes and goes by design), in kB per minute.
    calm = [r for r in rows[:-1] if r["seconds"] < crowd[0] - 5 or r["seconds"] > crowd[1] + 10]
    early = [r for r in calm if r["seconds"] < crowd[0] - 5]
    late = [r for r in rows[:-1] if r["seconds"] >= 0.7 * seconds]
    per_minute = lambda key, rows=calm: slope([(r["seconds"] / 60, r[key]) for r in rows])
    before = [r for r in rows if r["seconds"] < crowd[0]][-1]
    during = max((r for r in rows if crowd[0] <= r["seconds"] <= crowd[1]), key=lambda r: r["gateway_rss_kb"])
    after = rows[-1]
    minutes = sorted({r["minute"] for r in runs})
    table = [
        "## Soak",
        "",
        f"`bench/soak.sh`: {len(minutes)} minutes of mixed traffic through the gateway at a steady pace: wrk reading the",
        "latest 100 (16 connections, 1 ms pause after each answer) and posting pins (4 connections, 200 ms pause; each",
        f"pin goes to every live stream); a login every 0.5 s; about {STEADY_STREAMS} live streams, each held 5 to 30 s; and from",
        f"{CROWD_FROM:.0%} to {CROWD_TO:.0%} of the run a crowd of {CROWD:,} more streams that then leaves. Release build on loopback,",
        f"its own PostgreSQL with default durability; run on {date}, commit {commit}, {cpus} cores.",
        "",
        "| Minute | Reads/s | Read p99 | Posts/s | Post p99 | Gateway RSS | Gateway fds | Service RSS | Service fds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for minute in minutes:
        read = next(r for r in runs if r["minute"] == minute and r["kind"] == "read")
        post = next(r for r in runs if r["minute"] == minute and r["kind"] == "post")
        last = [r for r in rows[:-1] if r["seconds"] <= (minute + 1) * 60][-1]
        table.append(f"| {minute + 1} | {read['rps']:,.0f} | {read['p99_us'] / 1000:.1f} ms | {post['rps']:,.0f} | {post['p99_us'] / 1000:.1f} ms | "
                     f"{last['gateway_rss_kb'] / 1024:.1f} MB | {int(last['gateway_fds'])} | {last['service_rss_kb'] / 1024:.1f} MB | {int(last['service_fds'])} |")
    errors = sum(r["status_errors"] + r["socket_errors"] for r in runs)
    p99s = [r["p99_us"] / 1000 for r in runs if r["kind"] == "read"]
    table += [
        "",
        f"Slopes away from the crowd, least squares over the samples every 5 s: gateway {per_minute('gateway_rss_kb'):+.0f} kB/min and",
        f"{per_minute('gateway_fds'):+.2f} descriptors/min; locations-service {per_minute('service_rss_kb'):+.0f} kB/min and {per_minute('service_fds'):+.2f} descriptors/min.",
        f"Before the crowd alone: gateway {per_minute('gateway_rss_kb', early):+.0f} kB/min; over the last 30% of the run: gateway",
        f"{per_minute('gateway_rss_kb', late):+.0f} kB/min, locations-service {per_minute('service_rss_kb', late):+.0f} kB/min.",
        f"The crowd: gateway RSS {before['gateway_rss_kb'] / 1024:.1f} MB before it, {during['gateway_rss_kb'] / 1024:.1f} MB with it, {after['gateway_rss_kb'] / 1024:.1f} MB",
        f"after everything stopped. Read p99 per minute from {min(p99s):.1f} to {max(p99s):.1f} ms; {int(errors)} errors in all.",
        "",
    ]
    write_sections(target, table)
    print("\n".join(table))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    else:
        report(*sys.argv[2:8])
