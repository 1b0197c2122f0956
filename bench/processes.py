"""Starting and stopping what the benchmarks run: commands, the release binaries, a private PostgreSQL,
locations-service, auth-gateway and nginx. Everything started through a `Bench` is stopped when it closes,
whatever happened: the servers first, the last started first, then the clusters, then the scratch folders."""
import base64
import contextlib
import json
import os
import resource
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from http.client import HTTPException
from pathlib import Path

from harness.client import PREFIX, read_json
from harness.postgres import shell
from harness.processes import free_port
from harness.waiting import poll

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"


class BenchError(Exception):
    """A step that failed; the run stops, and its message says which step."""


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def setting(name, default, kind=int):
    """A value of KIND from the environment, DEFAULT when it is unset or empty."""
    value = os.environ.get(name, "")
    try:
        return kind(value) if value else default
    except ValueError:
        sys.exit(f"bench: {name} must be a whole number, not {value!r}")


def show_tail(path, lines=20):
    """The last LINES lines of a log (all of it for None), on stderr: what a failure message points to."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return
    print("\n".join(text if lines is None else text[-lines:]), file=sys.stderr)


def lib_sh(script, *args):
    """Runs SCRIPT in bash with scripts/lib.sh sourced (the helpers every script of the project shares),
    ARGS as $1, $2...; returns what it printed on stdout, or stops the run with all it printed."""
    done = shell(script, *args, check=False)
    if done.returncode != 0:
        print(done.stdout + done.stderr, end="", file=sys.stderr)
        raise BenchError(f"scripts/lib.sh: {script.split()[0]} failed")
    return done.stdout


def output_of(*args):
    """What a quick command printed, stdout and stderr together; empty if it could not run."""
    try:
        return subprocess.run(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return ""


def raise_open_files(name, count):
    """Raises the open-file limit as far as it may go (the children inherit it; as root, the hard limit too, to
    two descriptors per connection and 10,000 to spare), and stops the benchmark
    NAME when COUNT connections (a descriptor each in the client and the server) and a thousand to spare
    would not fit."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(hard, 2 * count + 10000) if hard != resource.RLIM_INFINITY else hard
    try:  # root may raise the hard limit itself
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
        hard = wanted
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard != resource.RLIM_INFINITY and hard <= count + 1000:
        raise BenchError(f"{name}: {count} connections need more open files than the limit of {hard}")


LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy


def trust_ca(path):
    """From now on `request` trusts, over HTTPS, the certificates the CA in PATH (PEM) signed."""
    global LOOPBACK
    LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                           urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=str(path))))


def request(url, method="GET", headers=None, body=None, timeout=10):
    """(status, body) of one request; status None when nothing answered in TIMEOUT seconds."""
    try:
        with LOOPBACK.open(urllib.request.Request(url, data=body, method=method, headers=headers or {}),
                           timeout=timeout) as response:
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


def signal_group(proc, signum):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


class Processes:
    """The commands the run starts. Each gets a process group of its own, so that stopping it reaches what
    it started too (nginx's workers), and a Ctrl-C on the terminal reaches only this program, which then
    stops them in order, the last started first."""

    def __init__(self):
        self.running = {}  # process: the signal that stops it

    def spawn(self, args, stdout, stderr, env=None, stop_signal=signal.SIGTERM, stdin=subprocess.DEVNULL):
        try:
            proc = subprocess.Popen([str(arg) for arg in args], cwd=ROOT, stdin=stdin, stdout=stdout,
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

    def output(self, args, seconds, env=None, input=None):
        """Runs ARGS to its end (at most SECONDS), INPUT (bytes) on its stdin, and returns what it printed;
        stops the run if it failed."""
        proc = self.spawn(args, subprocess.PIPE, subprocess.PIPE, env,
                          stdin=subprocess.DEVNULL if input is None else subprocess.PIPE)
        try:
            out, err = proc.communicate(input, timeout=seconds)
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


class PostgreSQL:
    """A private cluster, started and stopped by scripts/lib.sh, with the default durability (fsync and
    synchronous_commit on) unless SETTINGS (postgres -c settings) say otherwise; its superuser reaches it
    over loopback TCP without a password."""

    def __init__(self, processes, data_dir, settings=()):
        self.processes = processes
        self.data_dir = data_dir
        self.settings = settings
        self.bin = Path(lib_sh('ensure_postgres_installed >&2\necho "$PG_BIN"').splitlines()[-1])
        self.port = free_port()

    def start(self):
        lib_sh('start_private_postgres "$@"', self.data_dir, self.port, *self.settings)

    def stop(self):
        lib_sh('stop_private_postgres "$1"', self.data_dir)

    def version(self):
        return subprocess.run([self.bin / "postgres", "--version"], capture_output=True, text=True).stdout.split()[2]

    def url(self, database):
        return f"postgres://onthemap@127.0.0.1:{self.port}/{database}"

    def psql_args(self, database, *args):
        """The command line of psql as the superuser on DATABASE, stopping at the first error."""
        return [self.bin / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", self.port, "-U",
                "onthemap", "-d", database, *args]

    def psql(self, database, *args):
        """psql as the superuser, stopping at the first error; returns what it printed."""
        return self.processes.output(self.psql_args(database, *args), 900)

    def write_events(self, database, pins, output):
        """PINS x 4 events into DATABASE's log by bench/generate-events.sql (logged to OUTPUT): for logs of
        millions of events, which take longer than `psql` waits."""
        self.processes.run_or_fail(
            self.psql_args(database, "-v", f"pins={pins}", "-v", f"blocks={max(10, pins // 100_000)}", "-f",
                           "bench/generate-events.sql"), 7200, output, "writing the log failed")

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


class Server:
    """A server started for the benchmarks: its process, where it listens and where it logs."""

    def __init__(self, name, proc, port, log_path, scheme="http"):
        self.name, self.proc, self.port, self.log_path, self.scheme = name, proc, port, log_path, scheme

    @property
    def pid(self):
        return self.proc.pid

    @property
    def base(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def url(self, path="/v1/StudentLocation"):
        return self.base + path

    def wait_ready(self, tries, path="/readyz"):
        """Returns once PATH answers 200; fails if the server ends first or TRIES polls, 0.1 s apart, pass."""
        ready = poll(lambda: request(self.url(path))[0] == 200 or self.proc.poll() is not None, tries * 0.1)
        if ready and self.proc.poll() is None:
            return self
        show_tail(self.log_path)
        raise BenchError(f"{self.name} did not become ready on port {self.port}")

    def serving(self, body):
        """Returns once the server answers its URL with the bytes of the file BODY; fails if it does not
        within 5 s."""
        def served():
            status, answer = request(self.url())
            return status == 200 and answer
        if poll(served, 5) != body.read_bytes():
            show_tail(self.log_path)
            raise BenchError(f"{self.name} does not serve the bytes of {body}")
        return self

    def expect_alive(self, during):
        """A figure measured on a server that died under load means nothing."""
        status = self.proc.poll()
        if status is None:
            return
        show_tail(self.log_path)
        ending = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        raise BenchError(f"{self.name} ended during {during} ({ending})")


class Bench:
    """One benchmark's run: the processes it starts, its PostgreSQL clusters and scratch folders, all
    undone by `close`. The release binaries come from BENCH_BINARIES when it names a folder that holds
    them (no build), or are built into .build-bench/."""

    def __init__(self):
        self.processes = Processes()
        self.clusters = []
        self.folders = []
        self.token = secrets.token_urlsafe(32)  # what locations-service and the gateways of this run share
        os.environ["PATH"] += ":/usr/sbin:/sbin"  # nginx lives in /usr/sbin
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)

    def close(self):
        self.processes.stop_all()
        for cluster in reversed(self.clusters):
            cluster.stop()
        self.clusters.clear()
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)
            Path(f"{folder}.initdb.log").unlink(missing_ok=True)

    def scratch(self, prefix):
        """A new folder in /tmp whatever TMPDIR says, open to all (a cluster's owner is the postgres system
        user, nginx's workers run as nobody); removed at the end."""
        folder = Path(tempfile.mkdtemp(prefix=f"onthemap-{prefix}.", dir="/tmp"))
        folder.chmod(0o755)
        self.folders.append(folder)
        return folder

    def postgres(self, *settings):
        """A private cluster, started."""
        cluster = PostgreSQL(self.processes, self.scratch("bench-pg"), settings)
        self.clusters.append(cluster)
        cluster.start()
        return cluster

    def stop_postgres(self, cluster):
        cluster.stop()
        self.clusters.remove(cluster)

    def binaries(self, *products, log_name="build"):
        """The folder of the release binaries of PRODUCTS, each built first unless BENCH_BINARIES is set."""
        given = os.environ.get("BENCH_BINARIES")
        if given:
            folder = Path(given).resolve()
            absent = [product for product in products if not (folder / product).is_file()]
            if absent:
                raise BenchError(f"BENCH_BINARIES={given} holds no {', '.join(absent)}")
            return folder
        # The toolchain's C libraries (zlib, libbrotli) are installed if missing, as for the tests.
        lib_sh("ensure_toolchain")
        release_build = lib_sh('echo "${RELEASE_BUILD[@]}"').split()
        build_log = RESULTS_DIR / f"{log_name}.log"
        build_log.unlink(missing_ok=True)
        log(f"building {', '.join(products)} (release)")
        for product in products:
            # SIGINT, not SIGTERM, to stop it: SwiftPM runs each compiler job in a process group of its own and
            # cancels them on SIGINT, while on SIGTERM it ends alone and leaves them compiling. A scratch folder
            # of its own, so a benchmark build never waits on (or disturbs) a development build.
            self.processes.run_or_fail(["swift", "build", *release_build, "--scratch-path", ".build-bench",
                                        "--product", product], 1800, build_log, f"build of {product} failed",
                                       append=True, show=30, stop_signal=signal.SIGINT)
        return ROOT / ".build-bench" / "release"

    def start_server(self, name, args, log_name, env, tries=150):
        """A server of ours (ARGS: binary and subcommand) on a free port, returned once /readyz answers 200
        (over HTTPS when ENV has TLS_CERT)."""
        port = free_port()
        log_path = RESULTS_DIR / log_name
        env = {"INTERNAL_TOKEN": self.token, "PORT": str(port), **env}
        proc = self.processes.start([*args, "--port", port], log_path, env)
        return Server(name, proc, port, log_path, "https" if env.get("TLS_CERT") else "http").wait_ready(tries)

    def start_nginx(self, body, name, tls=None, coded=None):
        """nginx serving the file BODY at /v1/StudentLocation until the run ends; over HTTPS with TLS, a
        (certificate, key) pair of PEM files, HTTP/2 or HTTP/1.1 as the client asks. CODED, a (coding, file)
        pair, also serves FILE's bytes, as they are, to a client that accepts that coding (gzip or br):
        gzip_static or brotli_static, each with `Vary: Accept-Encoding`."""
        web = self.scratch(f"nginx-{name}")
        (web / "www").mkdir()
        (web / "www").chmod(0o755)  # nginx workers run as nobody
        (web / "tmp").mkdir()
        shutil.copyfile(body, web / "www" / "latest.json")
        (web / "www" / "latest.json").chmod(0o644)
        modules, static = "", ""
        if coded:
            coding, file = coded
            extension = {"gzip": "gz", "br": "br"}[coding]
            shutil.copyfile(file, web / "www" / f"latest.json.{extension}")
            (web / "www" / f"latest.json.{extension}").chmod(0o644)
            static = "gzip_vary on;\n            " + ("gzip_static on;" if coding == "gzip" else "brotli_static on;")
            if coding == "br":
                modules = "load_module /usr/lib/nginx/modules/ngx_http_brotli_static_module.so;\n"
        port = free_port()
        template = (ROOT / "bench" / "nginx.conf.template").read_text().replace("@MODULES@", modules).replace("@STATIC@", static)
        listen = f"127.0.0.1:{port}"
        if tls:
            # As the gateway's: TLS 1.2 and 1.3 only, ALPN offering h2 first.
            listen += (f" ssl http2;\n        ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]};\n"
                       "        ssl_protocols TLSv1.2 TLSv1.3")
        (web / "nginx.conf").write_text(template.replace("@DIR@", str(web)).replace("@LISTEN@", listen))
        proc = self.processes.start(["nginx", "-p", web, "-c", web / "nginx.conf", "-e", web / "error.log"])
        return Server("nginx", proc, port, web / "error.log", "https" if tls else "http").serving(body)

    def start_floor(self, binaries, body, mode):
        """bench/floor (HTTPFloor) answering every request with BODY's bytes, MODE one of FLOOR_MODES: the
        least the services' HTTP stack costs per answer."""
        port = free_port()
        log_path = RESULTS_DIR / f"floor-{mode}.log"
        proc = self.processes.start([binaries / "HTTPFloor", mode, port, body], log_path)
        return Server(f"HTTPFloor ({mode})", proc, port, log_path).serving(body)


# For the benchmarks whose clients all come from one address: the per-address caps would refuse all but
# the first few of their connections and streams.
# bench/floor's ways of answering (HTTPFloor's first argument), as the reports describe them.
FLOOR_MODES = {"parsed": "after NIO's HTTP/1.1 parser (the services' own) and one handler",
               "raw": "with no HTTP parser (a request ends at a blank line)"}

NO_CAPS = {"MAX_CONNECTIONS_PER_CLIENT": "100000", "MAX_STREAMS_PER_CLIENT": "100000"}


class Stack:
    """What the gateway's own benchmarks share (the command line, the web client, the live fan-out,
    memory per connection, the soak): locations-service on a private PostgreSQL (PG_SETTINGS: fsync off
    unless said otherwise), on loopback, and gateways in front of it. ENV goes to every service; logs are
    bench/results/NAME-*.log."""

    def __init__(self, bench, name, binaries, env=None, pg_settings=("fsync=off",)):
        self.bench, self.name, self.binaries = bench, name, binaries
        self.env = {"LOG_LEVEL": os.environ.get("LOG_LEVEL", "warning"), **(env or {})}
        self.postgres = bench.postgres(*pg_settings)
        self.env["DATABASE_URL"] = self.postgres.url("postgres")
        for product in ["locations-service", "auth-gateway"]:
            bench.processes.run_or_fail([binaries / product, "migrate"], 120, RESULTS_DIR / f"{name}-migrate.log",
                                        f"migrating for {product} failed", self.env, append=True)
        self.service = self.start("locations-service", "serve")
        self.locations_url = self.service.base

    def start(self, product, *args, log_name=None, env=None, wrap=()):
        """PRODUCT (locations-service or auth-gateway) serving on 127.0.0.1, ready; WRAP runs it under
        another command (heaptrack)."""
        # The benchmarks' writers post as fast as they can, with one session: the write limit and the cap on
        # one student's pins are raised so that they refuse or remove none (each post is still counted, and
        # the cap still checked).
        if product == "auth-gateway":
            env = {"LOCATIONS_URL": self.locations_url, "WRITE_BURST": str(10**6), **(env or {})}
        else:
            env = {"PINS_PER_STUDENT": str(10**6), **(env or {})}
        return self.bench.start_server(product, [*wrap, self.binaries / product, *args, "--host", "127.0.0.1"],
                                       log_name or f"{self.name}-{product}.log", {**self.env, **(env or {})})

    def gateway(self, env=None, log_name=None):
        return self.start("auth-gateway", "serve", env=env, log_name=log_name)


def student_session(gateway, email, password, first, last):
    """Signs a student up through GATEWAY's API (or finds the account there already) and logs in once: the
    session id. A single login attempt with the right password: login throttling never comes into it."""
    for path, body, accepted in [
        ("/v1/accounts", {"email": email, "password": password, "firstName": first, "lastName": last}, (201, 409)),
        ("/v1/session", {"udacity": {"username": email, "password": password}}, (200, 201)),
    ]:
        status, answer = post_json(gateway.url(path), body)
        if status not in accepted:
            print(answer.decode(errors="replace"), file=sys.stderr)
            raise BenchError(f"{path} answered {status}")
    # The answer starts with Udacity's 5-byte guard, )]}' and a newline.
    if not answer.startswith(PREFIX):
        raise BenchError("no session id in the login answer")
    return read_json(answer)["session"]["id"]


def wrk_summary(path):
    """The figures of the line bench/summary.lua (or soak.lua) had wrk print into PATH, as {name: text}."""
    line = next((line for line in Path(path).read_text().splitlines() if line.startswith("wrk-summary ")), None)
    if line is None:
        show_tail(path, None)
        raise BenchError(f"no summary in {Path(path).name}")
    return dict(field.partition("=")[::2] for field in line.split()[1:])


def main(run):
    """Runs RUN(bench) with SIGINT and SIGTERM turned into KeyboardInterrupt, and whatever it started
    stopped afterwards; the exit status."""
    def interrupted(signum, frame):
        raise KeyboardInterrupt

    # Set here even for SIGINT: a program started in the background of a script begins with it ignored.
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    bench = Bench()
    status = 0
    try:
        os.environ["PATH"] = lib_sh('ensure_toolchain >&2\necho "$PATH"').splitlines()[-1]
        run(bench)
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 130
    finally:
        # Stopping what was started must not itself be cut short by a second Ctrl-C.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        bench.close()
    if status:
        print(f"bench: failed (exit {status}); logs are in bench/results/", file=sys.stderr)
    return status
