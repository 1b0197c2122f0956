#!/usr/bin/env python3
"""On The Map across three database hosts, two gateways and two locations-services, on one machine.

Each simulated host has its own loopback address, as a real one has its own network address:

    127.0.0.10        HAProxy: the public door (:8080), locations-service for the gateways (:8081),
                      the PostgreSQL primary (:5432), a standby (:5433), its statistics page (:7000)
    127.0.0.11 .. 13  a database host each: Patroni (:8008) running PostgreSQL 15 (:5432), the primary
                      or a synchronous or asynchronous standby
    127.0.0.41 .. 43  an etcd member each (:2379, :2380), where Patroni keeps its leader lock
    127.0.0.21, .22   auth-gateway replicas (:8080)
    127.0.0.31, .32   locations-service replicas (:8081)

The three database hosts archive their WAL to one pgBackRest repository, FOLDER/backups here (on real
hosts one that every host reaches: an object store, or a backup host), with one key, FOLDER/backup-key;
each host has its own pgbackrest.conf (scripts/backup-lib.sh writes it), spool and log. Patroni starts
through patroni-rewind-fix.py, which corrects one decision of Debian 12's Patroni that the repository's
restore_command would otherwise get wrong.

The configuration files in this folder are what each real host carries (README, "High availability");
this module fills in the addresses, the folders and the passwords, and starts the processes. It is used by
scripts/ha-up.sh (`topology.py up`) and by the failover tests (Tests/ha/ha.py), which kill and freeze the
processes of one host at a time, and restore the database from the repository (`Topology.restore`).
"""
import argparse
import json
import os
import secrets
import shutil
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "Tests"))  # the harness: processes, PostgreSQL's user, HTTP, waiting
from harness.client import get_json  # noqa: E402
from harness.postgres import as_postgres_user, shell  # noqa: E402
from harness.processes import Child, Service, descendants, signal_all  # noqa: E402
from harness.waiting import wait_until  # noqa: E402

PREFIX = os.environ.get("HA_ADDRESS_PREFIX", "127.0.0")
LB = f"{PREFIX}.10"
NODES = [(f"db{index}", f"{PREFIX}.{10 + index}") for index in (1, 2, 3)]
ETCD = [(f"etcd{index}", f"{PREFIX}.{40 + index}") for index in (1, 2, 3)]
GATEWAYS = [f"{PREFIX}.21", f"{PREFIX}.22"]
LOCATIONS = [f"{PREFIX}.31", f"{PREFIX}.32"]
GATEWAY_PORT, LOCATIONS_PORT = 8080, 8081
# How often a wait asks Patroni, HAProxy or the services again.
POLL = 0.25


def render(template, values, target):
    """`template` (a file of this folder) with each ${NAME} filled in, written to `target`."""
    text = string.Template((HERE / template).read_text()).substitute(values)
    Path(target).write_text(text)
    return target


def backup_lib(snippet, *args, **settings):
    """Runs `snippet` in bash with scripts/lib.sh and scripts/backup-lib.sh sourced, `args` as its $1, $2...
    and `settings` in its environment: its standard output."""
    return shell(snippet, *args, backups=True, environment=settings).stdout


def patroni_command():
    """Patroni as ha/patroni-rewind-fix.py starts it, with the interpreter the installed `patroni` names."""
    with open(shutil.which("patroni")) as script:
        interpreter = script.readline().removeprefix("#!").split()
    return interpreter + [str(HERE / "patroni-rewind-fix.py")]


class EtcdMember(Child):
    """One member of the etcd cluster, on a host of its own."""

    def __init__(self, topology, name, address):
        super().__init__(name, topology.folder)
        self.topology, self.address = topology, address
        self.folder = topology.folder / name

    def configure(self):
        self.folder.mkdir(mode=0o700, exist_ok=True)
        render("etcd.yml", dict(self.topology.values, NAME=self.name, ADDRESS=self.address, DATA_DIR=self.folder / "data"),
               self.folder / "etcd.yml")

    def start(self):
        self.run(["etcd", "--config-file", str(self.folder / "etcd.yml")])

    def is_leader(self):
        """Whether this member leads the etcd cluster now."""
        return (get_json(f"http://{self.address}:2379/v2/stats/self")[1] or {}).get("state") == "StateLeader"


class Node:
    """One database host: Patroni, which runs PostgreSQL there."""

    def __init__(self, topology, name, address):
        self.topology, self.name, self.address = topology, name, address
        self.folder = topology.folder / name  # the postgres user's: PostgreSQL's data, Patroni's files
        self.patroni = None
        self.frozen = []
        self.log = open(topology.folder / f"{name}.log", "ab")

    @property
    def api(self):
        return f"http://{self.address}:8008"

    @property
    def data_dir(self):
        return self.folder / "postgres"

    def configure(self):
        self.folder.mkdir(mode=0o700, exist_ok=True)
        render("patroni.yml", dict(self.topology.values, NAME=self.name, ADDRESS=self.address, DATA_DIR=self.folder,
                                   PGBACKREST_CONFIG=self.folder / "pgbackrest" / "pgbackrest.conf"),
               self.folder / "patroni.yml")
        os.chmod(self.folder / "patroni.yml", 0o600)
        # pgBackRest reaches the server through its socket, in this folder, as the superuser: as `postgres`
        # that is the server's local `peer` rule.
        self.backup_lib('write_backup_config "$1" 5432 "$2" postgres', self.data_dir, self.folder)
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", str(self.folder)], check=True)

    def backup_lib(self, snippet, *args):
        """`snippet` (see backup_lib) with this host's backup settings: the repository and key every host
        shares, and its own pgbackrest.conf, spool, log and lock folders in its folder."""
        return backup_lib(f'backup_settings "{self.folder}"; {snippet}', *args,
                          BACKUP_REPO=self.topology.folder / "backups", BACKUP_KEY_FILE=self.topology.folder / "backup-key")

    def start(self):
        self.patroni = subprocess.Popen(as_postgres_user(patroni_command() + [str(self.folder / "patroni.yml")]),
                                        stdout=self.log, stderr=self.log, env=dict(os.environ, HOME=str(self.folder)),
                                        start_new_session=True)

    def postmaster(self):
        """The PostgreSQL server's process id; Patroni starts it in a session of its own, so that it outlives Patroni."""
        try:
            return int((self.folder / "postgres" / "postmaster.pid").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            return None

    def processes(self):
        """Every process of this host (the server first, so that it forks no more once stopped)."""
        roots = [pid for pid in (self.postmaster(),) if pid]
        if self.patroni and self.patroni.poll() is None:
            roots.append(self.patroni.pid)
        return descendants(roots)

    def kill(self):
        """The host dies: SIGKILL to every process of it, at once."""
        for _ in range(3):  # a process forked while the others died
            signal_all(self.processes(), signal.SIGKILL)
            time.sleep(0.1)
        self.patroni.wait()

    def freeze(self):
        """The host stops answering without closing a socket: SIGSTOP to every process of it."""
        self.frozen = self.processes()
        signal_all(self.frozen, signal.SIGSTOP)

    def thaw(self):
        signal_all(self.frozen, signal.SIGCONT)

    def state(self):
        """What this host's Patroni says of itself: role (primary, replica), state, timeline; None if it does not answer."""
        return get_json(f"{self.api}/patroni")[1]

    def stop(self):
        if self.patroni and self.patroni.poll() is None:
            self.patroni.terminate()
            try:
                self.patroni.wait(30)
            except subprocess.TimeoutExpired:
                signal_all(self.processes(), signal.SIGKILL)


class Topology:
    """Everything above, its files in `folder` (made if missing: data, logs, the rendered configuration)."""

    def __init__(self, folder, binaries, pg_bin, environment=None):
        self.folder = Path(folder).resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o755)  # the postgres user reaches its own folders inside
        self.binaries, self.pg_bin = Path(binaries), pg_bin
        secrets_file = self.folder / "secrets.json"
        if not secrets_file.exists():
            secrets_file.write_text(json.dumps({name: secrets.token_urlsafe(24) for name in
                                                ("superuser", "replication", "onthemap", "internal_token")}))
            os.chmod(secrets_file, 0o600)
        self.secrets = json.loads(secrets_file.read_text())
        self.values = dict(
            ETCD_CLUSTER=",".join(f"{name}=http://{address}:2380" for name, address in ETCD),
            ETCD_HOSTS=",".join(f"{address}:2379" for _, address in ETCD),
            PG_BIN=pg_bin, NETWORK=f"{PREFIX}.0/24", SUPERUSER_PASSWORD=self.secrets["superuser"],
            REPLICATION_PASSWORD=self.secrets["replication"], LB=LB, HA_DIR=HERE,
            GATEWAY_PORT=GATEWAY_PORT, LOCATIONS_PORT=LOCATIONS_PORT,
            GATEWAY1=GATEWAYS[0], GATEWAY2=GATEWAYS[1], LOCATIONS1=LOCATIONS[0], LOCATIONS2=LOCATIONS[1],
            **{f"NODE{index + 1}": name for index, (name, _) in enumerate(NODES)},
            **{f"ADDRESS{index + 1}": address for index, (_, address) in enumerate(NODES)})
        self.nodes = [Node(self, name, address) for name, address in NODES]
        self.etcd = [EtcdMember(self, name, address) for name, address in ETCD]
        self.haproxy = Child("haproxy", self.folder)
        shared = dict(DATABASE_URL=self.database_url, INTERNAL_TOKEN=self.secrets["internal_token"], **(environment or {}))
        self.locations = [Service(str(self.binaries / "locations-service"), f"locations-{index + 1}", address,
                                  LOCATIONS_PORT, shared, self.folder) for index, address in enumerate(LOCATIONS)]
        self.gateways = [Service(str(self.binaries / "auth-gateway"), f"gateway-{index + 1}", address, GATEWAY_PORT,
                                 dict(shared, LOCATIONS_URL=f"http://{LB}:{LOCATIONS_PORT}", TRUSTED_PROXIES=LB), self.folder)
                         for index, address in enumerate(GATEWAYS)]

    @property
    def database_url(self):
        return f"postgres://onthemap:{self.secrets['onthemap']}@{LB}:5432/onthemap"

    @property
    def public_url(self):
        return f"http://{LB}:{GATEWAY_PORT}"

    def start(self, log=print):
        """From nothing (or from the data of an earlier run) to On The Map answering at `public_url`."""
        for host in self.etcd + self.nodes:
            host.configure()
        render("haproxy.cfg", self.values, self.folder / "haproxy.cfg")
        log("starting etcd on three hosts, and Patroni on three database hosts...")
        for host in self.etcd + self.nodes:
            host.start()
        self.haproxy.run(["haproxy", "-db", "-f", str(self.folder / "haproxy.cfg")])
        leader = self.wait_for_replication(seconds=180)
        log(f"PostgreSQL: {leader.name} is the primary, the others stream from it")
        self.create_database()
        for binary in ("locations-service", "auth-gateway"):
            subprocess.run([str(self.binaries / binary), "migrate"], check=True, env=self.locations[0].environment,
                           stdout=subprocess.DEVNULL)
        for service in self.locations + self.gateways:
            service.start(wait=False)
        for service in self.locations + self.gateways:
            service.wait_ready()
        wait_until(lambda: get_json(f"{self.public_url}/readyz")[0] == 200, 30, "the public door answers", every=POLL)
        # The repository's stanza once the primary runs (created on first use, checked later), a segment
        # archived, and a full backup when it holds none: from then on a standby is built from the repository.
        log(self.leader().backup_lib("""ensure_stanza >/dev/null
            read -r _ since_full <<<"$(backup_ages)"
            if [ "$since_full" -lt 0 ]; then backup_now full; else echo "backup: the last full backup is $since_full s old"; fi""").strip())

    def cluster(self):
        """Patroni's view of the cluster (GET /cluster) from the first host that answers: its members."""
        for node in self.nodes:
            status, body = get_json(f"{node.api}/cluster")
            if status == 200 and body:
                return body.get("members", [])
        return []

    def leader(self):
        """The host whose Patroni says it runs the primary and holds the lock; None between two."""
        for node in self.nodes:
            if get_json(f"{node.api}/primary")[0] == 200:
                return node
        return None

    def wait_for_replication(self, seconds=120):
        """Waits for a primary with a synchronous standby and every other host streaming from it."""
        def ready():
            members = self.cluster()
            roles = sorted(member.get("role") for member in members if member.get("state") in ("running", "streaming"))
            return len(members) == 3 and roles == ["leader", "replica", "sync_standby"] and self.leader() is not None
        wait_until(ready, seconds, "three database hosts, a primary and a synchronous standby", every=POLL)
        return self.leader()

    def psql(self, sql, user="postgres", database="postgres", port=5432):
        password = self.secrets["superuser" if user == "postgres" else user]
        answer = subprocess.run([f"{self.pg_bin}/psql", "-X", "-At", "-h", LB, "-p", str(port), "-U", user, "-d", database,
                                 "-v", "ON_ERROR_STOP=1", "-c", sql], check=True, capture_output=True, text=True,
                                env=dict(os.environ, PGPASSWORD=password, PGCONNECT_TIMEOUT="5"))
        return [line.split("|") for line in answer.stdout.splitlines() if line]

    def sql(self, query):
        """Rows of a query on the primary, as the services' own user."""
        return self.psql(query, user="onthemap", database="onthemap")

    def accepts_writes(self):
        """Whether the server HAProxy sends the services to is a primary that has finished its promotion."""
        try:
            return self.psql("SELECT pg_is_in_recovery()") == [["f"]]
        except subprocess.CalledProcessError:
            return False

    def create_database(self):
        """The services' user and database, once, on the primary (the standbys replicate them)."""
        password = self.secrets["onthemap"].replace("'", "''")
        if not self.psql("SELECT 1 FROM pg_roles WHERE rolname = 'onthemap'"):
            self.psql(f"CREATE ROLE onthemap LOGIN PASSWORD '{password}'")
        if not self.psql("SELECT 1 FROM pg_database WHERE datname = 'onthemap'"):
            self.psql("CREATE DATABASE onthemap OWNER onthemap")

    def stop_databases(self):
        """Patroni, which stops PostgreSQL, on all three hosts at once: one by one, each would fail over to the next."""
        for node in self.nodes:
            if node.patroni and node.patroni.poll() is None:
                node.patroni.terminate()
        for node in self.nodes:
            node.stop()

    def restore(self, target, log=print):
        """The database as it was at `target` (a time with its zone, as pgBackRest's --target takes it), through
        Patroni: with the services stopped, the primary's last WAL archived, Patroni stopped on every host and
        its record of the cluster removed from etcd, the primary's data folder restored from the repository
        (--delta: only the files that differ) and recovered up to `target`, where it promotes itself; Patroni
        started there takes it as a new cluster's primary. The other hosts' data folders, which hold the
        mistake too, are moved aside (DATA_DIR.before-restore-TIME), and their Patroni rebuilds each from the
        repository (create_replica_methods). Returns the new primary once it answers as one; the standbys are
        still being rebuilt (wait_for_replication waits for them)."""
        primary = self.leader()
        if primary is not None:
            try:
                primary.backup_lib("pgbackrest_run check")  # a new segment, and the one it closed archived
                log(f"  {primary.name}'s last WAL archived")
            except RuntimeError as error:
                log(f"  could not archive {primary.name}'s last WAL; restoring what the repository holds ({error})")
        else:
            # No primary answers: any host's folder will do, as --delta only saves copying what matches.
            primary = self.nodes[0]
        began = time.monotonic()
        self.stop_databases()
        wait_until(lambda: not any(node.postmaster() and Path(f"/proc/{node.postmaster()}").exists() for node in self.nodes),
                   60, "PostgreSQL stopped on every host", every=POLL)
        answer = subprocess.run(["patronictl", "-c", str(primary.folder / "patroni.yml"), "remove", "onthemap"],
                                input="onthemap\nYes I am aware\n", capture_output=True, text=True)
        if answer.returncode != 0:
            raise RuntimeError(f"patronictl remove exited with {answer.returncode}: {answer.stdout[-500:]} {answer.stderr[-500:]}")
        log(f"  Patroni and PostgreSQL stopped on every host, the cluster removed from etcd, in {time.monotonic() - began:.1f} s")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for node in self.nodes:
            if node is not primary and node.data_dir.exists():
                node.data_dir.rename(node.data_dir.with_name(f"{node.data_dir.name}.before-restore-{stamp}"))
        began = time.monotonic()
        # The server started on its own, on a port of its own, until it has replayed to `target` and promoted
        # itself, then stopped cleanly: Patroni starts from a cluster that is whole. It archives as its
        # postgresql.conf (Patroni's, restored with the rest) says, so the new timeline's history file is in
        # the repository before a standby is restored from it.
        primary.backup_lib('''pgbackrest_run --delta --type=time "--target=$2" --target-action=promote restore
            port=$(free_port)
            PG_START_TIMEOUT=3600 start_private_postgres "$1" "$port"
            wait_until_promoted "$1" "$port" postgres
            stop_private_postgres "$1"''', primary.data_dir, target)
        log(f"  {primary.name} restored and recovered to {target} in {time.monotonic() - began:.1f} s")
        began = time.monotonic()
        primary.start()
        # Patroni answers as the primary once it holds the lock, a moment before its server's promotion ends.
        wait_until(lambda: self.leader() is primary and self.accepts_writes(), 120, f"{primary.name} the primary of the restored cluster",
                   every=POLL)
        log(f"  {primary.name}'s Patroni took it as the new cluster's primary, taking writes, in {time.monotonic() - began:.1f} s")
        for node in self.nodes:
            if node is not primary:
                node.start()
        return primary

    def stop(self):
        for service in self.gateways + self.locations:
            service.stop()
        self.haproxy.stop()
        self.stop_databases()
        for host in self.etcd:
            host.stop()


def interrupt(*_):
    raise KeyboardInterrupt


def up(arguments):
    topology = Topology(arguments.folder, arguments.bin, arguments.pg_bin)
    # Every process started here runs in a session of its own, so that Ctrl-C reaches this program alone,
    # which stops them in order: the services, then PostgreSQL on all three hosts at once, then etcd.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, interrupt)
    try:
        topology.start()
        members = ", ".join(f"{member['name']} {member['role']}" for member in topology.cluster())
        print(f"""
On The Map is up on three database hosts ({members}).
  clients            {topology.public_url}   (either gateway: {', '.join(s.url for s in topology.gateways)})
  locations-service  http://{LB}:{LOCATIONS_PORT}   (internal: {', '.join(s.url for s in topology.locations)})
  PostgreSQL         postgres://onthemap@{LB}:5432/onthemap, the primary; :5433 a standby (passwords in {topology.folder}/secrets.json)
  HAProxy            http://{LB}:7000/   (which host is up, which is the primary)
  backups            {topology.folder}/backups   (pgBackRest, stanza onthemap; pgbackrest --config={topology.nodes[0].folder}/pgbackrest/pgbackrest.conf info)
  Patroni            patronictl -c {topology.nodes[0].folder}/patroni.yml list
Logs and data are in {topology.folder}. Press Ctrl-C to stop.""", flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping...", flush=True)
        topology.stop()
        print("stopped")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up"])
    parser.add_argument("--folder", required=True, help="data, logs and the rendered configuration")
    parser.add_argument("--bin", required=True, help="folder with locations-service and auth-gateway")
    parser.add_argument("--pg-bin", required=True, help="PostgreSQL's programs (initdb, pg_ctl, psql)")
    up(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
