#!/usr/bin/env python3
"""Benchmarks of locations-service. Each figure is set against a limit measured in the same run, on the
same machine, so the ratio means something even where the absolute numbers do not travel:
  1. hot read      GET latest-100 (wrk)                 vs nginx serving the same bytes as a static file
  2. replay        `locations-service replay`, 1M events vs one SQL statement rebuilding the same pins
  3. durable POST  POST one pin (wrk)                   vs pgbench running one POST's transaction each
  4. memory        the service's VmRSS: idle, and at peak and end of loads 1 and 3
and of auth-gateway in front of it:
  5. gateway read  GET latest-100 through the gateway (wrk) vs nginx serving the same bytes (figure of 1)
  6. gateway POST  POST one pin with a session (wrk)    vs the service's own POST figure (3)
  7. memory        the gateway's VmRSS: idle, and at peak and end of loads 5 and 6
and last, not limits: the code behind claims in comments against the simpler code it replaced (bench/micro),
every parser of client input fuzzed a million runs (bench/fuzz.sh), then `onthemap list --json` against
`curl -s` of the same URL (bench/cli.sh).
The throughputs (1, 3, 5, 6) and replay (2) are measured in several rounds, each next to its limit (see
Benchmarks.alternate).
Rewrites BENCHMARKS.md at the project root; raw outputs and logs go to bench/results/ (not versioned),
every figure among them as a KEY=VALUE line in results.env, which the report is written from.

Usage (as root on Debian 12; installs wrk, nginx and PostgreSQL if missing):
  bench/run.py
Shorter runs for trying it out (the figures in BENCHMARKS.md come from the defaults):
  LOAD_SECONDS=5 WARMUP_SECONDS=1 ROUNDS=1 REPLAY_PINS=25000 bench/run.py
Settings, from the environment:
  LOAD_SECONDS    each measured load, wrk or pgbench (default 10)
  WARMUP_SECONDS  the unmeasured load before them (default 3)
  ROUNDS          how many times each throughput and its limit are measured, alternately (default 5)
  REPLAY_PINS     pins in the replay log, 4 events each (default 250000)
  SKIP_EXTRAS=1   leaves out the micro-measurements, fuzzing and command-line passes at the end (many minutes)
Only the report, written again from bench/results/results.env (after a change to its wording):
  bench/run.py --report-only
"""
import argparse
import base64
import contextlib
import glob
import json
import os
import platform
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from http.client import HTTPException
from pathlib import Path

from section import write_sections

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "results.env"
SUMMARY_LUA = "bench/summary.lua"  # commands run from the project's root


def setting(name, default):
    """A whole number from the environment, DEFAULT when it is unset or empty."""
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        sys.exit(f"bench: {name} must be a whole number, not {value!r}")


LOAD_SECONDS = setting("LOAD_SECONDS", 10)     # each measured load (wrk, pgbench)
WARMUP_SECONDS = setting("WARMUP_SECONDS", 3)  # unmeasured load first: connections open, caches and pools warm
ROUNDS = setting("ROUNDS", 5)                  # each throughput and its limit are measured this many times, alternately
REPLAY_PINS = setting("REPLAY_PINS", 250000)   # the replay log holds 4 events per pin
SKIP_EXTRAS = os.environ.get("SKIP_EXTRAS") == "1"
READ_PINS = 100                                # the hot read returns the newest 100, so 100 pins fill it

# The goals each ratio is held to (service figure / limit measured in the same run).
READ_GOAL = 0.8     # hot read: at least 0.8 × nginx's requests/s
REPLAY_GOAL = 1.5   # replay: at most 1.5 × the SQL rebuild's wall-clock time
POST_GOAL = 0.7     # durable POST: at least 0.7 × pgbench's transactions/s
GW_READ_GOAL = 0.5  # hot read through auth-gateway: at least 0.5 × nginx's requests/s
GW_POST_GOAL = 0.7  # POST through auth-gateway: at least 0.7 × the service's own POST requests/s

HZ = os.sysconf("SC_CLK_TCK")
CPUS = len(os.sched_getaffinity(0))  # as `nproc` counts them


class BenchError(Exception):
    """A step that failed; the run stops, and its message says which step."""


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def show_tail(path, lines=20):
    """The last LINES lines of a log (all of it for None), on stderr: what a failure message points to."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return
    print("\n".join(text if lines is None else text[-lines:]), file=sys.stderr)


class Results:
    """Every figure of the run, kept in memory for the report and appended to bench/results/results.env as it
    comes, so that a run that fails still shows what it had measured."""

    def __init__(self, path):
        self.path = path
        self.values = {}
        path.unlink(missing_ok=True)

    def record(self, key, value):
        self.values[key] = str(value)
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(f"{key}={value}\n")

    def record_max(self, key, pattern):
        """KEY: the largest value recorded so far under a key matching PATTERN (a regular expression)."""
        self.record(key, max((value for name, value in self.values.items() if re.fullmatch(pattern, name)), key=float))


def load_results(path):
    values = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            key, _, value = line.rstrip("\n").partition("=")
            if key:
                values[key] = value
    return values


# Everything this program starts is listed here and stopped on exit, whatever happens.
class Processes:
    """The commands the run starts. Each gets a process group of its own, so that stopping it reaches what
    it started too (nginx's workers), and a Ctrl-C on the terminal reaches only this program, which then
    stops them in order, the last started first."""

    def __init__(self):
        self.running = {}  # process: the signal that stops it

    def spawn(self, args, stdout, stderr, env=None, stop_signal=signal.SIGTERM):
        try:
            proc = subprocess.Popen([str(arg) for arg in args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=stderr, env={**os.environ, **(env or {})}, start_new_session=True)
        except OSError as error:
            raise BenchError(f"could not run {args[0]}: {error}") from None
        self.running[proc] = stop_signal
        return proc

    def start(self, args, output=None, env=None, append=False, stop_signal=signal.SIGTERM):
        """Starts ARGS in the project's root with stdout and stderr into the file OUTPUT (or nowhere), with
        ENV added to the environment; STOP_SIGNAL is what asks it to end."""
        with open(output or os.devnull, "ab" if append else "wb") as out:
            return self.spawn(args, out, subprocess.STDOUT, env, stop_signal)

    def finish(self, proc, seconds):
        """Waits for PROC to end, stopping it after SECONDS; whether it ended with status 0 in time."""
        try:
            return proc.wait(timeout=seconds) == 0
        except subprocess.TimeoutExpired:
            return False
        finally:
            self.stop(proc)

    def run(self, args, seconds, output=None, env=None, append=False, stop_signal=signal.SIGTERM):
        """Runs ARGS to its end (at most SECONDS); whether it succeeded."""
        return self.finish(self.start(args, output, env, append, stop_signal), seconds)

    def run_or_fail(self, args, seconds, output, failure, env=None, append=False, show=20,
                    stop_signal=signal.SIGTERM):
        """Runs ARGS to its end (at most SECONDS); if it fails, shows the last SHOW lines of OUTPUT (all for
        None) and stops the run with FAILURE."""
        if not self.run(args, seconds, output, env, append, stop_signal):
            show_tail(output, show)
            raise BenchError(failure)

    def output(self, args, seconds):
        """Runs ARGS to its end (at most SECONDS) and returns what it printed; stops the run if it failed."""
        proc = self.spawn(args, subprocess.PIPE, subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{Path(args[0]).name} took more than {seconds} s") from None
        finally:
            self.stop(proc)
        if proc.returncode != 0:
            print(err.decode(errors="replace"), end="", file=sys.stderr)
            raise BenchError(f"{Path(args[0]).name} failed")
        return out.decode()

    def stop(self, proc):
        """Its stop signal to its group, up to 10 s for it to end, then SIGKILL; and forget it, so that a
        recycled process id is never signalled later."""
        if proc.poll() is None:
            signal_group(proc, self.running.get(proc, signal.SIGTERM))
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            signal_group(proc, signal.SIGKILL)
            proc.wait()
        self.running.pop(proc, None)

    def stop_all(self):
        for proc in reversed(list(self.running)):
            self.stop(proc)


def signal_group(proc, signum):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def lib_sh(script, *args):
    """Runs SCRIPT in bash with scripts/lib.sh sourced (the helpers every script of the project shares),
    ARGS as $1, $2...; returns what it printed, or stops the run with it."""
    done = subprocess.run(["bash", "-c", "source scripts/lib.sh\n" + script, "lib.sh", *map(str, args)],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout, end="", file=sys.stderr)
        raise BenchError(f"scripts/lib.sh: {script.split()[0]} failed")
    return done.stdout


def free_port():
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgreSQL:
    """A private cluster with the default durability (fsync and synchronous_commit on), started and stopped
    by scripts/lib.sh; its superuser reaches it over loopback TCP without a password."""

    def __init__(self, processes, data_dir):
        self.processes = processes
        self.data_dir = data_dir
        self.bin = Path(lib_sh('ensure_postgres_installed >&2\necho "$PG_BIN"').splitlines()[-1])
        self.port = free_port()

    def start(self):
        lib_sh('start_private_postgres "$1" "$2"', self.data_dir, self.port)

    def stop(self):
        lib_sh('stop_private_postgres "$1"', self.data_dir)

    def version(self):
        return subprocess.run([self.bin / "postgres", "--version"], capture_output=True, text=True).stdout.split()[2]

    def url(self, database):
        return f"postgres://onthemap@127.0.0.1:{self.port}/{database}"

    def psql(self, database, *args):
        """psql as the superuser, stopping at the first error; returns what it printed."""
        return self.processes.output([self.bin / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                                      "-p", self.port, "-U", "onthemap", "-d", database, *args], 900)

    def value(self, database, query):
        """The single value QUERY returns, as text."""
        return self.psql(database, "-tAc", query).strip()

    def create_database(self, name):
        self.psql("postgres", "-c", f"CREATE DATABASE {name}")

    def events_in(self, database):
        return int(self.value(database, "SELECT count(*) FROM locations.events"))

    def postmaster_pid(self):
        return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])

    def pgbench_args(self, clients, seconds):
        """pgbench running bench/append.sql, one POST's transaction, on its own database."""
        return [self.bin / "pgbench", "-h", "127.0.0.1", "-p", self.port, "-U", "onthemap", "-n", "-M", "extended",
                "-c", clients, "-j", "2", "-T", seconds, "-f", "bench/append.sql", "bench_post_pgbench"]


LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy


def request(url, method="GET", headers=None, body=None):
    """(status, body) of one request; status None when nothing answered."""
    try:
        with LOOPBACK.open(urllib.request.Request(url, data=body, method=method, headers=headers or {}),
                           timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (OSError, HTTPException):
        return None, b""


def post_json(url, value, headers=None):
    return request(url, "POST", {"Content-Type": "application/json", **(headers or {})},
                   json.dumps(value, separators=(",", ":")).encode())


def actor_header(key, first, last):
    """The X-Actor value: base64url without padding of the actor's JSON."""
    actor = json.dumps({"key": str(key), "firstName": first, "lastName": last}, separators=(",", ":"))
    return base64.urlsafe_b64encode(actor.encode()).rstrip(b"=").decode()


class Server:
    """A server started for the benchmarks: its process, where it listens and where it logs."""

    def __init__(self, name, proc, port, log_path):
        self.name, self.proc, self.port, self.log_path = name, proc, port, log_path

    @property
    def pid(self):
        return self.proc.pid

    def url(self, path="/v1/StudentLocation"):
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_ready(self, tries):
        """Returns once /readyz answers 200; fails if the server ends first or TRIES polls pass."""
        for _ in range(tries):
            if request(self.url("/readyz"))[0] == 200:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        show_tail(self.log_path)
        raise BenchError(f"{self.name} did not become ready on port {self.port}")

    def expect_alive(self, during):
        """A figure measured on a server that died under load means nothing."""
        status = self.proc.poll()
        if status is None:
            return
        show_tail(self.log_path)
        ending = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        raise BenchError(f"{self.name} ended during {during} ({ending})")


# Memory and CPU are read from /proc: procps may not be installed.
def stat_fields(pid):
    """The fields of /proc/PID/stat from the third (state) on, or None once it has ended. Counted from
    there, the parent's id is 1; utime and stime are 11 and 12; cutime and cstime 13 and 14."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(") ")[2].split()
    except OSError:
        return None


def rss_kb(pid):
    """Resident memory now, in kB; None once the process has ended (a zombie has no VmRSS)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def children_of(pid):
    """The ids of PID's live child processes."""
    children = []
    for path in glob.glob("/proc/[0-9]*"):
        fields = stat_fields(Path(path).name)  # (it may have ended meanwhile)
        if fields and fields[1] == str(pid):
            children.append(int(Path(path).name))
    return children


def process_ticks(pid):
    """CPU clock ticks used so far by PID, its reaped children and its live children (the postmaster's
    children are the backends; nginx's are its workers)."""
    total = 0
    for each in [pid, *children_of(pid)]:
        fields = stat_fields(each)
        if fields:
            total += sum(int(value) for value in fields[11:15])
    return total


def machine_ticks():
    """(busy, total, interrupts, steal) clock ticks of all cores since boot. Idle and iowait count as not
    busy. Interrupt work (irq, softirq: much of loopback TCP) is busy but charged to no process; steal is
    time the hypervisor gave to other guests."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait, irq + softirq, steal


def ended_children_cpu_seconds():
    """CPU time (user + system) of the children this program has waited for: a client run to its end
    (wrk, pgbench, psql, replay) counts once it has finished."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Sampler:
    """Samples a process five times a second, on a thread of its own, until it ends or SECONDS pass: its
    highest VmRSS, and the CPU ticks it had used at the last sample."""

    def __init__(self, pid, seconds):
        self.peak_kb = 0
        self.ticks = 0
        self._thread = threading.Thread(target=self._sample, args=(pid, time.monotonic() + seconds), daemon=True)
        self._thread.start()

    def _sample(self, pid, deadline):
        while time.monotonic() < deadline:
            now, fields = rss_kb(pid), stat_fields(pid)
            if now is None or fields is None:
                break
            self.ticks = int(fields[11]) + int(fields[12])
            self.peak_kb = max(self.peak_kb, now)
            time.sleep(0.2)

    def result(self):
        self._thread.join()
        return self


def elapsed(start):
    return f"{time.monotonic() - start:.2f}"


FIRST_NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken"]  # of the bench's accounts


def in_order(round_number, runs):
    """The runs in that order in odd rounds and reversed in even ones."""
    return runs if round_number % 2 else runs[::-1]


class Benchmarks:
    """The three benchmarks of locations-service, each with the gateway in front of it where it has one,
    on one private PostgreSQL; they record what they measure into `results`."""

    def __init__(self, processes, results, postgres, scratch, build):
        self.processes = processes
        self.results = results
        self.pg = postgres
        self.scratch = scratch
        self.service_bin = build / "locations-service"
        self.gateway_bin = build / "auth-gateway"
        self.token = secrets.token_urlsafe(32)

    def record(self, key, value):
        self.results.record(key, value)

    def start_service(self, database, log_name):
        """`locations-service serve` on DATABASE, returned once it is ready."""
        port = free_port()
        log_path = RESULTS_DIR / log_name
        proc = self.processes.start([self.service_bin, "serve", "--port", port], log_path,
                                    {"DATABASE_URL": self.pg.url(database), "INTERNAL_TOKEN": self.token})
        service = Server("locations-service", proc, port, log_path)
        service.wait_ready(100)
        return service

    def start_gateway(self, database, service, log_name):
        """auth-gateway in front of SERVICE, with its accounts and sessions in DATABASE; returned once
        /readyz answers 200."""
        port = free_port()
        log_path = RESULTS_DIR / log_name
        env = {"DATABASE_URL": self.pg.url(database), "LOCATIONS_URL": f"http://127.0.0.1:{service.port}",
               "INTERNAL_TOKEN": self.token, "PORT": str(port), "LOG_LEVEL": "warning"}
        proc = self.processes.start([self.gateway_bin, "serve", "--host", "127.0.0.1", "--port", port], log_path, env)
        gateway = Server("auth-gateway", proc, port, log_path)
        gateway.wait_ready(150)
        return gateway

    def start_nginx(self, body, name):
        """nginx serving the file BODY at /v1/StudentLocation until the benchmarks end."""
        web = self.scratch / f"nginx-{name}"
        (web / "www").mkdir(parents=True)
        (web / "tmp").mkdir()
        shutil.copyfile(body, web / "www" / "latest.json")
        port = free_port()
        template = (ROOT / "bench" / "nginx.conf.template").read_text()
        (web / "nginx.conf").write_text(template.replace("@DIR@", str(web)).replace("@PORT@", str(port)))
        for folder in (self.scratch, web, web / "www"):
            folder.chmod(0o755)  # nginx workers run as nobody
        (web / "www" / "latest.json").chmod(0o644)
        proc = self.processes.start(["nginx", "-p", web, "-c", web / "nginx.conf", "-e", web / "error.log"])
        nginx = Server("nginx", proc, port, web / "error.log")
        for _ in range(50):
            status, served = request(nginx.url())
            if status == 200:
                break
            time.sleep(0.1)
        if served != body.read_bytes():
            raise BenchError(f"nginx does not serve the bytes of {body}")
        return nginx

    def gateway_session(self, gateway):
        """Signs the bench account up (or finds it there already) and logs in once; the session id. A single
        login attempt with the right password: login throttling never comes into it."""
        status, answer = post_json(gateway.url("/v1/accounts"), {
            "email": "bench@example.com", "password": "bench-password", "firstName": "Bench", "lastName": "Mark"})
        if status not in (201, 409):
            print(answer.decode(errors="replace"), file=sys.stderr)
            raise BenchError(f"sign-up answered {status}")
        status, answer = post_json(gateway.url("/v1/session"),
                                   {"udacity": {"username": "bench@example.com", "password": "bench-password"}})
        if status not in (200, 201):
            print(answer.decode(errors="replace"), file=sys.stderr)
            raise BenchError(f"login answered {status}")
        # The answer starts with Udacity's 5-byte guard, )]}' and a newline.
        if not answer.startswith(b")]}'\n"):
            raise BenchError("no session id in the login answer")
        return json.loads(answer[5:])["session"]["id"]

    @contextlib.contextmanager
    def cpu_measured(self, prefix, watched=()):
        """Who used the cores during the block. Records, in cores (1.0 = one core busy all along), how busy
        the machine was and how much of it was PostgreSQL, the clients that ended meanwhile, and each watched
        (name, pid) as PREFIX_cpu_NAME. What is left is other processes on the machine."""
        machine = machine_ticks()
        postgres = process_ticks(self.pg.postmaster_pid())
        procs = [process_ticks(pid) for _, pid in watched]
        clients = ended_children_cpu_seconds()
        yield
        client_seconds = ended_children_cpu_seconds() - clients
        busy, total, interrupts, steal = (now - then for now, then in zip(machine_ticks(), machine))
        # /proc/stat counts ticks of every core: elapsed seconds = total ticks / cores / hz.
        seconds = total / CPUS / HZ

        def cores(ticks):
            return f"{ticks / HZ / seconds:.2f}"

        self.record(f"{prefix}_cpu_machine", cores(busy))
        self.record(f"{prefix}_cpu_interrupts", cores(interrupts))
        self.record(f"{prefix}_cpu_steal", cores(steal))
        self.record(f"{prefix}_cpu_postgres", cores(process_ticks(self.pg.postmaster_pid()) - postgres))
        self.record(f"{prefix}_cpu_client", f"{client_seconds / seconds:.2f}")
        for (name, pid), before in zip(watched, procs):
            self.record(f"{prefix}_cpu_{name}", cores(process_ticks(pid) - before))

    def run_wrk(self, name, connections, seconds, url, args=()):
        """One bounded wrk run; output in bench/results/NAME.txt."""
        output = RESULTS_DIR / f"{name}.txt"
        # The URL before the other arguments: whatever follows `--` is for the Lua script.
        self.processes.run_or_fail(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", url, *args], seconds + 30,
                                   output, f"wrk run {name} failed", show=None)

    def record_wrk(self, name, prefix):
        """Copies the figures of bench/summary.lua's line into the results as PREFIX_*."""
        lines = (RESULTS_DIR / f"{name}.txt").read_text().splitlines()
        summary = next((line for line in lines if line.startswith("wrk-summary ")), None)
        if summary is None:
            raise BenchError(f"no summary in {name}.txt")
        for field in summary.split()[1:]:
            key, _, value = field.partition("=")
            self.record(f"{prefix}_{key}", value)

    def measure_wrk(self, name, prefix, connections, url, args, watched):
        """One measured wrk run of LOAD_SECONDS, recorded as PREFIX_*: wrk's figures, the CPU of each watched
        (name, pid) and the peak VmRSS of the first of them."""
        sampler = Sampler(watched[0][1], LOAD_SECONDS + 1)
        with self.cpu_measured(prefix, watched):
            self.run_wrk(name, connections, LOAD_SECONDS, url, ["--latency", *args])
        self.record(f"{prefix}_rss_peak_kb", sampler.result().peak_kb)
        self.record_wrk(name, prefix)

    def run_pgbench(self, name, clients, seconds):
        """bench/append.sql on the pgbench database; output in bench/results/NAME.txt."""
        self.processes.run_or_fail(self.pg.pgbench_args(clients, seconds), seconds + 60, RESULTS_DIR / f"{name}.txt",
                                   f"pgbench {name} failed", show=None)

    def measure_pgbench(self, name, prefix, clients):
        """One measured pgbench run of LOAD_SECONDS: its throughput, mean latency, failures and CPU."""
        with self.cpu_measured(prefix):
            self.run_pgbench(name, clients, LOAD_SECONDS)
        out = (RESULTS_DIR / f"{name}.txt").read_text()

        def figure(pattern):
            found = re.search(pattern, out, re.MULTILINE)
            return found.group(1) if found else ""

        self.record(f"{prefix}_tps", figure(r"^tps = ([0-9.]*) "))
        self.record(f"{prefix}_latency_ms", figure(r"^latency average = ([0-9.]*) ms"))
        self.record(f"{prefix}_failed", figure(r"^number of failed transactions: ([0-9]*)"))

    # Each throughput (and replay) is measured in every one of ROUNDS rounds, right next to the limit it is held
    # to, and the order inside a round flips from one round to the next, so a drift of the machine's speed (other
    # guests, CPU frequency, a growing table) falls on both sides alike. The report sets each round's figure
    # against its own round's limit and reports the median of those ratios.
    def alternate(self, what, runs):
        """RUNS (name: a function of the round's number) ROUNDS times, in the order `in_order` gives."""
        for round_number in range(1, ROUNDS + 1):
            for name in in_order(round_number, list(runs)):
                runs[name](round_number)
            log(f"{what}: round {round_number} of {ROUNDS} done")

    def seed_read_pins(self, service):
        """Pins as the gateway posts them: different accounts, realistic place names and links (~320 bytes each)."""
        places = ["Mountain View, California, United States", "Berlin, Brandenburg, Germany",
                  "Lagos, Lagos State, Nigeria", "Kyoto, Kyoto Prefecture, Japan", "Sao Paulo, Sao Paulo, Brazil"]
        lasts = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth"]
        for i in range(1, READ_PINS + 1):
            actor = actor_header(3903878700 + i, FIRST_NAMES[i % 8], lasts[i % 6])
            # Written out rather than by json.dumps: the coordinates' digits are part of the bytes served.
            body = (f'{{"mapString":"{places[i % 5]}","mediaURL":"https://www.udacity.com/course/'
                    f'ios-developer-nanodegree--nd003?student={i}","latitude":{i % 80}.{100000 + i * 7919 % 900000},'
                    f'"longitude":-{i % 170}.{100000 + i * 104729 % 900000}}}')
            status, _ = request(service.url(), "POST", {"Authorization": f"Bearer {self.token}", "X-Actor": actor,
                                                        "Content-Type": "application/json"}, body.encode())
            if status is None or status >= 400:
                raise BenchError(f"seeding pin {i} was refused")

    def fetch_body(self, url, headers, target, failure):
        """The body of a successful GET of URL, also written to TARGET."""
        status, body = request(url, headers=headers)
        if status != 200:
            raise BenchError(f"{failure} (status {status})")
        target.write_bytes(body)
        return body

    def hot_read(self):
        """1. The hot read against nginx, 5. the same through the gateway, and the memory of both (4, 7)."""
        log(f"hot read: seeding {READ_PINS} pins")
        self.pg.create_database("bench_read")
        service = self.start_service("bench_read", "service-read.log")
        time.sleep(2)
        self.record("rss_idle_kb", rss_kb(service.pid))
        self.seed_read_pins(service)
        auth = {"Authorization": f"Bearer {self.token}"}
        wrk_auth = ["-H", f"Authorization: Bearer {self.token}"]

        # nginx serves the very bytes the service answers with.
        bodies = self.scratch / "bodies"
        bodies.mkdir()
        service_body = self.fetch_body(service.url(), auth, bodies / "service.json", "the service's read failed")
        if len(json.loads(service_body)["results"]) != READ_PINS:
            raise BenchError(f"the hot read did not return {READ_PINS} pins")
        self.record("read_body_bytes", len(service_body))
        nginx = self.start_nginx(bodies / "service.json", "service")

        # The gateway in front of the same service. It keeps the default list once fetched (and drops it when
        # its live feed sees the log move): a few requests fill it before anything is measured.
        self.pg.create_database("bench_gateway_read")
        gateway = self.start_gateway("bench_gateway_read", service, "gateway-read.log")
        time.sleep(2)
        self.record("rss_gw_idle_kb", rss_kb(gateway.pid))
        for _ in range(5):
            gateway_body = self.fetch_body(gateway.url(), {}, bodies / "gateway.json", "the gateway's read failed")
        self.record("gw_read_body_bytes", len(gateway_body))
        # The gateway's limit is nginx serving the gateway's bytes: the same nginx when they are the same.
        same_bytes = gateway_body == service_body
        self.record("gw_read_same_bytes", "yes" if same_bytes else "no")
        gateway_nginx = nginx if same_bytes else self.start_nginx(bodies / "gateway.json", "gateway")

        log(f"hot read: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: nginx, service, gateway")
        self.run_wrk("read-nginx-warmup", 64, WARMUP_SECONDS, nginx.url(), wrk_auth)
        self.run_wrk("read-service-warmup", 64, WARMUP_SECONDS, service.url(), wrk_auth)
        self.run_wrk("gateway-read-warmup", 64, WARMUP_SECONDS, gateway.url())

        def nginx_round(k):
            self.measure_wrk(f"read-nginx-{k}", f"read_nginx_{k}", 64, nginx.url(), [*wrk_auth, "-s", SUMMARY_LUA],
                             [("nginx", nginx.pid)])
            if gateway_nginx is not nginx:
                self.measure_wrk(f"gateway-read-nginx-{k}", f"gw_read_nginx_{k}", 64, gateway_nginx.url(),
                                 ["-s", SUMMARY_LUA], [("nginx", gateway_nginx.pid)])

        def service_round(k):
            self.measure_wrk(f"read-service-{k}", f"read_service_{k}", 64, service.url(),
                             [*wrk_auth, "-s", SUMMARY_LUA], [("service", service.pid)])
            service.expect_alive("the hot read")

        def gateway_round(k):
            self.measure_wrk(f"gateway-read-{k}", f"gw_read_{k}", 64, gateway.url(), ["-s", SUMMARY_LUA],
                             [("gateway", gateway.pid), ("service", service.pid)])
            gateway.expect_alive("the hot read")
            service.expect_alive("the hot read through the gateway")

        self.alternate("hot read", {"nginx": nginx_round, "service": service_round, "gateway": gateway_round})
        self.results.record_max("rss_read_peak_kb", r"read_service_[0-9]*_rss_peak_kb")
        self.record("rss_read_end_kb", rss_kb(service.pid))
        self.results.record_max("rss_gw_read_peak_kb", r"gw_read_[0-9]*_rss_peak_kb")
        self.record("rss_gw_read_end_kb", rss_kb(gateway.pid))
        # The cached list is trusted only while the live feed follows the log: each loss forwards reads again.
        feed_lost = sum("live feed lost" in line for line in gateway.log_path.read_text(errors="replace").splitlines())
        self.record("gw_read_feed_lost", feed_lost)
        self.processes.stop(gateway.proc)

        # For information: the service's smallest route, /healthz (a constant 15-byte body, no token check),
        # is what this HTTP stack costs per request before any work of the service's own.
        log(f"hot read: locations-service /healthz (for information, {LOAD_SECONDS}s)")
        self.measure_wrk("read-health", "read_health", 64, service.url("/healthz"), ["-s", SUMMARY_LUA],
                         [("service", service.pid)])
        service.expect_alive("the /healthz load")
        self.processes.stop(service.proc)

    def durable_post(self):
        """3. The durable POST against pgbench, 6. the same through the gateway with a session, and the
        memory of both (4, 7)."""
        self.pg.create_database("bench_post_service")
        service = self.start_service("bench_post_service", "service-post.log")
        time.sleep(2)
        self.record("rss_post_idle_kb", rss_kb(service.pid))
        actors = [actor_header(5550001000 + i, first, "Student") for i, first in enumerate(FIRST_NAMES)]
        post_args = ["-s", "bench/post.lua", "--", self.token, *actors]

        # The gateway in front of the same service, with one session.
        self.pg.create_database("bench_gateway_post")
        gateway = self.start_gateway("bench_gateway_post", service, "gateway-post.log")
        time.sleep(2)
        self.record("rss_gw_post_idle_kb", rss_kb(gateway.pid))
        gateway_args = ["-s", "bench/gateway-post.lua", "--", self.gateway_session(gateway)]

        # pgbench runs one POST's transaction (bench/append.sql) in a database of its own.
        self.pg.create_database("bench_post_pgbench")
        self.processes.run_or_fail([self.service_bin, "migrate"], 120, RESULTS_DIR / "pgbench-migrate.log",
                                   "migrating the pgbench database failed", {"DATABASE_URL": self.pg.url("bench_post_pgbench")})

        log(f"durable POST: {WARMUP_SECONDS}s warm-up each, then {ROUNDS} rounds of {LOAD_SECONDS}s: pgbench, service, gateway")
        self.run_wrk("post-service-warmup", 32, WARMUP_SECONDS, service.url(), post_args)
        self.run_wrk("gateway-post-warmup", 32, WARMUP_SECONDS, gateway.url(), gateway_args)
        self.run_pgbench("post-pgbench-warmup", 32, WARMUP_SECONDS)

        # Every answered POST must be a committed event: the events each load appended are counted.
        def pgbench_round(k):
            self.measure_pgbench(f"post-pgbench-{k}", f"post_pgbench_{k}", 32)

        def service_round(k):
            before = self.pg.events_in("bench_post_service")
            self.measure_wrk(f"post-service-{k}", f"post_service_{k}", 32, service.url(), post_args,
                             [("service", service.pid)])
            service.expect_alive("the POST load")
            self.record(f"post_service_{k}_events", self.pg.events_in("bench_post_service") - before)

        def gateway_round(k):
            before = self.pg.events_in("bench_post_service")
            self.measure_wrk(f"gateway-post-{k}", f"gw_post_{k}", 32, gateway.url(), gateway_args,
                             [("gateway", gateway.pid), ("service", service.pid)])
            gateway.expect_alive("the POST load")
            service.expect_alive("the POST load through the gateway")
            self.record(f"gw_post_{k}_events", self.pg.events_in("bench_post_service") - before)

        self.alternate("durable POST", {"pgbench": pgbench_round, "service": service_round, "gateway": gateway_round})
        self.results.record_max("rss_post_peak_kb", r"post_service_[0-9]*_rss_peak_kb")
        self.record("rss_post_end_kb", rss_kb(service.pid))
        self.results.record_max("rss_gw_post_peak_kb", r"gw_post_[0-9]*_rss_peak_kb")
        self.record("rss_gw_post_end_kb", rss_kb(gateway.pid))
        # The pool keeps what it opened for a while: this is how many connections the loads made it use.
        connections = int(self.pg.value("bench_post_service", "SELECT count(*) FROM pg_stat_activity WHERE "
                                        "datname = current_database() AND backend_type = 'client backend' "
                                        "AND pid <> pg_backend_pid()"))
        self.record("post_service_db_connections", connections)
        self.processes.stop(gateway.proc)
        self.processes.stop(service.proc)
        # Transactions committed in that database over the service's whole life (its connections have ended,
        # so their statistics are in), against the events it appended: what each POST costs PostgreSQL in commits.
        time.sleep(0.5)
        self.record("post_service_all_commits", self.pg.value(
            "bench_post_service", "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))
        self.record("post_service_all_events", self.pg.events_in("bench_post_service"))

        # For information: pgbench with only as many connections as the service could append on (all it
        # opened but the one held for LISTEN). With synchronous commits, throughput follows the number of
        # transactions that can wait for the same WAL flush, so this separates the pool's size from the rest.
        appenders = max(connections - 1, 1)
        log(f"durable POST: pgbench with {appenders} connections (for information)")
        self.run_pgbench("post-pgbench-pool-warmup", appenders, WARMUP_SECONDS)
        self.measure_pgbench("post-pgbench-pool", "post_pgbench_pool", appenders)
        self.record("post_pgbench_pool_clients", appenders)

    def write_replay_log(self):
        """The events to replay, written by bench/generate-events.sql, then settled (hint bits, visibility
        map, statistics) so that neither contender pays for that."""
        log(f"replay: writing {REPLAY_PINS * 4} events over {REPLAY_PINS} pins")
        start = time.monotonic()
        self.pg.psql("bench_replay", "-v", f"pins={REPLAY_PINS}", "-v", "blocks=10", "-f", "bench/generate-events.sql")
        self.record("replay_generate_seconds", elapsed(start))
        self.pg.psql("bench_replay", "-c", "VACUUM (ANALYZE) locations.events", "-c", "CHECKPOINT")
        for key, query in [
            ("replay_events", "SELECT count(*) FROM locations.events"),
            ("replay_deleted_streams", "SELECT count(*) FROM locations.events WHERE event_type = 'LocationDeleted'"),
            ("replay_transactions", "SELECT count(DISTINCT transaction_id) FROM locations.events"),
            ("replay_events_mb", "SELECT pg_total_relation_size('locations.events') / 1048576"),
        ]:
            self.record(key, self.pg.value("bench_replay", query))

    def replay_by_service(self, env, k):
        """Wall clock of the whole command (start-up and connecting included); its memory and CPU time are
        sampled while it runs."""
        prefix = f"replay_service_{k}"
        with self.cpu_measured(prefix):
            start = time.monotonic()
            replay = self.processes.start([self.service_bin, "replay"], RESULTS_DIR / "replay.log", env)
            sampler = Sampler(replay.pid, 900)
            if not self.processes.finish(replay, 900):
                show_tail(RESULTS_DIR / "replay.log")
                raise BenchError("replay failed")
            seconds = elapsed(start)
        sampler.result()
        self.record(f"{prefix}_seconds", seconds)
        self.record(f"{prefix}_cpu_seconds", f"{sampler.ticks / HZ:.2f}")
        self.record(f"{prefix}_rss_peak_kb", sampler.peak_kb)
        self.pg.psql("bench_replay", "-c", "CHECKPOINT")

    def replay_by_sql(self, k):
        prefix = f"replay_sql_{k}"
        self.pg.psql("bench_replay", "-c", "DROP TABLE IF EXISTS bench.sql_pins", "-c", "CHECKPOINT")
        with self.cpu_measured(prefix):
            start = time.monotonic()
            self.pg.psql("bench_replay", "-f", "bench/rebuild.sql")
            without_indexes = elapsed(start)
            self.pg.psql("bench_replay", "-f", "bench/rebuild-indexes.sql")
            with_indexes = elapsed(start)
        self.record(f"{prefix}_noindex_seconds", without_indexes)
        self.record(f"{prefix}_seconds", with_indexes)
        self.pg.psql("bench_replay", "-c", "CHECKPOINT")

    def verify_replay(self, env):
        """`replay --verify` must find no difference, and the swapped-in read model must equal the SQL
        rebuild row for row."""
        log("replay: verify")
        start = time.monotonic()
        verify_log = RESULTS_DIR / "replay-verify.log"
        self.processes.run_or_fail([self.service_bin, "replay", "--verify"], 900, verify_log,
                                   "replay --verify found differences", env)
        self.record("replay_verify_seconds", elapsed(start))
        if "matches the live one" not in verify_log.read_text(errors="replace"):
            raise BenchError("replay --verify did not confirm a match")
        self.record("replay_verify", "match")
        live, sql, differing = self.pg.psql("bench_replay", "-tA", "-f", "bench/compare.sql").strip().split("|")
        self.record("replay_live_pins", live)
        self.record("replay_sql_pins", sql)
        self.record("replay_differing_rows", differing)
        if differing != "0" or live != sql:
            raise BenchError(f"replay and the SQL rebuild disagree ({live} vs {sql} rows, {differing} differ)")

    def replay(self):
        """2. Replay against the same rebuild in SQL."""
        self.pg.create_database("bench_replay")
        env = {"DATABASE_URL": self.pg.url("bench_replay")}
        self.processes.run_or_fail([self.service_bin, "migrate"], 120, RESULTS_DIR / "replay-migrate.log",
                                   "migrating the replay database failed", env)
        self.write_replay_log()
        # In rounds, as the throughputs: one run of each on this machine's shared cores moved the ratio
        # from 1.19x to 1.51x between two runs of the same code.
        log(f"replay: {ROUNDS} rounds of locations-service replay and the same rebuild in SQL")
        self.alternate("replay", {"service": lambda k: self.replay_by_service(env, k),
                                  "sql": lambda k: self.replay_by_sql(k)})
        self.results.record_max("rss_replay_peak_kb", r"replay_service_[0-9]*_rss_peak_kb")
        self.verify_replay(env)


@contextlib.contextmanager
def no_service_starts():
    """The packages would start system services of their own (nginx on :80, a cluster on :5432). A
    policy-rc.d that refuses is Debian's way to prevent that; ours is removed again afterwards."""
    policy = Path("/usr/sbin/policy-rc.d")
    made = not policy.exists()
    if made:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        yield
    finally:
        if made:
            policy.unlink(missing_ok=True)


def install_missing():
    missing = [package for package, present in [
        ("wrk", shutil.which("wrk")),
        ("nginx", shutil.which("nginx")),
        ("postgresql", glob.glob("/usr/lib/postgresql/*/bin/pgbench")),
    ] if not present]
    if not missing:
        return
    log(f"installing {' '.join(missing)}")
    apt_log = RESULTS_DIR / "apt.log"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}

    def apt_get(*args):
        with open(apt_log, "a") as out:
            return subprocess.run(["apt-get", *args], stdout=out, stderr=subprocess.STDOUT, env=env).returncode == 0

    with no_service_starts():
        # Package lists are refreshed only when the install cannot go ahead without them.
        installed = apt_get("install", "-y", "-qq", *missing) or (
            apt_get("update", "-qq") and apt_get("install", "-y", "-qq", *missing))
    if not installed:
        show_tail(apt_log)
        raise BenchError(f"could not install {' '.join(missing)}")


def build_release(processes):
    """locations-service and auth-gateway as release binaries; the folder they are in."""
    log("building locations-service and auth-gateway (release)")
    release_build = lib_sh('echo "${RELEASE_BUILD[@]}"').split()
    build_log = RESULTS_DIR / "build.log"
    # A scratch folder of its own, so a benchmark build never waits on (or disturbs) a development build.
    for product in ["locations-service", "auth-gateway"]:
        # SIGINT, not SIGTERM, to stop it: SwiftPM runs each compiler job in a process group of its own and
        # cancels them on SIGINT, while on SIGTERM it ends alone and leaves them compiling.
        processes.run_or_fail(["swift", "build", *release_build, "--scratch-path", ".build-bench", "--product", product],
                              1800, build_log, f"build of {product} failed", append=True, show=30,
                              stop_signal=signal.SIGINT)
    return ROOT / ".build-bench" / "release"


def output_of(*args):
    """What a quick command printed, stdout and stderr together; empty if it could not run."""
    try:
        return subprocess.run(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return ""


def commit():
    """The commit measured, and whether the services' sources differ from it."""
    if not shutil.which("git") or subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode:
        return "unknown"
    changed = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "Services", "Shared", "Package.swift"], cwd=ROOT).returncode
    return output_of("git", "rev-parse", "--short", "HEAD").strip() + (" with local changes" if changed else "")


def record_machine(results, postgres):
    cpu_model = re.search(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    memory_kb = re.search(r"^MemTotal: *([0-9]+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    swift = re.search(r"Swift version (\S+)", output_of("swift", "--version"))
    results.record("date", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    results.record("cpus", CPUS)
    results.record("cpu_model", cpu_model.group(1) if cpu_model else "")
    results.record("memory_mb", int(memory_kb.group(1)) // 1024)
    results.record("os", platform.freedesktop_os_release().get("PRETTY_NAME", ""))
    results.record("load_before", load_average())
    results.record("postgres_version", postgres.version())
    results.record("nginx_version", output_of("nginx", "-v").strip().rpartition("/")[2])
    results.record("wrk_version", (output_of("wrk", "-v").split("\n", 1)[0].split() + ["", ""])[1])
    results.record("swift_version", swift.group(1) if swift else "")
    results.record("commit", commit())
    results.record("load_seconds", LOAD_SECONDS)
    results.record("warmup_seconds", WARMUP_SECONDS)
    results.record("rounds", ROUNDS)


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def micro_measurements(processes):
    """bench/micro: the code behind claims in comments against the simpler code it replaced; it prints its
    own section of BENCHMARKS.md."""
    log("micro-measurements against the simpler code (their own section of BENCHMARKS.md)")
    release_build = lib_sh('echo "${RELEASE_BUILD[@]}"').split()
    processes.run_or_fail(["swift", "build", *release_build, "--scratch-path", ".build-bench", "--product", "MicroBenchmarks"],
                          1800, RESULTS_DIR / "micro-build.log", "build of MicroBenchmarks failed", show=30,
                          stop_signal=signal.SIGINT)
    section = processes.output([str(ROOT / ".build-bench" / "release" / "MicroBenchmarks"),
                                str(ROOT / "Services" / "Geocoding" / "Resources" / "gazetteer.tsv")], 600)
    (RESULTS_DIR / "micro.md").write_text(section)
    write_sections(ROOT / "BENCHMARKS.md", section.split("\n"))


def run_extras(processes):
    """The passes that write their own sections of BENCHMARKS.md after the main report. Stopped, if need be,
    as a Ctrl-C on the terminal would stop them: they build, and clean up after themselves on SIGINT."""
    micro_measurements(processes)
    log("fuzzing the parsers of client input, a million runs each")
    processes.run_or_fail(["bench/fuzz.sh"], None, RESULTS_DIR / "fuzz.log", "fuzzing failed",
                          stop_signal=signal.SIGINT)
    log("the command-line client against curl (its own section of BENCHMARKS.md)")
    processes.run_or_fail(["bench/cli.sh"], None, RESULTS_DIR / "cli.log", "the command-line benchmark failed",
                          stop_signal=signal.SIGINT)


def run(cleanup):
    """Everything, in order; whatever it starts is handed to CLEANUP to be undone, last first."""
    os.environ["PATH"] += ":/usr/sbin:/sbin"  # nginx lives in /usr/sbin
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for old in [*RESULTS_DIR.glob("*.log"), *RESULTS_DIR.glob("*.txt")]:
        old.unlink()
    results = Results(RESULTS_FILE)
    scratch = Path(tempfile.mkdtemp(prefix="onthemap-bench."))
    cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
    # In /tmp whatever TMPDIR says: the cluster belongs to the postgres system user, which must reach it.
    pg_dir = Path(tempfile.mkdtemp(prefix="onthemap-bench-pg.", dir="/tmp"))
    cleanup.callback(shutil.rmtree, pg_dir, ignore_errors=True)
    cleanup.callback(Path(f"{pg_dir}.initdb.log").unlink, missing_ok=True)

    install_missing()
    os.environ["PATH"] = lib_sh('ensure_toolchain >&2\necho "$PATH"').splitlines()[-1]
    processes = Processes()
    postgres = PostgreSQL(processes, pg_dir)
    cleanup.callback(postgres.stop)
    cleanup.callback(processes.stop_all)  # before PostgreSQL stops: the services first
    build = build_release(processes)
    postgres.start()
    log(f"PostgreSQL {postgres.version()} on 127.0.0.1:{postgres.port}")

    record_machine(results, postgres)
    started = time.monotonic()
    benchmarks = Benchmarks(processes, results, postgres, scratch, build)
    benchmarks.hot_read()
    benchmarks.durable_post()
    benchmarks.replay()
    results.record("total_seconds", int(time.monotonic() - started))
    results.record("load_after", load_average())

    write_report(results.values, ROOT / "BENCHMARKS.md")
    log("wrote BENCHMARKS.md")
    # The passes after this start what they need themselves: nginx and the cluster would only stand idle.
    processes.stop_all()
    postgres.stop()
    if not SKIP_EXTRAS:
        run_extras(processes)
    table = re.search(r"^\| Benchmark.*?\n\n", (ROOT / "BENCHMARKS.md").read_text(), re.MULTILINE | re.DOTALL)
    print(table.group(0) if table else "", end="")


# The report is written from the recorded figures alone, so that --report-only can write it again.

# The runs measured in every round, with the figure that ranks them.
MEASURED = [("read_nginx", "rps"), ("gw_read_nginx", "rps"), ("read_service", "rps"), ("gw_read", "rps"),
            ("post_service", "rps"), ("gw_post", "rps"), ("post_pgbench", "tps"), ("replay_service", "seconds"),
            ("replay_sql", "seconds")]

# The runs whose CPU the Details table shows: prefix, and the servers under test in it (a server in
# front of another, the gateway before the service, shows both).
CPU_RUNS = [("read_nginx", ["nginx"]), ("read_service", ["service"]), ("read_health", ["service"]),
            ("gw_read_nginx", ["nginx"]), ("gw_read", ["gateway", "service"]), ("post_service", ["service"]),
            ("gw_post", ["gateway", "service"]), ("post_pgbench", []), ("post_pgbench_pool", []),
            ("replay_service", []), ("replay_sql", [])]


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def settle_rounds(r):
    """Lets PREFIX_* name the median round of each run measured in rounds (PREFIX_<round>_*): the round
    whose figure (throughput or time) is the median (the lower of the two middle ones when the count is even)."""
    rounds = int(r["rounds"])
    for prefix, figure in MEASURED:
        if f"{prefix}_1_{figure}" not in r:
            continue
        ranked = sorted(range(1, rounds + 1), key=lambda k: float(r[f"{prefix}_{k}_{figure}"]))
        chosen = f"{prefix}_{ranked[(rounds - 1) // 2]}_"
        for key in [key for key in r if key.startswith(chosen)]:
            r[prefix + "_" + key[len(chosen):]] = r[key]


def count(value):
    return f"{value:,.0f}"


def us(cores, rate):
    """CPU per request: cores busy over requests per second, in microseconds."""
    return f"{cores / rate * 1e6:,.0f} µs"


def verdict(ok):
    return "PASS" if ok else "MISS"


def fmt_ratio(value, goal):
    """Two decimals, or three where two would hide which side of the goal the ratio is on."""
    text = f"{value:.2f}"
    return f"{value:.3f}" if goal is not None and float(text) == goal else text


class Figures:
    """The recorded figures (median rounds settled), as the report reads them: `f[key]` as recorded,
    `f.num(key)` as a number."""

    def __init__(self, r):
        settle_rounds(r)
        self.r = r
        self.rounds = int(r["rounds"])
        self.load_seconds = r["load_seconds"]
        self.events = self.num("replay_events")
        self.live_pins = self.num("replay_live_pins")
        self.same_bytes = r["gw_read_same_bytes"] == "yes"
        # The gateway's hot read is held to nginx serving the gateway's bytes.
        self.gw_limit = "read_nginx" if self.same_bytes else "gw_read_nginx"
        self.ratios = {
            "read": self.per_round("read_service", "read_nginx"),
            "post": self.per_round("post_service", "post_pgbench", "tps"),
            "gw_read": self.per_round("gw_read", self.gw_limit),
            "gw_post": self.per_round("gw_post", "post_service"),
            "replay": self.per_round("replay_service", "replay_sql", "seconds", "seconds"),
        }
        self.medians = {name: median(ratios) for name, ratios in self.ratios.items()}

    def __getitem__(self, key):
        return self.r[key]

    def num(self, key):
        return float(self.r[key])

    def mb(self, key):
        return f"{self.num(key) / 1024:.1f} MB"

    def ms(self, key):
        return f"{self.num(key) / 1000:.2f} ms"

    def per_event(self, cpu_seconds):
        return f"{cpu_seconds / self.events * 1e6:.1f} µs"

    def per_request(self, prefix, process, rate_figure="rps"):
        """CPU per request of PROCESS in run PREFIX."""
        return us(self.num(f"{prefix}_cpu_{process}"), self.num(f"{prefix}_{rate_figure}"))

    def per_round(self, subject, limit, limit_figure="rps", figure="rps"):
        """The subject's figure (a throughput, or replay's time) over its limit's, round by round."""
        return [self.num(f"{subject}_{k}_{figure}") / self.num(f"{limit}_{k}_{limit_figure}")
                for k in range(1, self.rounds + 1)]

    def other_cores(self, prefix, servers):
        """Cores busy during run PREFIX that neither its servers, PostgreSQL, the client nor interrupts used."""
        used = sum(self.num(f"{prefix}_cpu_{part}") for part in ["postgres", "client", "interrupts", *servers])
        return max(0.0, self.num(prefix + "_cpu_machine") - used)


def machine_section(f):
    rounds, cpus = f.rounds, f["cpus"]
    return [
        "# Benchmarks",
        "",
        "Figures for `locations-service`, and for `auth-gateway` in front of it, each set against a limit measured",
        "in the same run on the same machine, so the ratio says how close the service comes to what the machine",
        "can do. Produced by `bench/run.py` (one command: installs what is missing, starts a private PostgreSQL",
        "with default durability, builds the release binaries, runs everything, stops what it started, rewrites",
        "this file). Raw outputs of the last run are in `bench/results/` (not versioned).",
        "",
        "## Machine",
        "",
        f"- {f['cpu_model']}, {cpus} cores (`nproc`), {count(f.num('memory_mb'))} MB memory, {f['os']}",
        f"- Run on {f['date']}, commit {f['commit']}; benchmarks took {f['total_seconds']} s; load average "
        f"(1, 5, 15 min) {f['load_before']} before and {f['load_after']} after",
        f"- PostgreSQL {f['postgres_version']} (private cluster, default settings: fsync on, synchronous_commit on, "
        f"shared_buffers 128 MB), nginx {f['nginx_version']}, wrk {f['wrk_version']}, Swift {f['swift_version']}",
        f"- Each server and pgbench first got {f['warmup_seconds']} s of unmeasured load; every measured load lasted "
        f"{f.load_seconds} s.",
        "  Load generator, server and PostgreSQL all share the same cores, as they do in every row.",
        "- The four throughputs held to a limit (hot read, durable POST, and both through the gateway) and replay were",
        f"  measured in {rounds} rounds, each next to its limit, in an order that flips from one round to the next. A ratio",
        f"  below is the median of its {rounds} rounds' ratios (each round's figure over the same round's limit); a",
        "  throughput or a time is the median of its rounds, and its row in Details is that round. Every round is listed",
        "  under Rounds.",
        "",
    ]


def throughput_rows(f):
    """The Results rows of the four throughputs and the two replay rows, each against its limit."""
    rounds, load_s, num = f.rounds, f.load_seconds, f.num
    read_ratio, post_ratio = f.medians["read"], f.medians["post"]
    gw_read_ratio, gw_post_ratio = f.medians["gw_read"], f.medians["gw_post"]
    replay_ratio = f.medians["replay"]
    gw_source = ("forwarded to the service: the live feed was not following"
                 if int(f.r.get("gw_read_feed_lost", "0")) > 0 else "from the gateway's cache")
    if f.same_bytes:
        gw_limit_text = f"nginx, same bytes (the hot read's nginx above): {count(num('read_nginx_rps'))} req/s"
    else:
        gw_limit_text = f"nginx, the gateway's bytes as a static file: {count(num('gw_read_nginx_rps'))} req/s"
    return [
        ("Hot read: `GET /v1/StudentLocation` (latest 100, "
         f"{num('read_body_bytes') / 1024:.1f} KB), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('read_service_rps'))} req/s",
         f"nginx, same bytes as a static file: {count(num('read_nginx_rps'))} req/s",
         f"{fmt_ratio(read_ratio, READ_GOAL)}×", f"≥ {READ_GOAL}×", verdict(read_ratio >= READ_GOAL)),
        ("Hot read, against the service's own `/healthz` (smallest route of the same HTTP stack; for information)",
         f"{count(num('read_service_rps'))} req/s",
         f"`GET /healthz`: {count(num('read_health_rps'))} req/s",
         f"{num('read_service_rps') / num('read_health_rps'):.2f}×", "—", "—"),
        (f"Replay: `locations-service replay`, {count(f.events)} events → {count(f.live_pins)} pins (wall clock), "
         f"{rounds} rounds",
         f"{num('replay_service_seconds'):.2f} s",
         f"one SQL `INSERT … SELECT DISTINCT ON` + the same 3 indexes: {num('replay_sql_seconds'):.2f} s",
         f"{fmt_ratio(replay_ratio, REPLAY_GOAL)}×", f"≤ {REPLAY_GOAL}×", verdict(replay_ratio <= REPLAY_GOAL)),
        ("Replay, against the SQL rebuild without indexes (for information)",
         f"{num('replay_service_seconds'):.2f} s",
         f"SQL rebuild, no indexes: {num('replay_sql_noindex_seconds'):.2f} s",
         f"{num('replay_service_seconds') / num('replay_sql_noindex_seconds'):.2f}×", "—", "—"),
        (f"Durable POST: `POST /v1/StudentLocation` (one event + one pin, fsync on), wrk -c32, {rounds} × {load_s} s",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c32 -j2, one POST's transaction each (bench/append.sql): {count(num('post_pgbench_tps'))} tps",
         f"{fmt_ratio(post_ratio, POST_GOAL)}×", f"≥ {POST_GOAL}×", verdict(post_ratio >= POST_GOAL)),
        (f"Durable POST, against pgbench with the service's {f['post_pgbench_pool_clients']} append connections "
         "(for information)",
         f"{count(num('post_service_rps'))} req/s",
         f"pgbench -c{f['post_pgbench_pool_clients']}: {count(num('post_pgbench_pool_tps'))} tps",
         f"{num('post_service_rps') / num('post_pgbench_pool_tps'):.2f}×", "—", "—"),
        ("Through auth-gateway: hot read `GET /v1/StudentLocation` (latest 100, "
         f"{num('gw_read_body_bytes') / 1024:.1f} KB, {gw_source}), wrk -t2 -c64, {rounds} × {load_s} s",
         f"{count(num('gw_read_rps'))} req/s", gw_limit_text,
         f"{fmt_ratio(gw_read_ratio, GW_READ_GOAL)}×", f"≥ {GW_READ_GOAL}×", verdict(gw_read_ratio >= GW_READ_GOAL)),
        ("Through auth-gateway: `POST /v1/StudentLocation` with `Authorization: Bearer <session id>`, "
         f"wrk -c32, {rounds} × {load_s} s",
         f"{count(num('gw_post_rps'))} req/s",
         f"locations-service's own durable POST (above): {count(num('post_service_rps'))} req/s",
         f"{fmt_ratio(gw_post_ratio, GW_POST_GOAL)}×", f"≥ {GW_POST_GOAL}×", verdict(gw_post_ratio >= GW_POST_GOAL)),
    ]


def memory_rows(f):
    """The Results rows of resident memory, each load's peak against the same server idle."""
    num, mb = f.num, f.mb

    def during(what, peak, end, idle):
        return (f"{what}: peak / at end", f"{mb(peak)} / {mb(end)}", f"idle: {mb(idle)}",
                f"{num(peak) / num(idle):.2f}× (peak)", "—", "reported")

    return [
        ("Memory (VmRSS) idle, after start", mb("rss_idle_kb"), "—", "—", "—", "reported"),
        during("Memory during the hot read", "rss_read_peak_kb", "rss_read_end_kb", "rss_idle_kb"),
        during("Memory during the durable POST", "rss_post_peak_kb", "rss_post_end_kb", "rss_post_idle_kb"),
        (f"Memory of `replay` over {count(f.events)} events: peak", mb("rss_replay_peak_kb"), "—", "—", "—", "reported"),
        ("Memory of auth-gateway (VmRSS) idle, after start", mb("rss_gw_idle_kb"), "—", "—", "—", "reported"),
        during("Memory of auth-gateway during its hot read", "rss_gw_read_peak_kb", "rss_gw_read_end_kb", "rss_gw_idle_kb"),
        during("Memory of auth-gateway during its POST", "rss_gw_post_peak_kb", "rss_gw_post_end_kb",
               "rss_gw_post_idle_kb"),
    ]


def results_section(f):
    return [
        "## Results",
        "",
        "| Benchmark | Service | Limit (same run) | Ratio | Goal | Result |",
        "| --- | --- | --- | --- | --- | --- |",
    ] + ["| " + " | ".join(row) + " |" for row in throughput_rows(f) + memory_rows(f)] + [""]


def rounds_section(f):
    rounds, ratios, medians = f.rounds, f.ratios, f.medians

    def cell(name, subject, limit, k, limit_figure="rps"):
        return (f"{count(f.num(f'{subject}_{k}_rps'))} / {count(f.num(f'{limit}_{k}_{limit_figure}'))} = "
                f"{ratios[name][k - 1]:.2f}×")

    def at_goal(name, goal, at_most=False):
        return f"{sum((x <= goal) if at_most else (x >= goal) for x in ratios[name])} of {rounds}"

    def replay_cell(k):
        return (f"{f.num(f'replay_service_{k}_seconds'):.2f} s / {f.num(f'replay_sql_{k}_seconds'):.2f} s = "
                f"{ratios['replay'][k - 1]:.2f}×")

    return [
        "## Rounds",
        "",
        "Each cell: the figure / its limit = the ratio, all from the same round (req/s; pgbench in tps; replay "
        "in seconds, so lower is better).",
        "",
        "| Round | Hot read / nginx | Durable POST / pgbench -c32 | Gateway hot read / nginx | Gateway POST / service POST "
        "| Replay / SQL |",
        "| --- | --- | --- | --- | --- | --- |",
    ] + [
        f"| {k} | {cell('read', 'read_service', 'read_nginx', k)} | "
        f"{cell('post', 'post_service', 'post_pgbench', k, 'tps')} | "
        f"{cell('gw_read', 'gw_read', f.gw_limit, k)} | "
        f"{cell('gw_post', 'gw_post', 'post_service', k)} | {replay_cell(k)} |"
        for k in range(1, rounds + 1)
    ] + [
        f"| median | {medians['read']:.2f}× (goal ≥ {READ_GOAL}×) | {medians['post']:.2f}× (goal ≥ {POST_GOAL}×) | "
        f"{medians['gw_read']:.2f}× (goal ≥ {GW_READ_GOAL}×) | {medians['gw_post']:.2f}× (goal ≥ {GW_POST_GOAL}×) | "
        f"{medians['replay']:.2f}× (goal ≤ {REPLAY_GOAL}×) |",
        f"| rounds at or past the goal | {at_goal('read', READ_GOAL)} | {at_goal('post', POST_GOAL)} | "
        f"{at_goal('gw_read', GW_READ_GOAL)} | {at_goal('gw_post', GW_POST_GOAL)} | "
        f"{at_goal('replay', REPLAY_GOAL, at_most=True)} |",
        "",
    ]


def details_section(f):
    num, ms = f.num, f.ms
    servers = dict(CPU_RUNS)

    def cores(prefix):
        """server / PostgreSQL / client / interrupts / other, in cores; a server in front of another (the
        gateway before the service) shows both, as "front + behind"."""
        server_text = " + ".join(f[f"{prefix}_cpu_{server}"] for server in servers[prefix]) or "—"
        return (f"{server_text} / {f[prefix + '_cpu_postgres']} / {f[prefix + '_cpu_client']} / "
                f"{f[prefix + '_cpu_interrupts']} / {f.other_cores(prefix, servers[prefix]):.2f}")

    def wrk_row(name, prefix):
        server_us = " + ".join(f.per_request(prefix, server) for server in servers[prefix])
        return (f"| {name} | {count(num(prefix + '_rps'))} req/s | {ms(prefix + '_p50_us')} | {ms(prefix + '_p99_us')} | "
                f"{f[prefix + '_status_errors']} status, {f[prefix + '_socket_errors']} socket | {cores(prefix)} | "
                f"{server_us} / {f.per_request(prefix, 'postgres')} |")

    def pgbench_row(name, prefix):
        return (f"| {name} | {count(num(prefix + '_tps'))} tps | {f[prefix + '_latency_ms']} ms (mean) | — | "
                f"{f.r.get(prefix + '_failed') or '0'} failed | {cores(prefix)} | "
                f"— / {f.per_request(prefix, 'postgres', 'tps')} |")

    def replay_row(name, prefix, client_per_event):
        seconds = num(f"{prefix}_seconds")
        return (f"| {name} | {count(f.events / seconds)} events/s | — | — | — | {cores(prefix)} | "
                f"{client_per_event} / {f.per_event(num(f'{prefix}_cpu_postgres') * seconds)} per event |")

    replay_client = f.per_event(num("replay_service_cpu_client") * num("replay_service_seconds"))
    return [
        "## Details",
        "",
        "| Run | Throughput | p50 | p99 | Errors | Cores busy: server / PostgreSQL / client / interrupts / other | "
        "CPU per request: server / PostgreSQL |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        wrk_row("hot read, nginx", "read_nginx"),
        wrk_row("hot read, service", "read_service"),
        wrk_row("/healthz, service", "read_health"),
    ] + ([] if f.same_bytes else [wrk_row("hot read, nginx with the gateway's bytes", "gw_read_nginx")]) + [
        wrk_row("hot read, gateway + service", "gw_read"),
        wrk_row("POST, service", "post_service"),
        wrk_row("POST, gateway + service", "gw_post"),
        pgbench_row("POST, pgbench -c32", "post_pgbench"),
        pgbench_row(f"POST, pgbench -c{f['post_pgbench_pool_clients']}", "post_pgbench_pool"),
        replay_row("replay, service (the client is `replay`)", "replay_service", replay_client),
        replay_row("replay, SQL (the client is psql)", "replay_sql", "—"),
        "",
        "",
        "Cores are averages over each measured run, 1.0 being one core busy throughout: the server under test,",
        "PostgreSQL (all its processes), the client (wrk, pgbench, `replay` or psql), interrupt work that the",
        "kernel charges to no process (irq and softirq, which is where much of loopback TCP is done), and the",
        "rest: processes that are not part of the benchmark, and time the hypervisor kept (steal). In the",
        "gateway's rows the server is auth-gateway + locations-service behind it.",
        "",
        f"- The POST run answered {count(num('post_service_requests'))} requests and the log gained "
        f"{count(num('post_service_events'))} events (wrk does not count the up to 32 requests still in flight "
        f"when it stops); the service had {f['post_service_db_connections']} PostgreSQL connections open, one of them "
        f"held for LISTEN. Over the service's life PostgreSQL committed {count(num('post_service_all_commits'))} "
        f"transactions in its database for {count(num('post_service_all_events'))} appended events, "
        f"{num('post_service_all_commits') / num('post_service_all_events'):.2f} per event (pgbench: 1).",
        f"- The POST run through the gateway answered {count(num('gw_post_requests'))} requests with one session "
        f"(`Authorization: Bearer`) and the service's log gained {count(num('gw_post_events'))} events. The gateway's "
        f"hot read answered {count(num('gw_read_body_bytes'))} bytes per request, "
        + ("byte for byte the service's." if f.same_bytes
           else "not the service's bytes, so nginx was measured again on them."),
        f"- Replay log: {count(f.events)} events in {f['replay_transactions']} transactions over "
        f"{count(f.live_pins + num('replay_deleted_streams'))} streams ({count(num('replay_deleted_streams'))} "
        f"ending in LocationDeleted), {f['replay_events_mb']} MB with indexes, written by bench/generate-events.sql in "
        f"{num('replay_generate_seconds'):.0f} s.",
        f"- After the replay, `replay --verify` reported no difference ({num('replay_verify_seconds'):.1f} s), and the "
        f"swapped-in read model equals the SQL rebuild row for row: {count(f.live_pins)} = {count(num('replay_sql_pins'))} "
        f"rows, {f['replay_differing_rows']} differing.",
        "",
    ]


def noise_note(f):
    others = {prefix: f.other_cores(prefix, servers) for prefix, servers in CPU_RUNS
              if f"{prefix}_cpu_machine" in f.r}
    worst = max(others, key=others.get)
    if others[worst] >= 0.15:
        return (f"Other processes on the machine also took CPU during this run (up to {others[worst]:.2f} cores, "
                f"in {worst.replace('_', ' ')}): the figures of the runs they disturbed are lower than the "
                "machine can do, on whichever side they fell.")
    return "Nothing else on the machine took a noticeable share of the CPU during this run."


def nginx_note(f):
    if f.num("read_nginx_cpu_client") >= f.num("read_nginx_cpu_nginx"):
        return (f"In the nginx run wrk needed as much CPU as nginx or more ({f['read_nginx_cpu_client']} against "
                f"{f['read_nginx_cpu_nginx']} cores): on shared cores the load generator bounds that figure, so "
                "it is a floor for what nginx can serve and the ratio, if anything, flatters the service.")
    return f"In the nginx run nginx used {f['read_nginx_cpu_nginx']} cores and wrk {f['read_nginx_cpu_client']}."


def pool_note(f):
    pool_tps, full_tps = f.num("post_pgbench_pool_tps"), f.num("post_pgbench_tps")
    if pool_tps < 0.9 * full_tps:
        return (f"pgbench keeps 32 transactions in flight ({count(full_tps)} tps); held to the "
                f"{f['post_pgbench_pool_clients']} connections the service can append on (its pool opened "
                f"{f['post_service_db_connections']}, one is held for LISTEN) it does {count(pool_tps)} tps, so "
                "the pool's size accounts for part of the gap.")
    return (f"pgbench does {count(full_tps)} tps with 32 connections and {count(pool_tps)} with the "
            f"{f['post_pgbench_pool_clients']} the service can append on (its pool opened "
            f"{f['post_service_db_connections']}, one is held for LISTEN): the pool's size is not what holds "
            "the service back here.")


def gateway_read_note(f):
    gateway_us, service_us = f.per_request("gw_read", "gateway"), f.per_request("gw_read", "service")
    body_kb = f.num("gw_read_body_bytes") / 1024
    alone_us, nginx_us = f.per_request("read_service", "service"), f.per_request("read_nginx", "nginx")
    feed_lost = int(f.r.get("gw_read_feed_lost", "0"))
    if feed_lost > 0:
        return (
            f"The gateway's live feed lost locations-service {feed_lost} time{'s' if feed_lost > 1 else ''} between "
            "its start and the end of its hot read (`HTTPClientError.readTimeout`: the feed's long poll asks the service to wait up to 20 s "
            "for a change, and the gateway's HTTP client gives up reading after 10 s), and the cached list is only "
            "trusted while the feed follows the log; with no writes the feed never caught up, so every read went "
            f"on to the service: {gateway_us} of gateway CPU and {service_us} of service CPU per "
            f"{body_kb:.0f} KB response, against {alone_us} for the service answering alone and {nginx_us} for nginx. "
            "Keeping the long poll under the client's read timeout (or the timeout above the wait) would let the "
            "gateway answer from its cache.")
    return (
        "The gateway answered the default list from its own cache (its live feed drops it when the log "
        f"moves): {gateway_us} of gateway CPU per {body_kb:.0f} KB response and {service_us} in the service, "
        f"against {alone_us} for the service's own hot read and {nginx_us} for nginx: the same HTTP stack's "
        "per-request cost as the service's.")


def replay_note(f):
    replay_pg_seconds = f.num("replay_service_cpu_postgres") * f.num("replay_service_seconds")
    replay_cpu = f.num("replay_service_cpu_seconds")
    if replay_cpu > 1.3 * replay_pg_seconds:
        return ("The replay process is the busier side: it decodes every event row it reads and folds the "
                "log in memory on one task, while PostgreSQL waits for it.")
    if replay_pg_seconds > 1.3 * replay_cpu:
        return "Most of the work is PostgreSQL's: reading the log, loading and indexing the pins."
    return ("Neither side fills a core: replay works on one connection, one step at a time (read and "
            "fold the log, then load the pins, then build each index), so the two mostly take turns "
            "and their times add up rather than overlap.")


def limits_section(f):
    num, mb, cpus = f.num, f.mb, f["cpus"]
    cpu_per_post = (num("post_service_cpu_service") + num("post_service_cpu_postgres")
                    + num("post_service_cpu_client")) / num("post_service_rps")
    gw_post_cpu = (num("gw_post_cpu_gateway") + num("gw_post_cpu_service") + num("gw_post_cpu_postgres")
                   + num("gw_post_cpu_client")) / num("gw_post_rps")
    replay_pg_seconds = num("replay_service_cpu_postgres") * num("replay_service_seconds")
    bullets = [
        [f"**Shared cores.** {cpus} cores carry everything at once: the load generator (wrk or pgbench), the server",
         "under test and PostgreSQL; whatever CPU one of them uses, the others cannot.", noise_note(f)],
        [f"**Hot read.** nginx spends {f.per_request('read_nginx', 'nginx')} of CPU per",
         f"{num('read_body_bytes') / 1024:.0f} KB response, the service {f.per_request('read_service', 'service')}.",
         "The service's smallest route, `/healthz`, already costs",
         f"{f.per_request('read_health', 'service')}: most of the gap is the per-request cost of",
         "the HTTP stack (NIO event loop, then a Swift concurrency task per request, Hummingbird's router and",
         "middlewares, the hops between the two thread pools), not the cached bytes being sent.",
         nginx_note(f)],
        ["**Durable POST.** Every append waits for its WAL flush (synchronous_commit on), so throughput comes from",
         "group commit: the more transactions wait for the same flush, the more commit per flush.", pool_note(f),
         "What the service adds is CPU on the same cores:",
         f"{f.per_request('post_service', 'service')} per POST in the service and",
         f"{f.per_request('post_service', 'postgres')} in PostgreSQL",
         f"({num('post_service_all_commits') / num('post_service_all_events'):.2f} commits per event: the append, and",
         "the NOTIFY that tells other replicas the log moved), against",
         f"{f.per_request('post_pgbench', 'postgres', 'tps')} for pgbench's transaction. With {cpus}",
         f"cores for all of it, {cpu_per_post * 1e6:,.0f} µs per POST (service, PostgreSQL and wrk together) allows",
         f"about {float(cpus) / cpu_per_post:,.0f} POSTs/s."],
        ["**Through the gateway.**", gateway_read_note(f),
         "A POST is the service's POST plus a second HTTP exchange on the same cores: the gateway finds the session",
         "in its own memory (PostgreSQL is asked at most once a minute per session) and forwards the pin on a",
         "kept-alive connection of the same event loop, so the request never leaves the thread that read it; its",
         "live feed, with no stream open, only asks the service how far the log has moved. Per POST",
         f"that is {f.per_request('gw_post', 'gateway')} of gateway CPU, "
         f"{f.per_request('gw_post', 'service')} in the service and",
         f"{f.per_request('gw_post', 'postgres')} in PostgreSQL, against",
         f"{f.per_request('post_service', 'service')} and",
         f"{f.per_request('post_service', 'postgres')} for the service's own POST:",
         f"{gw_post_cpu * 1e6:,.0f} µs per POST in all (wrk included), which {cpus} cores allow about",
         f"{float(cpus) / gw_post_cpu:,.0f} times a second. The service and PostgreSQL spend more per POST here than",
         "under their own load: at the lower rate fewer posts wait for, and share, each commit."],
        [f"**Replay.** The replay process used {num('replay_service_cpu_seconds'):.1f} s of CPU in",
         f"{num('replay_service_seconds'):.1f} s while PostgreSQL kept {f['replay_service_cpu_postgres']} cores busy",
         f"({replay_pg_seconds:.1f} s of CPU).", replay_note(f),
         "The SQL rebuild is one sort inside PostgreSQL (default work_mem, so partly on disk) with no round trips."],
        [f"**Memory.** The running service stays small and flat ({mb('rss_idle_kb')} idle); it grows with open",
         f"connections and their buffers, not with the log. So does the gateway ({mb('rss_gw_idle_kb')} idle,",
         f"{mb('rss_gw_read_peak_kb')} and {mb('rss_gw_post_peak_kb')} at the peaks of its two loads). `replay` holds "
         "the latest state of every pin in memory",
         f"before loading it: {mb('rss_replay_peak_kb')} at peak for {count(f.live_pins)} pins."],
    ]
    # One bullet per line of Markdown, whatever its length.
    return ["## What limits these figures", ""] + ["- " + " ".join(parts) for parts in bullets]


def write_report(r, target):
    """BENCHMARKS.md's preamble and main sections; the sections other benchmarks write (fuzzing, the command
    line, the web client, the live fan-out) stay as they are."""
    f = Figures(dict(r))
    write_sections(target, machine_section(f) + results_section(f) + rounds_section(f) + details_section(f)
                   + limits_section(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report-only", action="store_true",
                        help="write BENCHMARKS.md again from bench/results/results.env, measuring nothing")
    if parser.parse_args().report_only:
        if not RESULTS_FILE.exists():
            print("bench: no figures in bench/results/results.env yet; run bench/run.py first", file=sys.stderr)
            return 1
        write_report(load_results(RESULTS_FILE), ROOT / "BENCHMARKS.md")
        return 0

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    # Set here even for SIGINT: a program started in the background of a script begins with it ignored.
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    cleanup = contextlib.ExitStack()
    status = 0
    try:
        run(cleanup)
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 130
    finally:
        # Stopping what was started must not itself be cut short by a second Ctrl-C.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cleanup.close()
    if status:
        print(f"bench: failed (exit {status}); logs are in bench/results/", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
