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
every parser of client input fuzzed a million runs (bench/fuzz.sh), then the `cli` benchmark below.
The throughputs (1, 3, 5, 6) and replay (2) are measured in several rounds, each next to its limit (see
Benchmarks.alternate in limits.py). Rewrites BENCHMARKS.md's main sections; raw outputs and logs go to
bench/results/ (not versioned), every figure among them as a KEY=VALUE line in results.env, which the
report is written from (again, with --report-only).

Usage (as root on Debian 12; installs what is missing):
  bench/run.py                     the above
  bench/run.py --report-only       only the report, written again from bench/results/results.env
  bench/run.py cli                 `onthemap list --json` against `curl -s` of the same URL
  bench/run.py compressed          the hot read with Accept-Encoding (brotli, gzip) against nginx's
                                   brotli_static and gzip_static serving the same bytes
  bench/run.py web                 the web client in headless Chromium: bytes and time to every marker drawn
  bench/run.py fanout              the gateway's live feed to N subscribers against nchan
  bench/run.py tls                 the gateway's hot read over HTTPS (HTTP/1.1 and HTTP/2) against nginx
  bench/run.py at                  the list at a past moment (?at=) over 10M events against one SQL query
  bench/run.py connection-memory   what one open connection costs the gateway
  bench/run.py soak                mixed traffic through the gateway, memory's slope held to a bound
  bench/run.py tracing             the gateway's hot read and POST with every request traced against untraced
  bench/run.py replay              replay over 1M, 4M and 10M events against the SQL rebuild, and its memory
  bench/run.py resume              a live stream resumed 10,000 events back, and from beyond that (a reset),
                                   against a fresh stream
  bench/run.py archiving           the durable POST with pgBackRest archiving every WAL segment against without
Each of the last twelve writes its own section of BENCHMARKS.md and leaves the rest.
  bench/run.py scaling             SCALING.md's inputs measured nowhere else: the gateway's CPU per live stream
                                   per change, log bytes per event, replay's events/s and memory; printed only
  bench/run.py maps                class maps at scale: a class map's hot read against the default map's, the
                                   gateway's memory per map read, a change on one map against another's
                                   subscribers, replay over many maps; into bench/results/maps.md, and printed
Settings, from the environment (the figures in BENCHMARKS.md come from the defaults):
  LOAD_SECONDS    each measured load, wrk or pgbench (default 10)
  WARMUP_SECONDS  the unmeasured load before them (default 3)
  ROUNDS          how many times each throughput and its limit are measured, alternately (default 5;
                  for fanout and scaling, rounds of each size, default 3)
  REPLAY_PINS     pins in the replay log, 4 events each (default 250000)
  REPLAY_SIZES    replay: pins in each of its logs (default "250000 1000000 2500000")
  AT_PINS         at: pins in its log, 4 events each (default 2500000); AT_CONNECTIONS (default 4)
  RESUME_PINS     resume: pins in its log, 4 events each (default 250000)
  RESUME_REQUESTS resume: requests of each kind in each round (default 100)
  SKIP_EXTRAS=1   leaves out the micro-measurements, fuzzing and command-line passes at the end (many minutes)
  BENCH_BINARIES  a folder of release binaries to measure instead of building them into .build-bench/
  CLI_RUNS        cli: hyperfine runs of each command (default 300)
  SIZES           fanout: the numbers of subscribers (default "1000 10000 50000")
  N, HEAPTRACK=1  connection-memory: connections of each kind (default 3000); heaptrack's split of the heap
  MINUTES         soak: its length (default 30)
  MAPS, MAP_PINS, MEMORY_MAPS, SMALL_MAP_BOUND, MEMORY_BUDGET, MAP_SUBSCRIBERS, MAP_REPLAY_PINS
                  maps: see bench/maps.py
  STREAMS, POSTS, WINDOW, SCALING_PINS  scaling: streams held open (default "5000 10000"), pins posted in each
                  window of WINDOW s (50, 15), pins in each log, 4 events each (default "250000 500000")
A trial run:
  BENCH_BINARIES=.build-bench/release LOAD_SECONDS=3 WARMUP_SECONDS=1 ROUNDS=1 REPLAY_PINS=25000 SKIP_EXTRAS=1 bench/run.py
"""
import argparse
import os
import sys

from bench import archiving
from bench import cli
from bench import compressed
from bench import connection_memory
from bench import fanout
from bench import limits
from bench import maps
from bench import moments
from bench import processes
from bench import replay
from bench import resume
from bench import scaling
from bench import soak
from bench import tls
from bench import tracing
from bench import web
from bench.report import load_results, write_report

BENCHMARKS = {
    "archiving": archiving.run,
    "cli": cli.run,
    "compressed": compressed.run,
    "web": web.run,
    "fanout": fanout.run,
    "connection-memory": connection_memory.run,
    "soak": soak.run,
    "tls": tls.run,
    "tracing": tracing.run,
    "at": moments.run,
    "replay": replay.run,
    "resume": resume.run,
    "scaling": scaling.run,
    "maps": maps.run,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benchmark", nargs="?", choices=sorted(BENCHMARKS), help="one of the other benchmarks")
    parser.add_argument("--report-only", action="store_true",
                        help="write BENCHMARKS.md again from bench/results/results.env, measuring nothing")
    arguments = parser.parse_args()
    if arguments.report_only:
        if not limits.RESULTS_FILE.exists():
            print("bench: no figures in bench/results/results.env yet; run bench/run.py first", file=sys.stderr)
            return 1
        write_report(load_results(limits.RESULTS_FILE))
        return 0
    if arguments.benchmark:
        return processes.main(BENCHMARKS[arguments.benchmark])
    return processes.main(lambda bench: limits.run(bench, extras=os.environ.get("SKIP_EXTRAS") != "1"))
