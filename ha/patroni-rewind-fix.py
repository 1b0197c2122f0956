"""Patroni, started as its `patroni` command starts it, with one decision corrected: whether a former primary
must be rewound (pg_rewind) before it follows the new primary.

Run with Patroni's own interpreter: `python3 patroni-rewind-fix.py patroni.yml` (ha/topology.py does).

Patroni 3.0 (Debian 12's) judges a running standby's timeline by what its WAL receiver last received. A
primary that lost its lock restarts as a standby after a crash-like stop, and with `restore_command` it reads
the new primary's timeline history from the repository at once, so its WAL receiver starts on the new
timeline while what the server replayed from its own WAL went past the point where the timelines forked.
Patroni then sees the same timeline on both sides, skips pg_rewind, and the standby waits forever for WAL
that never matches its own ("record with incorrect prev-link"): seen in 2 of 5 runs of scripts/ha-test.sh's
freeze-primary. Asked without the WAL receiver's answer, Patroni falls back to the timeline the server itself
reports (IDENTIFY_SYSTEM: the one it replayed), which is the right one and what later Patroni releases use
(patroni/patroni pull request 2863). Where the installed Patroni no longer asks its WAL receiver here, this
changes nothing.
"""
import sys

from patroni.__main__ import main
from patroni.postgresql.rewind import Rewind

as_shipped = Rewind._get_local_timeline_lsn


def local_timeline_as_replayed(self):
    """The shipped check, with the WAL receiver's timeline unknown for its duration. The only other reader of
    that timeline, the member record Patroni writes to etcd, would meanwhile take its next source, as it
    does whenever no WAL receiver runs."""
    postgresql = self._postgresql
    postgresql.received_timeline = lambda: None
    try:
        return as_shipped(self)
    finally:
        del postgresql.received_timeline


Rewind._get_local_timeline_lsn = local_timeline_as_replayed

if __name__ == "__main__":
    sys.exit(main())
