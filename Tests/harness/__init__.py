"""The harness the Python tests and the benchmarks share: processes and their logs (`processes`), a private
PostgreSQL through scripts/lib.sh (`postgres`), HTTP to the services with the gateway's JSON prefix
(`client`), waiting for a condition rather than for a time (`waiting`), the load of writers, readers and
logins (`load`), the checks that nothing acknowledged was lost (`checks`) and those of a restore to a
moment made under that load (`restore`). Its own tests are the test_*.py files here, standard library
only, on 127.0.0.1 alone:

    python3 -m unittest discover -s Tests/harness -t Tests

A program outside Tests/ imports it with Tests/ on its path: each entry script puts it there once, as
`sys.path.insert(0, <the repository's Tests folder>)`.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPTS = ROOT / "scripts"
