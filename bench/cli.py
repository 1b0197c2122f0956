"""The command-line client against curl: `onthemap list --json` and `curl -s` of the same URL, whole
processes timed warm with hyperfine (goal: at most 2x curl's time), plus the client's start-up time
(`onthemap --version`, no network) and its peak resident memory for one `list --json`. On its own
PostgreSQL and both services, with the latest-100 list full; writes the "Command line" section."""
import json
import sys

from bench.install import ensure
from bench.processes import RESULTS_DIR, BenchError, Stack, log, request, setting
from bench.report import stamp, write_sections

RATIO_GOAL = 2
# Peak resident memory of one command, as the kernel counts it for a child of a small process of its own: a
# child's count starts from what its parent held when it started it.
PEAK_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def hyperfine(bench, runs, name, *commands):
    """hyperfine's figures for COMMANDS ((name, command line) pairs), also in bench/results/cli-NAME.*."""
    named = [part for name_and_command in commands for part in ("-n", *name_and_command)]
    bench.processes.run_or_fail(["hyperfine", "--warmup", 20, "--runs", runs, "-N", "--export-json",
                                 RESULTS_DIR / f"cli-{name}.json", *named], None, RESULTS_DIR / f"cli-{name}.txt",
                                f"hyperfine {name} failed")
    print((RESULTS_DIR / f"cli-{name}.txt").read_text(), end="")
    return {result["command"]: result for result in json.loads((RESULTS_DIR / f"cli-{name}.json").read_text())["results"]}


def run(bench):
    runs = setting("CLI_RUNS", 300)
    ensure("hyperfine", "curl")
    binaries = bench.binaries("locations-service", "auth-gateway", "onthemap", log_name="cli-build")
    onthemap = binaries / "onthemap"
    stack = Stack(bench, "cli", binaries, pg_settings=())
    gateway = stack.gateway()
    config = bench.scratch("cli-config")
    client_env = {"XDG_CONFIG_HOME": str(config)}

    # A full latest-100 list, posted by one student signed up through the CLI's own library path.
    bench.processes.output([onthemap, "signup", "--gateway", gateway.base, "--email", "bench@example.com",
                            "--first-name", "Bench", "--last-name", "Student", "--password-stdin"], 60, client_env,
                           input=b"bench password 1\n")
    session_file = next((config / "onthemap").glob("session-*.json"))
    session = json.loads(session_file.read_text())["session"]["id"]
    for index in range(1, 101):
        body = (f'{{"mapString":"Place {index}","mediaURL":"https://example.com/{index}",'
                f'"latitude":{index % 80}.5,"longitude":{index % 170}.25}}')
        status, _ = request(gateway.url(), "POST", {"Authorization": f"Bearer {session}",
                                                    "Content-Type": "application/json"}, body.encode())
        if status is None or status >= 400:
            raise BenchError(f"posting pin {index} answered {status}")
    url = gateway.url()
    size = len(bench.processes.output(["curl", "-s", url], 30))
    listed = bench.processes.output([onthemap, "list", "--json", "--gateway", gateway.base], 30, client_env)
    if len(listed.encode()) != size + 1:
        raise BenchError("onthemap and curl disagree")

    log(f"hyperfine: {runs} runs each of curl, onthemap list --json and onthemap --version")
    timings = hyperfine(bench, runs, "list", ("curl", f"curl -s {url}"),
                        ("onthemap", f"{onthemap} list --json --gateway {gateway.base}"))
    startup = hyperfine(bench, runs, "startup", ("startup", f"{onthemap} --version"))["startup"]
    rss = int(bench.processes.output([sys.executable, "-c", PEAK_RSS, onthemap, "list", "--json", "--gateway",
                                      gateway.base], 60, client_env))
    curl_rss = int(bench.processes.output([sys.executable, "-c", PEAK_RSS, "curl", "-s", url], 60))
    binary_mb = -(-onthemap.stat().st_blocks * 512 // 2**20)  # as `du -m` rounds: up

    def ms(result, key="median"):
        return result[key] * 1000

    ratio = timings["onthemap"]["median"] / timings["curl"]["median"]
    section = [
        "## Command line",
        "",
        "`bench/run.py cli`: `onthemap list --json` against `curl -s` of the same URL (the latest 100 pins,",
        f"{size:,} bytes, from the gateway on loopback), whole processes timed by hyperfine without a shell,",
        f"20 warm-up runs then {runs} each. Release build; {stamp('Clients', 'Shared', 'Package.swift')}.",
        "",
        "| | median | mean ± σ | min |",
        "| --- | --- | --- | --- |",
    ]
    for name in ["curl", "onthemap"]:
        r = timings[name]
        section.append(f"| `{name}` | {ms(r):.1f} ms | {ms(r, 'mean'):.1f} ± {ms(r, 'stddev'):.1f} ms | {ms(r, 'min'):.1f} ms |")
    section.append(f"| `onthemap --version` (start-up, no network) | {ms(startup):.1f} ms | {ms(startup, 'mean'):.1f} ± "
                   f"{ms(startup, 'stddev'):.1f} ms | {ms(startup, 'min'):.1f} ms |")
    section += [
        "",
        f"**Ratio: {ratio:.2f}× curl's median time** ({'meets' if ratio <= RATIO_GOAL else 'misses'} the goal of at "
        "most 2×). Peak resident memory of one",
        f"`onthemap list --json`: {rss / 1024:.1f} MB (curl: {curl_rss / 1024:.1f} MB); the binary is {binary_mb} MB.",
        "",
    ]
    write_sections(section)
    log(f"onthemap/curl median ratio {ratio:.2f}; wrote the Command line section of BENCHMARKS.md")
