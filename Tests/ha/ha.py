#!/usr/bin/env python3
"""Failover under load: On The Map on three database hosts (etcd, Patroni, PostgreSQL with a synchronous
standby), HAProxy, two gateways and two locations-services (ha/topology.py), with the faults an operator
fears, one after the other on the same running system:

  kill-primary   every process of the primary's host killed with SIGKILL: a standby is promoted and
                 writes are acknowledged again within 15 s; meanwhile every answer is an honest 503 with
                 Retry-After, never another 5xx or a hang. The host is started again and rejoins.
  freeze-primary every process of the primary's host stopped with SIGSTOP (a machine that stops answering
                 without closing its sockets), thawed once a new primary took over: never two primaries,
                 and the old one rejoins as a standby of the new one (rewound where it must be).
  kill-etcd      etcd's leader killed: nothing changes for clients (no 503 at all).
  kill-replicas  a gateway replica and a locations-service replica killed: the others serve.
  restore        the restore drill (Tests/faults/restore_drill.py) once here: a backup under load, then
                 `DROP SCHEMA locations CASCADE` on the primary, undone by a restore through Patroni to one
                 second before it (topology.Topology.restore); the other hosts are rebuilt from the
                 repository as its standbys.

Each of the first four runs under writers posting through the public door (either gateway) with an
Idempotency-Key each, retried until acknowledged, readers, and live streams that reconnect with
Last-Event-ID. After each: every acknowledged pin is in the log and the read model once, nothing doubled,
every live stream got every pin, and `locations-service replay --verify` is clean on the primary of the
moment (harness.checks.check_nothing_lost). The restore's own checks are in scenario_restore.

    ha.py --bin BIN_DIR --pg-bin PG_BIN [--folder DIR] [--results FILE] [scenario ...]

Exit status 1 if any check fails; one line per check, and the figures as JSON in --results.
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "..", "ha")]  # Tests/, for the harness; ha/, the topology
import topology  # noqa: E402
from harness.checks import Checks, check_no_server_errors, check_nothing_lost, expect_verified, replay_verify  # noqa: E402
from harness.client import get_json, request, sign_up_students  # noqa: E402
from harness.load import Load  # noqa: E402
from harness.processes import print_logs  # noqa: E402
from harness.restore import check_restored, make_the_mistake, utc  # noqa: E402
from harness.waiting import poll, wait_until  # noqa: E402

# A promoted standby and writes acknowledged again, counted from the moment the primary's host died.
FAILOVER_SECONDS = 15
# No answer, even during a failover, takes longer: a statement's deadline is 2 s, a call to the other service 5 s.
ANSWER_SECONDS = 8
# The public door, HAProxy, in front of both gateways: where the load and the live streams go.
FRONT = (topology.LB, topology.GATEWAY_PORT)
# A live stream cut is opened again after this long, as a browser's EventSource does.
RECONNECT_PAUSE = 0.5


class HAStack:
    """The load and the checks on the running system, its students kept from one scenario to the next."""

    def __init__(self, system, args):
        self.system, self.args = system, args
        self.sessions = []

    def students(self, count):
        """The same students in every scenario: a gateway lets one address sign up only so many accounts an hour."""
        if len(self.sessions) < count:
            self.sessions += sign_up_students(FRONT, count - len(self.sessions))
        return self.sessions[:count]

    def load(self, writers, readers, tag):
        return Load([FRONT], self.students(writers), readers=readers, tag=tag)

    def check_nothing_lost(self, load, checks, tag):
        """harness.checks.check_nothing_lost on the primary of the moment."""
        check_nothing_lost(load, checks, self.system.sql, lambda: replay_verify(self.args.bin, self.system.database_url), tag=tag)


class Follower(threading.Thread):
    """A live stream on the public door, read for as long as the scenario runs; each time it is cut, it
    reconnects with the last id it got, as a browser's EventSource does. Keeps every pin posted it saw."""

    def __init__(self):
        super().__init__(daemon=True)
        self.posted, self.reconnects, self.last_id = set(), 0, None
        self.stopping, self.opened = threading.Event(), threading.Event()

    def run(self):
        while not self.stopping.is_set():
            connection = http.client.HTTPConnection(*FRONT, timeout=20)
            try:
                headers = {"Accept": "text/event-stream"}
                if self.last_id:
                    headers["Last-Event-ID"] = self.last_id
                connection.request("GET", "/v1/StudentLocation/events", headers=headers)
                answer = connection.getresponse()
                if answer.status != 200:
                    answer.read()
                    raise OSError(f"live stream answered {answer.status}")
                self.opened.set()
                self.read(answer)
            except (OSError, http.client.HTTPException):
                pass
            finally:
                connection.close()
            if not self.stopping.is_set():
                self.reconnects += 1
                time.sleep(RECONNECT_PAUSE)

    def read(self, answer):
        """Reads events until the stream ends; an event counts once its blank line came, as EventSource has it."""
        event_id = kind = data = None
        while not self.stopping.is_set():
            line = answer.readline()  # the body's lines, its chunked framing taken off
            if not line.endswith(b"\n"):
                return  # the stream ended, perhaps in the middle of an event, which is dropped
            line = line.decode().rstrip("\r\n")
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif line == "":
                if kind == "LocationPosted" and data:
                    self.posted.add(json.loads(data).get("objectId"))
                if event_id:
                    self.last_id = event_id
                event_id = kind = data = None


class Run:
    """One scenario's load: writers, readers and live streams on the public door."""

    def __init__(self, stack, tag):
        self.stack, self.tag = stack, tag
        self.followers = [Follower() for _ in range(3)]
        for follower in self.followers:
            follower.start()
        for follower in self.followers:
            follower.opened.wait(30)
        self.load = stack.load(writers=4, readers=2, tag=tag)

    def answers_between(self, began, ended):
        return self.load.outcomes.statuses(between=(began, ended))

    def finish(self, checks):
        """Stops the load and checks what every scenario checks."""
        self.stack.check_nothing_lost(self.load, checks, self.tag)
        check_no_server_errors(self.load, checks)
        slow = [a for a in self.load.outcomes.statuses() if a[1] > ANSWER_SECONDS]
        checks.figures["slowest_answer_seconds"] = round(max((a[1] for a in self.load.outcomes.statuses()), default=0), 2)
        checks.expect(not slow, f"every answer within {ANSWER_SECONDS} s ({len(slow)} slower; the slowest "
                      f"{checks.figures['slowest_answer_seconds']} s)")
        acknowledged = {objectId for objectId, _ in self.load.outcomes.acknowledged.values()}
        poll(lambda: not any(acknowledged - f.posted for f in self.followers), 15, every=0.2)
        for follower in self.followers:
            follower.stopping.set()
        missed = [len(acknowledged - f.posted) for f in self.followers]
        checks.figures["stream_reconnects"] = sum(f.reconnects for f in self.followers)
        checks.expect(not any(missed), f"{len(self.followers)} live streams each got all {len(acknowledged)} pins "
                      f"(reconnecting {checks.figures['stream_reconnects']} times; missed {missed})")


def primary_lost(system, stack, checks, fault):
    """The primary's host is lost (`fault` does it and returns a function that brings it back): the figures of
    the failover, and the host back as a standby of the new primary."""
    old = system.wait_for_replication()
    run = Run(stack, checks.name)
    time.sleep(3)
    went = time.monotonic()
    restore = fault(old)
    promoted = poll(lambda: system.leader() not in (None, old) and time.monotonic() - went, 60, every=0.2)
    recovered = run.load.seconds_until_a_write_is_acknowledged(after=went, limit=60)
    new = system.leader()
    during = run.answers_between(went, went + (recovered or 60))
    refused = [a for a in during if a[3] == 503]
    checks.figures.update(promoted_seconds=promoted and round(promoted, 2), first_write_seconds=recovered and round(recovered, 2),
                          requests_during=len(during), answered_503=len(refused),
                          unanswered_during=len([a for a in during if a[3] is None]))
    checks.expect(new is not None and new is not old, f"{new and new.name} promoted in place of {old.name} "
                  f"({checks.figures['promoted_seconds']} s after the fault)")
    checks.expect(recovered is not None and recovered <= FAILOVER_SECONDS,
                  f"writes acknowledged again {checks.figures['first_write_seconds']} s after the fault (≤ {FAILOVER_SECONDS} s); "
                  f"{len(refused)} of {len(during)} answers meanwhile were 503")
    time.sleep(2)
    began = time.monotonic()
    primaries = restore(old, new)
    system.wait_for_replication(seconds=120)
    def following():
        state, leading = old.state() or {}, new.state() or {}
        return state.get("role") == "replica" and state.get("state") == "running" and state.get("timeline") == leading.get("timeline")
    wait_until(following, 60, f"{old.name} a standby on {new.name}'s timeline", every=topology.POLL)
    rejoined = time.monotonic() - began
    checks.figures.update(rejoined_seconds=round(rejoined, 2), timeline=(new.state() or {}).get("timeline"))
    checks.expect(system.leader() is new, f"{old.name} back as a standby of {new.name}, on its timeline {checks.figures['timeline']}, "
                  f"{rejoined:.1f} s after it was brought back")
    if primaries is not None:
        checks.figures["most_primaries_at_once"] = primaries
        checks.expect(primaries == 1, f"never two primaries: at most {primaries} host(s) answered /primary at once")
    time.sleep(2)
    run.finish(checks)


def scenario_kill_primary(system, stack, checks):
    def kill(node):
        node.kill()

        def restart(old, new):
            old.start()
        return restart
    primary_lost(system, stack, checks, kill)


def scenario_freeze_primary(system, stack, checks):
    def freeze(node):
        node.freeze()

        def thaw(old, new):
            watch = PrimaryWatch(system)
            old.thaw()
            wait_until(lambda: (old.state() or {}).get("role") == "replica", 120, f"{old.name} a standby", every=topology.POLL)
            return watch.stop()
        return thaw
    primary_lost(system, stack, checks, freeze)


class PrimaryWatch(threading.Thread):
    """Asks every host's Patroni whether it is the primary (what HAProxy routes by), five times a second, and
    keeps the most that said yes at once."""

    def __init__(self, system):
        super().__init__(daemon=True)
        self.system, self.most, self.stopping = system, 0, threading.Event()
        self.start()

    def run(self):
        while not self.stopping.is_set():
            answers = [get_json(f"{node.api}/primary", timeout=0.5)[0] for node in self.system.nodes]
            self.most = max(self.most, answers.count(200))
            time.sleep(0.2)

    def stop(self):
        self.stopping.set()
        self.join()
        return self.most


def scenario_kill_etcd(system, stack, checks):
    system.wait_for_replication()
    run = Run(stack, checks.name)
    time.sleep(2)
    primary = system.leader()
    # etcd's leader, the worst one to lose: the others elect a new one before they answer again.
    victim = next((member for member in system.etcd if member.is_leader()), system.etcd[0])
    went = time.monotonic()
    victim.kill()
    time.sleep(8)
    ended = time.monotonic()
    victim.start()
    during = run.answers_between(went, ended)
    refused = [a for a in during if a[3] not in (200, 201)]
    checks.figures.update(requests_during=len(during), answered_503=len(refused))
    checks.expect(system.leader() is primary, f"the primary stayed on {primary.name}")
    checks.expect(len(during) > 0 and not refused,
                  f"etcd's leader {victim.name} killed for 8 s: {len(during)} answers, all 200 or 201 ({len(refused)} otherwise)")
    time.sleep(2)
    run.finish(checks)


def scenario_kill_replicas(system, stack, checks):
    system.wait_for_replication()
    run = Run(stack, checks.name)
    time.sleep(2)
    went = time.monotonic()
    gateway, locations = system.gateways[0], system.locations[1]
    gateway.kill()
    locations.kill()
    time.sleep(6)
    ended = time.monotonic()
    during = run.answers_between(went, ended)
    acknowledged = [a for a in run.load.outcomes.statuses("write") if went + 2 <= a[0] + a[1] <= ended and a[3] in (200, 201)]
    refused = [a for a in during if a[3] == 503]
    checks.figures.update(requests_during=len(during), answered_503=len(refused), acknowledged_during=len(acknowledged))
    checks.expect(len(acknowledged) > 0, f"with {gateway.name} and {locations.name} dead, the others acknowledged "
                  f"{len(acknowledged)} writes ({len(refused)} of {len(during)} answers were 503, "
                  f"those in flight on the dead ones)")
    gateway.start()
    locations.start()
    time.sleep(2)
    run.finish(checks)


def scenario_restore(system, stack, checks):
    """A backup under load, the mistake, and the restore through Patroni to one second before it. Checked: every
    pin acknowledged before the restore point is in the log once and in the read model, none sent after it is;
    replay --verify is clean; the services take a write; both other hosts are standbys again, each rebuilt by
    pgBackRest from the repository (Patroni's log says which method built it). The recovery time runs from the
    services stopped to that write acknowledged."""
    system.wait_for_replication()
    load = stack.load(writers=4, readers=1, tag=checks.name)
    time.sleep(3)
    primary = system.leader()
    began = time.monotonic()
    primary.backup_lib("pgbackrest_run --type=full backup")
    checks.figures["full_backup_seconds"] = round(time.monotonic() - began, 1)
    print(f"  a full backup taken on {primary.name} under load in {checks.figures['full_backup_seconds']} s", flush=True)
    time.sleep(3)

    last_archived = system.sql("SELECT extract(epoch FROM last_archived_time) FROM pg_stat_archiver")[0][0]
    mistake = make_the_mistake(lambda query: system.psql(query, database="onthemap"), load, checks)
    if last_archived:
        checks.figures["rpo_seconds"] = round(mistake - float(last_archived), 1)

    restore_point = mistake - 1
    began = time.monotonic()
    for service in system.gateways + system.locations:
        service.stop()
    rebuilt = [node for node in system.nodes if node is not primary]
    logged_before = {node.name: os.path.getsize(node.log.name) for node in rebuilt}
    target = utc(restore_point).strftime("%Y-%m-%d %H:%M:%S.%f+00")
    new = system.restore(target, log=lambda line: print(line, flush=True))
    checks.figures["primary_back_seconds"] = round(time.monotonic() - began, 1)
    checks.expect(new is primary, f"{new.name}, the primary before, is the primary of the restored cluster "
                  f"({checks.figures['primary_back_seconds']} s after the services stopped)")
    expect_verified(checks, replay_verify(stack.args.bin, system.database_url), "replay --verify finds the read model equal to the log")
    for service in system.locations + system.gateways:
        service.start(wait=False)
    for service in system.locations + system.gateways:
        service.wait_ready()
    # HAProxy sends requests to a replica again once its next health check passes: until then a careful
    # client's post is answered 503, and sent again under its key.
    key = str(uuid.uuid4())

    def post():
        """The status of one post under `key`, unless it is one to send again (503, or no answer)."""
        try:
            status, _, _ = request(FRONT, "POST", "/v1/StudentLocation",
                                   {"mapString": f"{checks.name} after", "mediaURL": "https://example.com/after", "latitude": 1, "longitude": 1},
                                   {"Authorization": f"Bearer {stack.students(1)[0]}", "Idempotency-Key": key})
        except OSError:
            return None
        return status if status != 503 else None
    status = poll(post, 30)
    checks.figures["rto_seconds"] = round(time.monotonic() - began, 1)
    checks.expect(status in (200, 201), f"the services answer and take a write ({status}) {checks.figures['rto_seconds']} s "
                  f"after they were stopped")
    print(f"  recovery time: {checks.figures['rto_seconds']} s from the services stopped to a write acknowledged "
          f"(the primary back after {checks.figures['primary_back_seconds']} s)", flush=True)
    check_restored(load.outcomes, restore_point, checks, system.sql)

    system.wait_for_replication(seconds=120)
    checks.figures["standbys_seconds"] = round(time.monotonic() - began, 1)
    methods = {}
    for node in rebuilt:
        with open(node.log.name, errors="replace") as log:
            log.seek(logged_before[node.name])
            methods[node.name] = [line.rsplit(" ", 1)[-1] for line in log.read().splitlines() if "replica has been created using" in line]
    checks.expect(all(found == ["pgbackrest"] for found in methods.values()),
                  f"{' and '.join(methods)} rebuilt from the repository by pgBackRest ({methods}) and streaming from "
                  f"{new.name}, {checks.figures['standbys_seconds']} s after the services stopped")
    checks.figures["timeline"] = (new.state() or {}).get("timeline")


SCENARIOS = {
    "kill-primary": scenario_kill_primary,
    "freeze-primary": scenario_freeze_primary,
    "kill-etcd": scenario_kill_etcd,
    "kill-replicas": scenario_kill_replicas,
    "restore": scenario_restore,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with locations-service and auth-gateway")
    parser.add_argument("--pg-bin", required=True, help="PostgreSQL's programs")
    parser.add_argument("--folder", help="data and logs (a new temporary folder by default, removed if all pass)")
    parser.add_argument("--results", help="write the figures of every scenario here, as JSON")
    parser.add_argument("scenarios", nargs="*", help="the scenarios to run, in this order (all by default)")
    args = parser.parse_args()
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; one of {', '.join(SCENARIOS)}")
    folder = args.folder or tempfile.mkdtemp(prefix="onthemap-ha-")
    # The writers post as fast as they can: neither the write limit nor the cap on one student's pins may refuse them.
    system = topology.Topology(folder, args.bin, args.pg_bin,
                               environment=dict(LOG_LEVEL="warning", WRITE_BURST=str(10**6), PINS_PER_STUDENT=str(10**6)))
    stack = HAStack(system, args)
    results, failed = {}, []
    began = time.monotonic()
    try:
        system.start(log=lambda line: print(line, flush=True))
        results["bring_up_seconds"] = round(time.monotonic() - began, 1)
        for name in args.scenarios or list(SCENARIOS):
            print(f"{name}:", flush=True)
            checks = Checks(name)
            started = time.monotonic()
            try:
                SCENARIOS[name](system, stack, checks)
            except Exception as error:  # a harness failure fails the scenario, with what happened
                checks.expect(False, f"the scenario ran to its end ({type(error).__name__}: {error})")
            checks.figures["seconds"] = round(time.monotonic() - started, 1)
            results[name] = {"passed": not checks.failures, **checks.figures}
            if checks.failures:
                failed.append(name)
    except Exception as error:
        failed.append(f"bring-up ({type(error).__name__}: {error})")
    finally:
        system.stop()
    if args.results:
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2)
    if failed:
        print_logs(folder)
    elif not args.folder:
        shutil.rmtree(folder, ignore_errors=True)
    print("ha: " + (f"FAILED {', '.join(failed)}" if failed else f"all {len(results) - 1} scenarios passed"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
