#!/usr/bin/env python3
"""The benchmarks' entry point, as the README runs it (`bench/run.py [benchmark] [--report-only]`): the
package `bench` from the repository's root, its usage in bench/main.py. `python3 -m bench` is the same."""
import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the root, not bench/ itself
from bench.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
