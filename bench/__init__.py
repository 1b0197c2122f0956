"""The benchmarks (bench/main.py says what each measures; bench/run.py runs them). The modules import each
other as `bench.<module>`, with the repository's root on the path, and share the test harness (Tests/harness:
free ports, lib.sh's private PostgreSQL, the gateway's JSON prefix, waiting for a condition), which is why
the repository's Tests folder is put on the path here, once."""
import os
import sys

_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
