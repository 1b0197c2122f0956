#!/usr/bin/env python3
"""Faults under load, against the real binaries and a real PostgreSQL with default durability.

Each scenario starts its own services on a private cluster, puts writers (and readers) on the public
gateway, breaks something for real (kill -9, PostgreSQL stopped or restarted, the hop between the two
services cut, the database's disk full) and checks what a user would see: every request answered in time
and honestly (503 with Retry-After while something is away, never a 500 or a hang), service back by
itself, and every acknowledged pin in the log and the read model exactly once, with `replay --verify`
clean. A writer retries each pin under its Idempotency-Key until it is acknowledged, as a careful client
does.

    faults.py --bin BIN_DIR [--seconds N] [--results FILE] [scenario ...]

Scenarios: kill-locations, kill-gateway, database-stop, database-restart, hop-cut, disk-full.
Exit status 1 if any check fails; one line per check, and the figures as JSON in --results.
"""
import argparse
import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

PASSWORD = "correct horse battery"
INTERNAL_TOKEN = secrets.token_urlsafe(32)
# A killed service is started again at once: it must be serving within this long (an unoptimised build, on a busy machine).
RESTART_SECONDS = 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib.sh")
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ha"))
import topology  # noqa: E402  (the processes of ha/topology.py: started, killed and stopped the same way)


def lib(function, *args, check=True):
    """Runs one function of scripts/lib.sh, the cluster helpers every script shares: its exit status."""
    return subprocess.run(["bash", "-c", 'source "$0"; "$@"', LIB, function, *args], check=check,
                          stdout=subprocess.DEVNULL).returncode


class Cluster:
    """A private PostgreSQL cluster (scripts/lib.sh) with default durability: fsync and synchronous commit on.
    Its data and its log, server.log, are in `data_folder`/pgdata."""

    def __init__(self, data_folder):
        self.data, self.port = os.path.join(data_folder, "pgdata"), free_port()
        self.start()

    @property
    def url(self):
        return f"postgres://onthemap@127.0.0.1:{self.port}/postgres"

    @property
    def log(self):
        return os.path.join(self.data, "server.log")

    def start(self):
        lib("start_private_postgres", self.data, str(self.port))

    def stop(self, mode="fast"):
        lib("stop_private_postgres", self.data, mode)

    def running(self):
        return lib("private_postgres_running", self.data, check=False) == 0

    def sql(self, query):
        answer = subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(self.port), "-U", "onthemap", "-d", "postgres",
                                 "-v", "ON_ERROR_STOP=1", "-c", query], check=True, capture_output=True, text=True)
        return [line.split("|") for line in answer.stdout.splitlines() if line]


class Service(topology.Service):
    """One real binary serving on a fixed loopback port, so it can be killed and started again there."""

    def __init__(self, binary, environment, folder, name):
        super().__init__(binary, name, "127.0.0.1", free_port(), dict(INTERNAL_TOKEN=INTERNAL_TOKEN, LOG_LEVEL="warning", **environment),
                         folder)


def request(address, method, path, body=None, headers=None, timeout=10):
    """One HTTP exchange on its own connection to `address` (a port on 127.0.0.1, or a (host, port) pair):
    (status, headers, body bytes)."""
    host, port = address if isinstance(address, tuple) else ("127.0.0.1", address)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        all_headers = {"Content-Type": "application/json"} if payload else {}
        all_headers.update(headers or {})
        connection.request(method, path, payload, all_headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def session_answer(data):
    """The gateway's session answers carry the `)]}'` prefix that the apps strip."""
    return json.loads(data[5:] if data.startswith(b")]}'") else data)


def sign_up_students(address, count):
    """Signs up and logs in `count` students at the gateway at `address`: their session ids."""
    sessions = []
    for index in range(count):
        email = f"student{index}-{uuid.uuid4().hex[:8]}@example.com"
        status, _, body = request(address, "POST", "/v1/accounts",
                                  {"email": email, "password": PASSWORD, "firstName": f"Student{index}", "lastName": "Tester"})
        assert status == 201, f"sign-up answered {status}: {body[:200]}"
        status, _, body = request(address, "POST", "/v1/session", {"udacity": {"username": email, "password": PASSWORD}})
        assert status == 200, f"login answered {status}: {body[:200]}"
        sessions.append(session_answer(body)["session"]["id"])
    return sessions


class Stack:
    """locations-service and `gateways` auth-gateway replicas on one private cluster, its data in
    `data_folder` (`folder` by default), the logs in `folder`."""

    def __init__(self, args, folder, gateways=1, data_folder=None):
        self.args, self.folder = args, folder
        self.cluster = Cluster(data_folder or folder)
        environment = {"DATABASE_URL": self.cluster.url}
        # Every pin a writer was answered for must be on the map: the cap on one student's pins is raised so
        # that it takes none off.
        self.locations = Service(os.path.join(args.bin, "locations-service"), dict(environment, PINS_PER_STUDENT=str(10**6)),
                                 folder, "locations-service")
        self.locations.start()
        self.gateways = []
        for index in range(gateways):
            gateway = Service(os.path.join(args.bin, "auth-gateway"),
                              # The writers post as fast as they can: the write limit is raised so that it refuses none.
                              dict(environment, LOCATIONS_URL=self.locations.url, WRITE_BURST=str(10**6)), folder,
                              f"auth-gateway-{index + 1}")
            self.gateways.append(gateway)

    def start_gateways(self, hop=None):
        for gateway in self.gateways:
            if hop:
                gateway.environment["LOCATIONS_URL"] = f"http://127.0.0.1:{hop}"
            gateway.start()

    def students(self, count):
        return sign_up_students(self.gateways[0].port, count)

    def stop(self):
        for service in self.gateways + [self.locations]:
            service.stop()
        self.cluster.stop("fast")


class Outcomes:
    """Every answer the load got: status, time taken and when, for the checks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answers = []  # (started, seconds, kind, status or None for a connection error, retry-after)
        self.acknowledged = {}  # idempotency key → (objectId, mapString)
        self.sent = set()
        # Wall-clock times, for a restore to a moment: when each pin was first sent, and when acknowledged.
        self.sent_at, self.acknowledged_at = {}, {}

    def record(self, started, seconds, kind, status, headers=None):
        with self.lock:
            # Header names are matched without regard to case, as HTTP has them (HAProxy sends them in lower case).
            retry_after = next((value for name, value in (headers or {}).items() if name.lower() == "retry-after"), None)
            self.answers.append((started, seconds, kind, status, retry_after))

    def statuses(self, kind=None, between=None):
        with self.lock:
            return [a for a in self.answers if (kind is None or a[2] == kind)
                    and (between is None or between[0] <= a[0] + a[1] and a[0] <= between[1])]


def writer(ports, session, outcomes, stop, tag, pause=0.0):
    """Posts pins until told to stop; each pin is retried under one Idempotency-Key until acknowledged."""
    turn = 0
    while not stop.is_set():
        key = str(uuid.uuid4())
        place = f"{tag} {key[:8]}"
        body = {"mapString": place, "mediaURL": f"https://example.com/{key[:8]}", "latitude": 52.52, "longitude": 13.40}
        with outcomes.lock:
            outcomes.sent.add(key)
            outcomes.sent_at[key] = time.time()
        while True:
            port = ports[turn % len(ports)]
            turn += 1
            started = time.monotonic()
            try:
                status, headers, data = request(port, "POST", "/v1/StudentLocation", body,
                                                {"Authorization": f"Bearer {session}", "Idempotency-Key": key})
            except OSError:
                outcomes.record(started, time.monotonic() - started, "write", None)
                time.sleep(0.05)
                continue
            outcomes.record(started, time.monotonic() - started, "write", status, headers)
            if status in (200, 201):
                with outcomes.lock:
                    outcomes.acknowledged[key] = (json.loads(data)["objectId"], place)
                    outcomes.acknowledged_at[key] = time.time()
                break
            if status != 503:
                break  # recorded; the checks fail on it
            time.sleep(0.05)
        if pause:
            time.sleep(pause)


def reader(ports, outcomes, stop):
    turn = 0
    while not stop.is_set():
        port = ports[turn % len(ports)]
        turn += 1
        started = time.monotonic()
        try:
            status, headers, _ = request(port, "GET", "/v1/StudentLocation?limit=100")
            outcomes.record(started, time.monotonic() - started, "read", status, headers)
        except OSError:
            outcomes.record(started, time.monotonic() - started, "read", None)
        time.sleep(0.02)


def logger_in(ports, email, outcomes, stop):
    """Logs in again and again, and writes once with each new session: a session no replica holds yet."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            status, headers, data = request(ports[0], "POST", "/v1/session", {"udacity": {"username": email, "password": PASSWORD}})
        except OSError:
            outcomes.record(started, time.monotonic() - started, "login", None)
            time.sleep(0.1)
            continue
        outcomes.record(started, time.monotonic() - started, "login", status, headers)
        if status == 200:
            session = session_answer(data)["session"]["id"]
            started = time.monotonic()
            try:
                status, headers, _ = request(ports[0], "POST", "/v1/StudentLocation",
                                             {"mapString": "login check", "mediaURL": "https://example.com", "latitude": 1, "longitude": 1},
                                             {"Authorization": f"Bearer {session}", "Idempotency-Key": str(uuid.uuid4())})
                outcomes.record(started, time.monotonic() - started, "fresh-session write", status, headers)
            except OSError:
                outcomes.record(started, time.monotonic() - started, "fresh-session write", None)
        time.sleep(0.2)


class Load:
    """Writers, readers and (optionally) logins on the gateways, until `finish`."""

    def __init__(self, stack, writers=6, readers=2, logins=False, tag="pin"):
        self.outcomes, self.stop_flag, self.threads = Outcomes(), threading.Event(), []
        ports = [gateway.port for gateway in stack.gateways]
        for index, session in enumerate(stack.students(writers)):
            self.threads.append(threading.Thread(target=writer, args=(ports[index % len(ports):] + ports[:index % len(ports)],
                                                                      session, self.outcomes, self.stop_flag, tag)))
        for _ in range(readers):
            self.threads.append(threading.Thread(target=reader, args=(ports, self.outcomes, self.stop_flag)))
        if logins:
            email = f"login-{uuid.uuid4().hex[:8]}@example.com"
            request(ports[0], "POST", "/v1/accounts", {"email": email, "password": PASSWORD, "firstName": "Login", "lastName": "Loop"})
            self.threads.append(threading.Thread(target=logger_in, args=(ports, email, self.outcomes, self.stop_flag)))
        for thread in self.threads:
            thread.daemon = True
            thread.start()

    def finish(self, seconds=60):
        """Stops the load; a writer first gets its pin in flight acknowledged."""
        self.stop_flag.set()
        for thread in self.threads:
            thread.join(seconds)
        return not any(thread.is_alive() for thread in self.threads)


def seconds_until_a_write_is_acknowledged(load, after, limit=30):
    """How long after `after` the first write sent since then was acknowledged; None if none was within `limit`."""
    while time.monotonic() < after + limit:
        done = [a for a in load.outcomes.statuses("write") if a[0] >= after and a[3] in (200, 201)]
        if done:
            return min(a[0] + a[1] for a in done) - after
        time.sleep(0.05)
    return None


class Checks:
    def __init__(self, name):
        self.name, self.failures, self.figures = name, [], {}

    def expect(self, condition, message):
        print(f"  {'ok  ' if condition else 'FAIL'} {message}", flush=True)
        if not condition:
            self.failures.append(message)


def check_nothing_lost(stack, load, checks, tag=None):
    """Every acknowledged pin once in the log and in the read model; nothing that was never sent. With a
    `tag`, only the pins posted under it are looked at (a database that outlives one load)."""
    outcomes = load.outcomes
    checks.expect(load.finish(), "every writer had its last pin acknowledged once the load stopped")
    acknowledged = dict(outcomes.acknowledged)
    only_tag = f" AND data->>'mapString' LIKE '{tag} %'" if tag else ""
    rows = stack.cluster.sql("SELECT idempotency_key, count(*), min(stream_name) FROM locations.events "
                             "WHERE event_type = 'LocationPosted' AND data->>'mapString' <> 'login check'" + only_tag + " GROUP BY 1")
    logged = {key: (int(count), stream) for key, count, stream in rows}
    doubled = [key for key, (count, _) in logged.items() if count != 1]
    missing = [key for key in acknowledged if key not in logged]
    unsent = [key for key in logged if key not in outcomes.sent]
    checks.figures["acknowledged"] = len(acknowledged)
    checks.expect(len(acknowledged) > 0, f"{len(acknowledged)} pins acknowledged under the fault")
    checks.expect(not missing, f"every acknowledged pin is in the log ({len(missing)} missing)")
    checks.expect(not doubled, f"no pin was appended twice ({len(doubled)} doubled)")
    checks.expect(not unsent, f"nothing in the log that was never sent ({len(unsent)} unsent)")
    wrong_stream = [key for key, (objectId, _) in acknowledged.items() if key in logged and logged[key][1] != f"location-{objectId}"]
    checks.expect(not wrong_stream, f"each acknowledgement named the pin's own stream ({len(wrong_stream)} differ)")
    pins = {objectId: place for objectId, place in stack.cluster.sql("SELECT object_id, map_string FROM locations.pins")}
    absent = [key for key, (objectId, place) in acknowledged.items() if pins.get(objectId) != place]
    checks.expect(not absent, f"every acknowledged pin is in the read model as sent ({len(absent)} absent or different)")
    verify = subprocess.run([os.path.join(stack.args.bin, "locations-service"), "replay", "--verify"],
                            env=dict(os.environ, DATABASE_URL=stack.cluster.url, LOG_LEVEL="warning"), capture_output=True, text=True)
    checks.expect(verify.returncode == 0, "replay --verify finds the read model equal to the log"
                  + ("" if verify.returncode == 0 else f": {verify.stdout[-500:]} {verify.stderr[-500:]}"))


def check_no_server_errors(load, checks):
    answers = load.outcomes.statuses()
    errors = [a for a in answers if a[3] is not None and a[3] >= 500 and a[3] != 503]
    checks.figures["requests"] = len(answers)
    checks.expect(not errors, f"no 5xx but 503 among {len(answers)} answers ({sorted({a[3] for a in errors})})")
    no_retry_after = [a for a in answers if a[3] == 503 and a[4] is None]
    checks.expect(not no_retry_after, f"every 503 carries Retry-After ({len(no_retry_after)} without)")
    other = [a for a in answers if a[3] is not None and a[3] not in (200, 201, 503)]
    checks.expect(not other, f"no refusal of a valid request ({sorted({a[3] for a in other})})")


def scenario_kill_locations(args, folder, checks):
    """kill -9 locations-service every few seconds while writers post through the gateway."""
    stack = Stack(args, folder)
    try:
        stack.start_gateways()
        load = Load(stack)
        kills, downtime = 0, []
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline or kills < 3:
            time.sleep(2.5)
            stack.locations.kill()
            kills += 1
            time.sleep(0.3)
            began = time.monotonic()
            stack.locations.start()
            downtime.append(time.monotonic() - began)
        time.sleep(1)
        checks.figures.update(kills=kills, restart_seconds_max=round(max(downtime), 2))
        checks.expect(max(downtime) < RESTART_SECONDS,
                      f"locations-service killed with SIGKILL {kills} times, each ready again within {RESTART_SECONDS} s"
                      f" (slowest {max(downtime):.2f} s)")
        check_nothing_lost(stack, load, checks)
        check_no_server_errors(load, checks)
    finally:
        stack.stop()


def scenario_kill_gateway(args, folder, checks):
    """kill -9 one of two gateway replicas in turn: sessions survive, no valid session is refused."""
    stack = Stack(args, folder, gateways=2)
    try:
        stack.start_gateways()
        load = Load(stack)
        kills, downtime = 0, []
        deadline = time.monotonic() + args.seconds
        # Three kills at least however long a start takes on this machine, so that each replica dies twice or more.
        while time.monotonic() < deadline or kills < 3:
            time.sleep(2.5)
            victim = stack.gateways[kills % 2]
            victim.kill()
            kills += 1
            time.sleep(0.3)
            began = time.monotonic()
            victim.start()
            downtime.append(time.monotonic() - began)
        time.sleep(1)
        checks.figures.update(kills=kills, restart_seconds_max=round(max(downtime), 2))
        checks.expect(max(downtime) < RESTART_SECONDS,
                      f"a gateway replica killed with SIGKILL {kills} times, each ready again within {RESTART_SECONDS} s"
                      f" (slowest {max(downtime):.2f} s)")
        refused = [a for a in load.outcomes.statuses("write") if a[3] in (401, 403)]
        checks.expect(not refused, f"no valid session refused ({len(refused)} writes got 401 or 403)")
        check_nothing_lost(stack, load, checks)
        check_no_server_errors(load, checks)
    finally:
        stack.stop()


def outage(args, folder, checks, restart):
    """PostgreSQL away under load: honest 503s in time while it is, service back by itself after. Stopped, it
    is away for 5 s; restarted, it is stopped at once (a crash, for every connection) and started again,
    `args.restarts` times, as a write caught at the worst moment of a crash is rare."""
    stack = Stack(args, folder)
    try:
        stack.start_gateways()
        load = Load(stack, logins=True)
        outages = []  # (went, back, seconds until writes were acknowledged again)
        for _ in range(args.restarts if restart else 1):
            time.sleep(2)
            went = time.monotonic()
            if restart:
                stack.cluster.stop("immediate")
            else:
                stack.cluster.stop("fast")
                time.sleep(5)
            stack.cluster.start()
            back = time.monotonic()
            # Service is back once a write sent after the database returned is acknowledged.
            outages.append((went, back, seconds_until_a_write_is_acknowledged(load, after=back)))
        time.sleep(2)
        # Each answer during an outage, and how long it took once the database was gone (a login that began
        # before the outage did some of its work with the database still there).
        during = [(a, a[0] + a[1] - max(a[0], went)) for went, back, _ in outages
                  for a in load.outcomes.statuses(between=(went, back))]
        slowest = max(during, key=lambda pair: pair[1], default=(None, 0))
        refused = [a for a, _ in during if a[3] == 503]
        recoveries = [recovered for _, _, recovered in outages]
        recovered = None if None in recoveries else max(recoveries)
        checks.figures.update(outages=len(outages), outage_seconds=round(max(back - went for went, back, _ in outages), 2),
                              requests_during=len(during), answered_503=len(refused), slowest_during=round(slowest[1], 3),
                              slowest_kind=slowest[0][2] if slowest[0] else None,
                              recovery_seconds=None if recovered is None else round(recovered, 2))
        if not restart:
            checks.expect(len(refused) > 0, f"{len(refused)} requests during the {outages[0][1] - outages[0][0]:.1f} s outage answered 503")
        checks.expect(slowest[1] <= 2.5, f"every answer during the outage within 2.5 s of it (slowest {checks.figures['slowest_during']} s)")
        checks.expect(not [a for a, _ in during if a[3] is None], "no request during the outage went unanswered")
        checks.expect(recovered is not None and recovered <= 5,
                      f"writes acknowledged again {recovered if recovered is None else round(recovered, 2)} s after the database returned "
                      f"(≤ 5 s{f', after each of {len(outages)} restarts' if restart else ''})")
        check_nothing_lost(stack, load, checks)
        check_no_server_errors(load, checks)
    finally:
        stack.stop()


def scenario_database_stop(args, folder, checks):
    outage(args, folder, checks, restart=False)


def scenario_database_restart(args, folder, checks):
    outage(args, folder, checks, restart=True)


class Hop:
    """A TCP relay between the gateway and locations-service that can be cut (every connection reset, new
    ones refused) and mended."""

    def __init__(self, target):
        self.target, self.port = target, free_port()
        self.lock, self.sockets, self.listener = threading.Lock(), set(), None
        self.mend()

    def mend(self):
        self.listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        threading.Thread(target=self.accept, args=(self.listener,), daemon=True).start()

    def accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(source, sink), daemon=True).start()

    def pump(self, source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread; close() alone would leave it listening
        self.listener.close()
        with self.lock:
            for end in self.sockets:
                try:
                    end.shutdown(socket.SHUT_RDWR)  # wakes the pumps blocked on it, which close() alone would not
                    end.close()
                except OSError:
                    pass
            self.sockets.clear()


def scenario_hop_cut(args, folder, checks):
    """The connection between gateway and locations-service cut: 503 within 1 s, recovery by itself."""
    stack = Stack(args, folder)
    try:
        hop = Hop(stack.locations.port)
        stack.start_gateways(hop=hop.port)
        load = Load(stack)
        time.sleep(2)
        went = time.monotonic()
        hop.cut()
        time.sleep(4)
        back = time.monotonic()
        hop.mend()
        recovered = seconds_until_a_write_is_acknowledged(load, after=back)
        time.sleep(1)
        # Writes answered while the hop was cut, those in flight when it was cut among them: how long each
        # waited once the hop was gone.
        during = [a for a in load.outcomes.statuses("write") if went + 0.05 <= a[0] + a[1] <= back]
        waited = [a[0] + a[1] - max(a[0], went) for a in during]
        checks.figures.update(writes_during=len(during), slowest_during=round(max(waited, default=0), 3),
                              recovery_seconds=None if recovered is None else round(recovered, 2))
        checks.expect(len(during) > 0 and all(a[3] == 503 for a in during),
                      f"every write while the hop was cut answered 503 ({len(during)} writes, {sorted({a[3] for a in during}, key=str)})")
        checks.expect(all(seconds <= 1.0 for seconds in waited), f"each within 1 s of the cut (slowest {checks.figures['slowest_during']} s)")
        checks.expect(recovered is not None and recovered <= 5, f"writes acknowledged again {recovered} s after the hop was mended")
        check_nothing_lost(stack, load, checks)
        check_no_server_errors(load, checks)
    finally:
        stack.stop()


def scenario_disk_full(args, folder, checks):
    """The database's file system full: writes refused with a clear 503, reads go on, nothing corrupted
    once space returns."""
    disk = os.path.join(folder, "disk")
    os.makedirs(disk)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", disk], check=True)
    try:
        stack = Stack(args, folder, data_folder=disk)
        try:
            stack.start_gateways()
            load = Load(stack, writers=2, readers=1)
            time.sleep(2)
            filler = os.path.join(disk, "filler")
            with open(filler, "wb") as handle:
                try:
                    while True:
                        handle.write(b"\0" * (1 << 20))
                        handle.flush()
                except OSError:
                    pass
            full = time.monotonic()
            refused = None
            while time.monotonic() < full + 60 and refused is None:
                fresh = [a for a in load.outcomes.statuses("write") if a[0] >= full and a[3] == 503]
                refused = fresh[0] if fresh else None
                time.sleep(0.1)
            checks.expect(refused is not None, "with the disk full, writes are refused with 503")
            time.sleep(3)
            port = stack.gateways[0].port
            status, _, body = request(port, "GET", "/v1/StudentLocation?limit=100")
            checks.expect(status == 200 and b"results" in body, f"the list is still read with the disk full ({status})")
            acknowledged = list(load.outcomes.acknowledged.values())
            status, _, _ = request(port, "GET", f"/v1/StudentLocation/{acknowledged[0][0]}") if acknowledged else (None, None, None)
            checks.expect(status == 200, f"a pin is still read with the disk full ({status})")
            os.remove(filler)
            emptied = time.monotonic()
            if not stack.cluster.running():
                stack.cluster.start()
            recovered = seconds_until_a_write_is_acknowledged(load, after=emptied)
            checks.figures.update(recovery_seconds=None if recovered is None else round(recovered, 2))
            checks.expect(recovered is not None, f"writes acknowledged again {recovered} s after space returned")
            check_nothing_lost(stack, load, checks)
            check_no_server_errors(load, checks)
        finally:
            stack.stop()
            shutil.copy(stack.cluster.log, os.path.join(folder, "postgres.log"))  # the disk goes, its log stays
    finally:
        subprocess.run(["umount", "-l", disk], check=False)


SCENARIOS = {
    "kill-locations": scenario_kill_locations,
    "kill-gateway": scenario_kill_gateway,
    "database-stop": scenario_database_stop,
    "database-restart": scenario_database_restart,
    "hop-cut": scenario_hop_cut,
    "disk-full": scenario_disk_full,
}


def print_logs(folder):
    """The end of every log under `folder`, for a failed run."""
    for place, _, files in os.walk(folder):
        for log in sorted(name for name in files if name.endswith(".log")):
            print(f"--- {log} (last lines)\n" + open(os.path.join(place, log), errors="replace").read()[-3000:])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with locations-service and auth-gateway")
    parser.add_argument("--seconds", type=int, default=20, help="how long the kill scenarios go on")
    parser.add_argument("--restarts", type=int, default=10, help="how often database-restart crashes PostgreSQL")
    parser.add_argument("--results", help="write the figures of every scenario here, as JSON")
    parser.add_argument("scenarios", nargs="*", help="the scenarios to run (all by default)")
    args = parser.parse_args()
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; one of {', '.join(SCENARIOS)}")
    args.scenarios = args.scenarios or list(SCENARIOS)
    results, failed = {}, []
    for name in args.scenarios:
        print(f"{name}:", flush=True)
        checks = Checks(name)
        folder = tempfile.mkdtemp(prefix=f"onthemap-faults-{name}-")
        os.chmod(folder, 0o755)  # the cluster's owner, an unprivileged user when run as root, must reach into it
        began = time.monotonic()
        try:
            SCENARIOS[name](args, folder, checks)
        except Exception as error:  # a harness failure fails the scenario, with what happened
            checks.expect(False, f"the scenario ran to its end ({type(error).__name__}: {error})")
        checks.figures["seconds"] = round(time.monotonic() - began, 1)
        results[name] = {"passed": not checks.failures, **checks.figures}
        if checks.failures:
            failed.append(name)
            print_logs(folder)
        shutil.rmtree(folder, ignore_errors=True)
    if args.results:
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2)
    print("faults: " + (f"FAILED {', '.join(failed)}" if failed else f"all {len(results)} scenarios passed"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
