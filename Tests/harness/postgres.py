"""A private PostgreSQL cluster, as every script of the project runs one: scripts/lib.sh creates it on first
use (superuser `onthemap`, trust on loopback only), and starts and stops it, as the unprivileged `postgres`
user when we are root (the server refuses to run as root). The harness runs lib.sh's functions rather than
a second copy of them."""
import os
import subprocess

from . import ROOT, SCRIPTS
from .processes import free_port


class ShellError(RuntimeError):
    """A snippet of scripts/lib.sh that failed; the message ends with what it printed."""


def shell(snippet, *args, backups=False, check=True, environment=None):
    """Runs `snippet` in bash (strict: -euo pipefail) in the repository's root, with scripts/lib.sh sourced
    (and scripts/backup-lib.sh with `backups`), `args` as its $1, $2... and `environment` added to its own:
    the finished process, its output captured as text. Raises ShellError when it fails, unless not `check`."""
    sources = f'source "{SCRIPTS}/lib.sh"; ' + (f'source "{SCRIPTS}/backup-lib.sh"; ' if backups else "")
    answer = subprocess.run(["bash", "-c", f"set -euo pipefail; {sources}{snippet}", "bash", *map(str, args)], cwd=ROOT,
                            capture_output=True, text=True,
                            env=dict(os.environ, **{name: str(value) for name, value in (environment or {}).items()}))
    if check and answer.returncode != 0:
        raise ShellError(f"{snippet.split()[0]} exited with {answer.returncode}: {(answer.stdout + answer.stderr).strip()[-1500:]}")
    return answer


def as_postgres_user(command):
    """`command` as the `postgres` user when we are root, as PostgreSQL (and Patroni, which starts it) must run."""
    if os.getuid() != 0:
        return command
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + command


class Cluster:
    """A private cluster in `data` on a free port, started, with default durability (fsync and synchronous
    commit on) unless `settings` (postgres -c settings) say otherwise. Its log is `data`/server.log."""

    def __init__(self, data, settings=()):
        self.data, self.settings, self.port = str(data), tuple(settings), free_port()
        self.start()

    @property
    def url(self):
        return f"postgres://onthemap@127.0.0.1:{self.port}/postgres"

    @property
    def log(self):
        return os.path.join(self.data, "server.log")

    def start(self):
        shell('start_private_postgres "$@"', self.data, self.port, *self.settings)

    def stop(self, mode="fast"):
        """pg_ctl's `mode`: fast, or immediate for a crash that the next start recovers from the WAL."""
        shell('stop_private_postgres "$@"', self.data, mode)

    def running(self):
        return shell('private_postgres_running "$1"', self.data, check=False).returncode == 0

    def sql(self, query):
        """The rows of `query` as the superuser, each a list of its columns as text."""
        answer = subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(self.port), "-U", "onthemap", "-d", "postgres",
                                 "-v", "ON_ERROR_STOP=1", "-c", query], check=True, capture_output=True, text=True)
        return [line.split("|") for line in answer.stdout.splitlines() if line]
