#!/usr/bin/env python3
"""Faults under load, against the real binaries and a real PostgreSQL with default durability.

Each scenario starts its own services on a private cluster, puts writers (and readers) on the public
gateway, breaks something for real (kill -9, PostgreSQL stopped or restarted, the hop between the two
services cut, the database's disk full) and checks what a user would see: every request answered in time
and honestly (503 with Retry-After while something is away, never a 500 or a hang), service back by
itself, and every acknowledged pin in the log (in the order the pins were acknowledged) and the read model
exactly once, with `replay --verify` clean. A writer retries each pin under its Idempotency-Key until it
is acknowledged, as a careful client does. The load and those checks are the harness's (Tests/harness).

    faults.py --bin BIN_DIR [--seconds N] [--results FILE] [scenario ...]

Scenarios: kill-locations, kill-gateway, database-stop, database-restart, hop-cut, disk-full.
Exit status 1 if any check fails; one line per check, and the figures as JSON in --results.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # Tests/, for the harness
from harness.checks import Checks, check_no_server_errors, check_nothing_lost, replay_verify  # noqa: E402
from harness.client import request, sign_up_students  # noqa: E402
from harness.load import Load  # noqa: E402
from harness.postgres import Cluster  # noqa: E402
from harness.processes import Service, free_port, print_logs  # noqa: E402

# A killed service is started again at once: it must be serving within this long (an unoptimised build, on a busy machine).
RESTART_SECONDS = 10


class Stack:
    """locations-service and `gateways` auth-gateway replicas on one private cluster with default durability,
    its data in `data_folder` (`folder` by default), the logs in `folder`."""

    def __init__(self, args, folder, gateways=1, data_folder=None):
        self.args, self.folder = args, folder
        self.cluster = Cluster(os.path.join(data_folder or folder, "pgdata"))
        environment = {"DATABASE_URL": self.cluster.url}
        # Every pin a writer was answered for must be on the map: the cap on one student's pins is raised so
        # that it takes none off.
        self.locations = Service.on_loopback(os.path.join(args.bin, "locations-service"), "locations-service",
                                             dict(environment, PINS_PER_STUDENT=str(10**6)), folder)
        self.locations.start()
        # The writers post as fast as they can: the write limit is raised so that it refuses none.
        self.gateways = [Service.on_loopback(os.path.join(args.bin, "auth-gateway"), f"auth-gateway-{index + 1}",
                                             dict(environment, LOCATIONS_URL=self.locations.url, WRITE_BURST=str(10**6)), folder)
                         for index in range(gateways)]

    def start_gateways(self, hop=None):
        for gateway in self.gateways:
            if hop:
                gateway.environment["LOCATIONS_URL"] = f"http://127.0.0.1:{hop}"
            gateway.start()

    def load(self, writers=6, readers=2, logins=False):
        """Writers, readers and (with `logins`) a login loop on every gateway."""
        ports = [gateway.port for gateway in self.gateways]
        return Load(ports, sign_up_students(ports[0], writers), readers=readers, logins=logins)

    def check_nothing_lost(self, load, checks):
        check_nothing_lost(load, checks, self.cluster.sql, lambda: replay_verify(self.args.bin, self.cluster.url))

    def stop(self):
        for service in self.gateways + [self.locations]:
            service.stop()
        self.cluster.stop("fast")


def scenario_kill_locations(args, folder, checks):
    """kill -9 locations-service every few seconds while writers post through the gateway."""
    stack = Stack(args, folder)
    try:
        stack.start_gateways()
        load = stack.load()
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
        load.seconds_until_a_write_is_acknowledged(after=time.monotonic())  # the last start has taken writes
        checks.figures.update(kills=kills, restart_seconds_max=round(max(downtime), 2))
        checks.expect(max(downtime) < RESTART_SECONDS,
                      f"locations-service killed with SIGKILL {kills} times, each ready again within {RESTART_SECONDS} s"
                      f" (slowest {max(downtime):.2f} s)")
        stack.check_nothing_lost(load, checks)
        check_no_server_errors(load, checks)
    finally:
        stack.stop()


def scenario_kill_gateway(args, folder, checks):
    """kill -9 one of two gateway replicas in turn: sessions survive, no valid session is refused."""
    stack = Stack(args, folder, gateways=2)
    try:
        stack.start_gateways()
        load = stack.load()
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
        load.seconds_until_a_write_is_acknowledged(after=time.monotonic())  # the last start has taken writes
        checks.figures.update(kills=kills, restart_seconds_max=round(max(downtime), 2))
        checks.expect(max(downtime) < RESTART_SECONDS,
                      f"a gateway replica killed with SIGKILL {kills} times, each ready again within {RESTART_SECONDS} s"
                      f" (slowest {max(downtime):.2f} s)")
        refused = [a for a in load.outcomes.statuses("write") if a[3] in (401, 403)]
        checks.expect(not refused, f"no valid session refused ({len(refused)} writes got 401 or 403)")
        stack.check_nothing_lost(load, checks)
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
        load = stack.load(logins=True)
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
            outages.append((went, back, load.seconds_until_a_write_is_acknowledged(after=back)))
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
        stack.check_nothing_lost(load, checks)
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
        load = stack.load()
        time.sleep(2)
        went = time.monotonic()
        hop.cut()
        time.sleep(4)
        back = time.monotonic()
        hop.mend()
        recovered = load.seconds_until_a_write_is_acknowledged(after=back)
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
        stack.check_nothing_lost(load, checks)
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
            load = stack.load(writers=2, readers=1)
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
            refused = load.first_answer("write", after=full, statuses=(503,), limit=60)
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
            recovered = load.seconds_until_a_write_is_acknowledged(after=emptied)
            checks.figures.update(recovery_seconds=None if recovered is None else round(recovered, 2))
            checks.expect(recovered is not None, f"writes acknowledged again {recovered} s after space returned")
            stack.check_nothing_lost(load, checks)
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
