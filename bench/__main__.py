"""`python3 -m bench`, the same as bench/run.py."""
import sys

from bench.main import main

sys.argv[0] = "python3 -m bench"  # what the usage line names
sys.exit(main())
