"""Processes the tests start: each in a session of its own (a Ctrl-C reaches the test program alone, which
stops them in order), its output appended to FOLDER/NAME.log; free ports; the services on loopback."""
import os
import secrets
import signal
import socket
import subprocess
from pathlib import Path

from .client import get_json
from .waiting import poll

# What locations-service and the gateways started by one test program share.
INTERNAL_TOKEN = secrets.token_urlsafe(32)


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def descendants(pids):
    """`pids` and every process below them, from /proc."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(") ")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, waiting = [], list(pids)
    while waiting:
        pid = waiting.pop()
        if pid not in found:
            found.append(pid)
            waiting.extend(children.get(pid, []))
    return found


def signal_all(pids, number):
    for pid in pids:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def print_logs(folder):
    """The end of every log under `folder`, for a failed run."""
    for place, _, files in os.walk(folder):
        for log in sorted(name for name in files if name.endswith(".log")):
            print(f"--- {log} (last lines)\n" + open(os.path.join(place, log), errors="replace").read()[-3000:])


class Child:
    """One process, its output in `folder`/NAME.log, in a session of its own."""

    def __init__(self, name, folder):
        self.name = name
        self.log = open(Path(folder) / f"{name}.log", "ab")
        self.process = None

    def run(self, command, environment=None):
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, env=environment, start_new_session=True)

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self, grace=10):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()


class Service(Child):
    """One replica of a service (locations-service or auth-gateway) serving on `address`:`port`, so that it
    can be killed and started again there."""

    def __init__(self, binary, name, address, port, environment, folder):
        super().__init__(name, folder)
        self.binary, self.address, self.port = binary, address, port
        self.environment = dict(os.environ, **environment)

    @classmethod
    def on_loopback(cls, binary, name, environment, folder):
        """A service on a free port of 127.0.0.1 with this program's INTERNAL_TOKEN, logging warnings only."""
        return cls(binary, name, "127.0.0.1", free_port(), dict(INTERNAL_TOKEN=INTERNAL_TOKEN, LOG_LEVEL="warning", **environment),
                   folder)

    @property
    def url(self):
        return f"http://{self.address}:{self.port}"

    def start(self, wait=True):
        self.run([self.binary, "serve", "--host", self.address, "--port", str(self.port)], self.environment)
        if wait:
            self.wait_ready()

    def wait_ready(self, seconds=60):
        """Returns once /readyz answers 200; raises if the process ended first or `seconds` passed."""
        if not poll(lambda: get_json(f"{self.url}/readyz")[0] == 200 or self.process.poll() is not None, seconds):
            raise RuntimeError(f"{self.name} not ready after {seconds} s; see {self.log.name}")
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log.name}")
