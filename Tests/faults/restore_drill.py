#!/usr/bin/env python3
"""The restore drill: a mistake made under load, undone by restoring the database to just before it.

On a private cluster whose WAL is archived by pgBackRest (scripts/backup-lib.sh, as scripts/up.sh runs
one), writers post pins through the public gateway, each under its own Idempotency-Key and retried until
acknowledged, and every acknowledgement is recorded with its time. A full backup is taken mid-load; more
posts follow, a student is erased, an operator hides a pin and disables an account; then the mistake,
`DROP SCHEMA locations CASCADE`, and posts after it fail. `scripts/restore.sh --to` restores to one second
before the mistake and the services start again. The checks:

- every pin acknowledged before the restore point is in the log exactly once and in the read model;
  nothing sent after it is in the log;
- the erased student is in no read (the list, their pins, their profile) and no table file of the database;
- the hidden pin stays hidden, the disabled account cannot log in;
- `locations-service replay --verify` finds the read model equal to the log; the services answer and take
  writes again; `/metrics` reports the backup's and the archive's ages.

Then a second restore, to a moment after the backup and before the erasure, the hide and the disabling:
the WAL alone would bring all three back, so this one proves the restore ledger (`RESTORE_LEDGER`), which
restore.sh re-applies before any request is let in.

The recovery point objective is the time between the last WAL segment archived and the mistake (what a
disk lost at that moment would have taken with it; this restore loses nothing, as restore.sh archives the
old cluster's last WAL first); the recovery time is from the restore's start to the first write
acknowledged after it.

    restore_drill.py --bin BIN_DIR [--seconds N] [--events N] [--results FILE]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # Tests/, for the harness
from harness import ROOT, SCRIPTS  # noqa: E402
from harness.checks import Checks, expect_verified  # noqa: E402
from harness.client import PASSWORD, read_json, request, sign_up_students  # noqa: E402
from harness.load import Load  # noqa: E402
from harness.postgres import Cluster, shell  # noqa: E402
from harness.processes import INTERNAL_TOKEN, Service, free_port, print_logs  # noqa: E402
from harness.restore import check_restored, make_the_mistake, utc  # noqa: E402


def backup_lib(data, snippet):
    """Runs `snippet` in bash with scripts/lib.sh and scripts/backup-lib.sh sourced and the backup settings of
    `data`: its standard output."""
    return shell(f'backup_settings "$1"; {snippet}', data, backups=True).stdout


class ArchivedCluster(Cluster):
    """A private cluster in `data`/postgres, as scripts/up.sh keeps it, its WAL archived to `data`/backups."""

    def __init__(self, data):
        self.folder, self.data, self.settings, self.port = data, os.path.join(data, "postgres"), (), free_port()
        backup_lib(data, f'write_backup_config "{self.data}" {self.port}')
        self.start()
        backup_lib(data, "ensure_stanza")

    def start(self):
        backup_lib(self.folder, f'mapfile -t archiving < <(archive_settings); start_private_postgres "{self.data}" {self.port} "${{archiving[@]}}"')

    def pgbackrest(self, *args):
        return backup_lib(self.folder, "pgbackrest_run " + " ".join(args))


class Stack:
    """locations-service and a gateway on the archived cluster, recording in the ledger beside the backups."""

    def __init__(self, args, folder):
        self.args, self.folder = args, folder
        self.data = os.path.join(folder, "data")
        os.makedirs(self.data)
        self.cluster = ArchivedCluster(self.data)
        self.ledger = os.path.join(self.data, "backups", "ledger.jsonl")
        self.environment = {"DATABASE_URL": self.cluster.url, "RESTORE_LEDGER": self.ledger}
        self.locations = Service.on_loopback(os.path.join(args.bin, "locations-service"), "locations-service",
                                             dict(self.environment, PINS_PER_STUDENT=str(10**6), BACKUP_STANZA="onthemap",
                                                  PGBACKREST_CONFIG=os.path.join(self.data, "pgbackrest", "pgbackrest.conf")),
                                             folder)
        self.gateways = [Service.on_loopback(os.path.join(args.bin, "auth-gateway"), "auth-gateway",
                                             dict(self.environment, LOCATIONS_URL=self.locations.url, WRITE_BURST=str(10**6)), folder)]

    def start_services(self):
        self.locations.environment["DATABASE_URL"] = self.cluster.url
        self.locations.start()
        self.gateways[0].environment["LOCATIONS_URL"] = self.locations.url
        self.gateways[0].start()

    def stop_services(self):
        for service in self.gateways + [self.locations]:
            service.stop()

    def load(self, writers, readers, tag):
        port = self.gateways[0].port
        return Load([port], sign_up_students(port, writers), readers=readers, tag=tag)

    def cli(self, binary, *args, check=True):
        """One of the operators' commands, as an operator on this host runs it."""
        return subprocess.run([os.path.join(self.args.bin, binary), *args], check=check, capture_output=True, text=True,
                              env=dict(os.environ, LOG_LEVEL="warning", **self.environment))

    def restore(self, moment):
        """scripts/restore.sh --to `moment` (a UTC datetime), the services stopped: its output and seconds."""
        started = time.monotonic()
        environment = dict(os.environ, ONTHEMAP_DATA=self.data, ONTHEMAP_PG_PORT=str(self.cluster.port), ONTHEMAP_BIN=self.args.bin,
                           ONTHEMAP_DATABASE="postgres", RESTORE_LEDGER=self.ledger, PORT=str(self.gateways[0].port),
                           LOCATIONS_PORT=str(self.locations.port), INTERNAL_TOKEN=INTERNAL_TOKEN)
        answer = subprocess.run([os.path.join(SCRIPTS, "restore.sh"), "--to", moment.strftime("%Y-%m-%d %H:%M:%S.%f+00")],
                                env=environment, capture_output=True, text=True)
        print("    " + "\n    ".join((answer.stdout + answer.stderr).strip().splitlines()), flush=True)
        if answer.returncode != 0:
            raise RuntimeError(f"restore.sh exited with {answer.returncode}")
        return answer.stdout, time.monotonic() - started


class Student:
    """One signed-up student with a session, whose strings are unique to this run (for the file scan)."""

    def __init__(self, gateway, role):
        tag = uuid.uuid4().hex[:10]
        self.first, self.email, self.gateway = f"{role.capitalize()}{tag}", f"{role}-{tag}@example.com", gateway
        status, _, body = request(gateway, "POST", "/v1/accounts",
                                  {"email": self.email, "password": PASSWORD, "firstName": self.first, "lastName": "Drill"})
        assert status == 201, f"sign-up answered {status}: {body[:200]}"
        self.session, self.key = self.log_in()

    def log_in(self):
        status, _, body = request(self.gateway, "POST", "/v1/session", {"udacity": {"username": self.email, "password": PASSWORD}})
        if status != 200:
            return None, None
        answer = read_json(body)
        return answer["session"]["id"], answer["account"]["key"]

    def post(self, place):
        status, _, body = request(self.gateway, "POST", "/v1/StudentLocation",
                                  {"mapString": place, "mediaURL": "https://example.com/drill", "latitude": 48.85, "longitude": 2.35},
                                  {"Authorization": f"Bearer {self.session}", "Idempotency-Key": str(uuid.uuid4())})
        assert status in (200, 201), f"post answered {status}: {body[:200]}"
        return json.loads(body)["objectId"]


def check_ledger_held(stack, erased, erased_pins, hidden_pin, disabled, checks, when):
    """The erased student in no read and no table file, the hidden pin hidden, the disabled account refused."""
    gateway = stack.gateways[0].port
    _, _, body = request(gateway, "GET", "/v1/StudentLocation?limit=1000")
    listed = json.loads(body)["results"]
    checks.expect(not any(pin["uniqueKey"] == erased.key for pin in listed), f"{when}: the erased student is in no list")
    statuses = [request(gateway, "GET", f"/v1/StudentLocation/{pin}")[0] for pin in erased_pins]
    checks.expect(all(status == 404 for status in statuses), f"{when}: each of the erased student's pins is 404 ({statuses})")
    checks.expect(request(gateway, "GET", f"/v1/users/{erased.key}")[0] == 404, f"{when}: the erased student's profile is 404")
    # The file scan of the erasure tests (TestSupport's TestDatabase.relationsHolding): every page on disk,
    # then each file of the database's folder read raw.
    stack.cluster.sql("CHECKPOINT")
    folder = stack.cluster.sql("SELECT current_setting('data_directory') || '/base/' || oid FROM pg_database WHERE datname = current_database()")[0][0]
    needles = [erased.first.encode(), erased.email.encode(), b"erased-" + erased.first.encode()]
    holding = sorted({name for name in os.listdir(folder) for needle in needles
                      if needle in open(os.path.join(folder, name), "rb").read()})
    checks.expect(not holding, f"{when}: no table file of the database holds the erased student ({holding})")
    checks.expect(not any(pin["objectId"] == hidden_pin for pin in listed) and request(gateway, "GET", f"/v1/StudentLocation/{hidden_pin}")[0] == 404,
                  f"{when}: the hidden pin stays hidden")
    status, _, _ = request(gateway, "POST", "/v1/session", {"udacity": {"username": disabled.email, "password": PASSWORD}})
    checks.expect(status == 403, f"{when}: the disabled account cannot log in ({status})")


def check_serving(stack, checks, when):
    """replay --verify clean, and a write acknowledged: the time it was acknowledged."""
    verify = stack.cli("locations-service", "replay", "--verify", check=False)
    expect_verified(checks, verify, f"{when}: replay --verify finds the read model equal to the log")
    student = Student(stack.gateways[0].port, "after")
    student.post("after the restore")
    return time.monotonic()


def preload(stack, events, checks):
    """A log of `events` events before the drill's own (bench/generate-events.sql, 4 per pin, as the replay
    benchmark writes it, without the pins' past versions, which nothing here reads), and its read model."""
    started = time.monotonic()
    stack.cluster.sql("ALTER TABLE locations.events DISABLE TRIGGER events_pin_versions")
    subprocess.run(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(stack.cluster.port), "-U", "onthemap", "-d", "postgres",
                    "-v", "ON_ERROR_STOP=1", "-v", f"pins={events // 4}", "-v", "blocks=10",
                    "-f", str(ROOT / "bench" / "generate-events.sql")], check=True, capture_output=True)
    stack.cluster.sql("ALTER TABLE locations.events ENABLE TRIGGER events_pin_versions")
    stack.cli("locations-service", "replay")
    stack.cluster.sql("VACUUM (ANALYZE) locations.events")
    checks.figures["preloaded_events"] = int(stack.cluster.sql("SELECT count(*) FROM locations.events")[0][0])
    checks.figures["database_mb"] = int(stack.cluster.sql("SELECT pg_database_size(current_database()) / 1048576")[0][0])
    print(f"  a log of {checks.figures['preloaded_events']:,} events written and replayed in {time.monotonic() - started:.0f} s "
          f"(the database {checks.figures['database_mb']} MB)", flush=True)


def drill(args, folder):
    checks = Checks("restore-drill")
    stack = Stack(args, folder)
    stack.start_services()
    if args.events:
        preload(stack, args.events, checks)
    gateway = stack.gateways[0].port
    erased, hidden_owner, disabled = (Student(gateway, role) for role in ("erased", "owner", "disabled"))
    erased_pins = [erased.post(f"erased-{erased.first} {index}") for index in range(3)]
    hidden_pin = hidden_owner.post("to be hidden")
    disabled.post("disabled later")

    load = stack.load(writers=4, readers=1, tag="drill")
    time.sleep(args.seconds)
    started = time.monotonic()
    stack.cluster.pgbackrest("--type=full", "backup")
    checks.figures["full_backup_seconds"] = round(time.monotonic() - started, 1)
    print(f"  a full backup taken under load in {checks.figures['full_backup_seconds']} s", flush=True)
    time.sleep(args.seconds)
    before_actions = time.time()
    time.sleep(1.5)

    status, _, _ = request(gateway, "DELETE", "/v1/accounts/me", headers={"Authorization": f"Bearer {erased.session}"})
    checks.expect(status == 200, f"the student is erased ({status})")
    hide = stack.cli("locations-service", "moderate", "hide", hidden_pin, "--reason", "drill", "--operator", "drill")
    disable = stack.cli("auth-gateway", "accounts", "disable", disabled.email, "--operator", "drill")
    print(f"  {hide.stdout.strip()}; {disable.stdout.strip()}", flush=True)
    with open(stack.ledger) as ledger:
        checks.expect(len(ledger.readlines()) == 3, "the erasure, the hide and the disabling are in the ledger")
    time.sleep(args.seconds)

    status, _, body = request(stack.locations.port, "GET", "/metrics", headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"})
    metrics = body.decode()
    checks.expect("onthemap_wal_last_archived_age_seconds" in metrics and "onthemap_backup_last_success_age_seconds" in metrics,
                  "/metrics reports the age of the last archived WAL and of the last backup")

    last_archived = float(stack.cluster.sql("SELECT extract(epoch FROM last_archived_time) FROM pg_stat_archiver")[0][0])
    mistake = make_the_mistake(stack.cluster.sql, load, checks)
    checks.figures["rpo_seconds"] = round(mistake - last_archived, 1)
    print(f"  recovery point: the last WAL segment was archived {checks.figures['rpo_seconds']} s before the mistake", flush=True)

    restore_point = mistake - 1
    restore_started = time.monotonic()
    stack.stop_services()
    output, seconds = stack.restore(utc(restore_point))
    checks.figures["restore_script_seconds"] = round(seconds, 1)
    stack.cluster.start()
    stack.start_services()
    check_restored(load.outcomes, restore_point, checks, stack.cluster.sql)
    check_ledger_held(stack, erased, erased_pins, hidden_pin, disabled, checks, "restored to before the mistake")
    served = check_serving(stack, checks, "restored to before the mistake")
    checks.figures["rto_seconds"] = round(served - restore_started, 1)
    checks.figures["events"] = int(stack.cluster.sql("SELECT count(*) FROM locations.events")[0][0])
    print(f"  recovery time: {checks.figures['rto_seconds']} s from the services stopped to a write acknowledged "
          f"({checks.figures['restore_script_seconds']} s of it restore.sh; {checks.figures['events']} events in the log)", flush=True)

    # The second restore: to before the erasure, the hide and the disabling, which only the ledger remembers.
    stack.stop_services()
    output, seconds = stack.restore(utc(before_actions))
    checks.expect("ledger: 1 erasure(s)" in output, "the restore re-applied the ledger's erasure")
    stack.cluster.start()
    stack.start_services()
    check_ledger_held(stack, erased, erased_pins, hidden_pin, disabled, checks, "restored to before the erasure")
    check_serving(stack, checks, "restored to before the erasure")
    stack.stop_services()
    stack.cluster.stop("fast")
    return checks


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with locations-service and auth-gateway")
    parser.add_argument("--seconds", type=float, default=6, help="each stretch of load (before the backup, after it, after the erasure)")
    parser.add_argument("--events", type=int, default=0, help="write a log of this many events first (e.g. 1000000)")
    parser.add_argument("--results", help="write the figures here as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the drill's folder (data, logs)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="restore-drill-")
    os.chmod(folder, 0o755)  # the postgres user reaches its folders inside
    print("restore-drill", flush=True)
    try:
        checks = drill(args, folder)
    except Exception:
        print_logs(folder)
        raise
    if args.results:
        with open(args.results, "w") as results:
            json.dump({"restore-drill": {"failures": checks.failures, **checks.figures}}, results, indent=2)
    if checks.failures:
        print_logs(folder)
        print(f"restore-drill: {len(checks.failures)} check(s) failed; files kept in {folder}")
        sys.exit(1)
    if not args.keep:
        shell('stop_private_postgres "$1"', f"{folder}/data/postgres", check=False)
        shutil.rmtree(folder, ignore_errors=True)
    print("restore-drill: every check passed")


if __name__ == "__main__":
    main()
