"""Resuming a live stream: a client that reconnects to the gateway's /v1/StudentLocation/events with
`Last-Event-ID` is sent what it missed, read from the log, up to the resume window (`LIVE_RESUME_EVENTS`,
10,000 events by default); from further back it gets one `reset` frame instead. Over a log of RESUME_PINS x 4
events (1,000,000 by default), sequentially, RESUME_REQUESTS of each kind a round, ROUNDS rounds, the order of
the kinds flipped from one round to the next:
  - a fresh stream: from connecting until `: connected` has been read (the limit: a stream with nothing to
    catch up on);
  - a resume at the edge of the window (the cursor with exactly 10,000 events after it): until the 10,000th
    event has been read, the last being the head of the log;
  - a resume from `0-0`, the whole log behind it: until the `reset` frame has been read, with no event before it.
The client is a small one over raw sockets (HTTP/1.1, the chunked body decoded after the clock stops; every
answer is checked then). Also the CPU time the gateway, locations-service and PostgreSQL spend on each resume
at the edge. No goal: the ratios of the p99s to the fresh stream's are stated. Writes the "Resuming a live
stream" section."""
import socket
import statistics
import time

from bench.limits import ROUNDS, in_order
from bench.moments import p99
from bench.processes import NO_CAPS, RESULTS_DIR, BenchError, Stack, log, setting
from bench.procfs import HZ, process_ticks
from bench.report import load_average, stamp, write_sections

RESUME_PINS = setting("RESUME_PINS", 250_000)  # 4 events per pin
RESUME_REQUESTS = setting("RESUME_REQUESTS", 100)  # of each kind, in each round
WINDOW = 10_000  # the gateway's default LIVE_RESUME_EVENTS, which this measures (the setting is left unset)
WARMUP = 10  # unmeasured requests of each kind before the rounds, after the checking one
PATH = "/v1/StudentLocation/events"
EVENT_TYPES = {"LocationPosted", "LocationUpdated", "LocationDeleted", "LocationHidden", "LocationUnhidden"}
KINDS = ["fresh", "edge", "reset"]
TITLES = {"fresh": "a fresh stream, until `: connected`",
          "edge": f"a resume {WINDOW:,} events back (the window's edge), until the {WINDOW:,}th event",
          "reset": "a resume from `0-0`, until `reset`"}


def figure(value):
    """A number to three significant figures or so (milliseconds, ratios)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def cursor(text):
    """A log cursor (`1234-56`) as a pair that orders as the log does."""
    transaction, _, position = text.partition("-")
    return int(transaction), int(position)


def cursor_before(pg, database, count):
    """The event COUNT places before the head in commit order (the head for 0), as a cursor."""
    return pg.value(database, "SELECT transaction_id::text || '-' || position FROM locations.events "
                              f"ORDER BY transaction_id DESC, position DESC OFFSET {count} LIMIT 1")


class Stream:
    """One GET of the live stream over a raw socket, read until a condition holds on what came. While the
    clock runs, what arrives is only searched (by bytes methods); `frames` decodes it afterwards."""

    def __init__(self, port, last_event_id=None):
        self.started = time.perf_counter()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        resume = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id else ""
        self.sock.sendall(f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                          f"{resume}\r\n".encode())
        self.raw = bytearray()
        self.body_at = None  # where the body starts in raw, once the head has come
        self.frame_end = None  # what ends a frame in raw: its blank line, and the chunk's CRLF when chunked
        self.complete = None  # raw up to here holds whole frames only
        self.events = 0  # frames with an `event:` line among them
        self.resets = 0  # and `event: reset` ones

    def receive(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise BenchError(f"the gateway closed a live stream (after {len(self.raw):,} bytes: "
                             f"{bytes(self.raw[:300])!r})")
        self.raw += data
        if self.body_at is None:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.raw[:end]).decode("latin-1")
            if not head.startswith("HTTP/1.1 200"):
                raise BenchError(f"the live stream answered {head.splitlines()[0]!r}")
            self.chunked = "\r\ntransfer-encoding: chunked" in head.lower()
            self.frame_end = b"\n\n\r\n" if self.chunked else b"\n\n"
            self.body_at = self.complete = end + 4
        end = self.raw.rfind(self.frame_end, self.complete)
        if end >= 0:
            # An `event:` line follows the `id:` line of its frame; JSON data holds no raw newline.
            self.events += self.raw.count(b"\nevent: ", self.complete, end)
            self.resets += self.raw.count(b"\nevent: reset\n", self.complete, end + 1)
            self.complete = end + len(self.frame_end)

    def read_until(self, done):
        """Reads until DONE(self) holds: the seconds since connecting."""
        try:
            while self.body_at is None or not done(self):
                self.receive()
        except (socket.timeout, TimeoutError):
            raise BenchError(f"a live stream sent nothing more for {self.sock.gettimeout():.0f} s, after "
                             f"{self.events:,} events; its last bytes: {bytes(self.raw[-300:])!r}") from None
        return time.perf_counter() - self.started

    def linger(self, seconds):
        """Reads whatever else comes in SECONDS (for the checks: nothing more should)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                self.receive()
            except (socket.timeout, TimeoutError):
                break

    def close(self):
        self.sock.close()

    def body(self):
        """The body's whole frames, chunks decoded."""
        raw = bytes(self.raw[self.body_at:self.complete])
        if not self.chunked:
            return raw
        body, at = bytearray(), 0
        while at < len(raw):
            end = raw.index(b"\r\n", at)
            size = int(raw[at:end].split(b";")[0], 16)
            if size == 0 or raw[end + 2 + size:end + 4 + size] != b"\r\n":
                raise BenchError(f"a live stream's chunk is malformed at byte {at:,}: {raw[at:at + 80]!r}")
            body += raw[end + 2:end + 2 + size]
            at = end + 4 + size
        return bytes(body)

    def frames(self):
        """Each whole frame as {field: value} (`comment` holding its comment lines)."""
        frames = []
        for text in self.body().decode().split("\n\n")[:-1]:
            frame = {}
            for line in text.split("\n"):
                if line.startswith(":"):
                    frame["comment"] = frame.get("comment", "") + line[1:].strip()
                else:
                    name, _, value = line.partition(":")
                    frame[name] = value[1:] if value.startswith(" ") else value
            frames.append(frame)
        return frames


def opened(frames, what):
    """The frames after the opening one (`retry: 3000` and `: connected`), which must come first."""
    if not frames or frames[0].get("retry") != "3000" or frames[0].get("comment") != "connected":
        raise BenchError(f"{what}: the stream did not open with `retry: 3000` and `: connected` ({frames[:1]})")
    return [frame for frame in frames[1:] if set(frame) != {"comment"}]  # heartbeats aside


def check_fresh(stream):
    rest = opened(stream.frames(), "a fresh stream")
    if rest:
        raise BenchError(f"a fresh stream was sent more than its opening: {rest[:2]}")


def check_edge(stream, after, head):
    """Exactly WINDOW events, each with a type and data, in commit order after AFTER, the last the head; no reset."""
    events = opened(stream.frames(), f"a resume from {after}")
    resets = [frame for frame in events if frame.get("event") == "reset"]
    if resets:
        raise BenchError(f"a resume from {after}, {WINDOW:,} events back, was sent a reset ({resets[0]}) after "
                         f"{events.index(resets[0]):,} events")
    bad = [frame for frame in events if frame.get("event") not in EVENT_TYPES or "id" not in frame
           or not frame.get("data", "").startswith("{")]
    if bad:
        raise BenchError(f"a resume from {after}: frames that are not events: {bad[:2]}")
    ids = [cursor(frame["id"]) for frame in events]
    if len(ids) != WINDOW or ids[-1] != cursor(head) or ids[0] <= cursor(after) \
            or any(a >= b for a, b in zip(ids, ids[1:])):
        raise BenchError(f"a resume from {after} ({WINDOW:,} events before the head {head}) was sent {len(ids):,} "
                         f"events, from {events[0]['id'] if events else '-'} to {events[-1]['id'] if events else '-'}"
                         f"{'' if all(a < b for a, b in zip(ids, ids[1:])) else ', not in commit order'}")


def check_reset(stream, head):
    """One `reset`, at the head, with no event before it, and nothing after it."""
    frames = opened(stream.frames(), "a resume from 0-0")
    if not frames or frames[0].get("event") != "reset" or frames[0].get("id") != head or frames[0].get("data") != "{}":
        raise BenchError(f"a resume from 0-0 ({stream.events - 1:,} events before the reset) was sent "
                         f"{frames[:2]} first, not `id: {head}`, `event: reset`, `data: {{}}`")
    if len(frames) > 1:
        raise BenchError(f"a resume from 0-0 was sent more after its reset: {frames[1:3]}")


def connected(stream):
    return stream.raw.find(b"\n: connected\n\n", stream.body_at, stream.complete) >= 0


class Client:
    """The three kinds of request against one gateway: each returns its time, in seconds, checked."""

    def __init__(self, gateway, head, edge):
        self.port, self.head, self.edge = gateway.port, head, edge
        self.edge_bytes = 0

    def fresh(self, check=False):
        stream = Stream(self.port)
        try:
            seconds = stream.read_until(connected)
            if check:
                stream.linger(1)
            check_fresh(stream)
        finally:
            stream.close()
        return seconds

    def resume_edge(self, check=False):
        stream = Stream(self.port, self.edge)
        try:
            # (A reset ends it too: the check then says what came.)
            seconds = stream.read_until(lambda s: s.events >= WINDOW or s.resets)
            if check:
                stream.linger(2)
            check_edge(stream, self.edge, self.head)
            if check:
                self.edge_bytes = len(stream.body())
        finally:
            stream.close()
        return seconds

    def resume_reset(self, check=False):
        stream = Stream(self.port, "0-0")
        try:
            seconds = stream.read_until(lambda s: s.events >= 1)
            if check:
                stream.linger(2)
            check_reset(stream, self.head)
        finally:
            stream.close()
        return seconds


def write_log(bench, stack):
    """The log, written into the stack's database by bench/generate-events.sql as the replay log is (the
    trigger that keeps the map's past moments off meanwhile: nothing here reads them), then settled."""
    pg, database = stack.postgres, "postgres"
    log(f"resuming a live stream: writing {RESUME_PINS * 4:,} events over {RESUME_PINS:,} pins")
    pg.psql(database, "-c", "ALTER TABLE locations.events DISABLE TRIGGER events_pin_versions")
    start = time.monotonic()
    pg.write_events(database, RESUME_PINS, RESULTS_DIR / "resume-generate.log")
    seconds = time.monotonic() - start
    pg.psql(database, "-c", "ALTER TABLE locations.events ENABLE TRIGGER events_pin_versions",
            "-c", "VACUUM (ANALYZE) locations.events", "-c", "CHECKPOINT")
    return seconds


def run(bench):
    binaries = bench.binaries("locations-service", "auth-gateway", log_name="resume-build")
    # One client address for every stream: the per-address caps lifted, as for the other live benchmarks.
    stack = Stack(bench, "resume", binaries, NO_CAPS)
    generate_seconds = write_log(bench, stack)
    pg, database = stack.postgres, "postgres"
    events = pg.events_in(database)
    head, edge = cursor_before(pg, database, 0), cursor_before(pg, database, WINDOW)
    gateway = stack.gateway()
    client = Client(gateway, head, edge)
    requests = {"fresh": client.fresh, "edge": client.resume_edge, "reset": client.resume_reset}

    log(f"resuming a live stream: {events:,} events, head {head}, {WINDOW:,} events back {edge}; checking each kind")
    for kind in KINDS:
        requests[kind](check=True)
    for _ in range(WARMUP):
        for kind in KINDS:
            requests[kind]()
    log(f"resuming a live stream: {ROUNDS} rounds of {RESUME_REQUESTS} requests of each kind, sequentially")
    pids = {"gateway": gateway.pid, "service": stack.service.pid, "postgres": pg.postmaster_pid()}
    times = {kind: [] for kind in KINDS}
    rounds = []
    cpu = {name: 0 for name in pids}
    for round_number in range(1, ROUNDS + 1):
        this_round = {}
        for kind in in_order(round_number, KINDS):
            before = {name: process_ticks(pid) for name, pid in pids.items()}
            measured = [requests[kind]() * 1000 for _ in range(RESUME_REQUESTS)]
            if kind == "edge":
                for name, pid in pids.items():
                    cpu[name] += process_ticks(pid) - before[name]
            times[kind] += measured
            this_round[kind] = p99(measured)
        gateway.expect_alive("the resumes")
        stack.service.expect_alive("the resumes")
        rounds.append(this_round)
        log(f"resuming a live stream: round {round_number} of {ROUNDS}: p99 " +
            ", ".join(f"{kind} {figure(this_round[kind])} ms" for kind in KINDS))

    edges = ROUNDS * RESUME_REQUESTS
    cpu_ms = {name: ticks / HZ / edges * 1000 for name, ticks in cpu.items()}
    tail = {kind: p99(values) for kind, values in times.items()}
    middle = {kind: statistics.median(values) for kind, values in times.items()}
    ratios = {kind: tail[kind] / tail["fresh"] for kind in KINDS}
    fresh_rounds = [r["fresh"] for r in rounds]
    lines = [
        "## Resuming a live stream",
        "",
        f"`bench/run.py resume`: `GET /v1/StudentLocation/events` through the gateway (locations-service behind it, "
        f"on loopback) over a log of {events:,} events ({RESUME_PINS:,} pins, bench/generate-events.sql, written in "
        f"{generate_seconds:.0f} s), the resume window (`LIVE_RESUME_EVENTS`) at its default of {WINDOW:,}. Three "
        f"kinds of request, one at a time on a new connection each, from a small Python client over raw sockets: a "
        f"fresh stream, timed from connecting until `: connected` has been read (the limit: a stream with nothing to "
        f"catch up on); a resume with `Last-Event-ID` at the window's edge (the cursor with exactly {WINDOW:,} events "
        f"after it), timed until the {WINDOW:,}th event has been read ({client.edge_bytes / 1e6:.1f} MB of body; "
        f"every answer had exactly those events, in commit order, the last one the head, and no reset); a resume "
        f"from `0-0`, the whole log behind it, timed until the `event: reset` frame has been read (every answer a "
        f"reset at the head with no event before it). {WARMUP} of each kind first unmeasured, then {ROUNDS} rounds "
        f"of {RESUME_REQUESTS} of each kind, their order flipped each round; percentiles over all "
        f"{edges:,} of each. No goal: the ratios say what catching up costs against a fresh stream; those of the "
        f"p99s move with the fresh stream's, {figure(min(fresh_rounds))} to {figure(max(fresh_rounds))} ms from "
        f"one round to another here (the cores shared with whatever else runs), so the p50s' are given too. Release "
        f"build; {stamp('Services', 'Shared', 'Package.swift', 'bench/resume.py')} (load average "
        f"{load_average()} at the end).",
        "",
        "| request | p50 | p99 | p99 / the fresh stream's p99 | p50 / the fresh stream's p50 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind in KINDS:
        lines.append(f"| {TITLES[kind]} | {figure(middle[kind])} ms | **{figure(tail[kind])} ms** | "
                     + ("1 (the limit) | 1 |" if kind == "fresh" else
                        f"**{figure(ratios[kind])}×** | {figure(middle[kind] / middle['fresh'])}× |"))
    lines += [
        "",
        f"A resume at the edge delivers {WINDOW / middle['edge'] * 1000:,.0f} events a second at its p50; the CPU "
        f"time each took ({edges:,} of them; everything each process did meanwhile): "
        f"{cpu_ms['gateway']:.1f} ms in the gateway, {cpu_ms['service']:.1f} ms in locations-service, "
        f"{cpu_ms['postgres']:.1f} ms in PostgreSQL.",
        "",
        "Each round's p99: " + "; ".join(
            f"{kind} " + ", ".join(figure(r[kind]) for r in rounds) + " ms" for kind in KINDS) + ".",
        "",
    ]
    write_sections(lines)
    log(f"resuming a live stream: p99 fresh {figure(tail['fresh'])} ms, edge {figure(tail['edge'])} ms "
        f"({ratios['edge']:.1f}x), reset {figure(tail['reset'])} ms ({ratios['reset']:.1f}x); wrote the section of "
        "BENCHMARKS.md")
