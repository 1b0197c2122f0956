"""The checks of a run under faults: each printed as it is made, one line with ok or FAIL, and the run's
figures kept beside them. What they decide is worked out first from plain rows (the load's outcomes, the
log's rows, the read model's), by the audit functions, which the harness's own tests drive without a
database."""
import bisect
import dataclasses
import os
import subprocess
import sys


class Checks:
    """One scenario's checks and figures."""

    def __init__(self, name, out=None):
        self.name, self.failures, self.figures, self.out = name, [], {}, out

    def expect(self, condition, message):
        print(f"  {'ok  ' if condition else 'FAIL'} {message}", file=self.out or sys.stdout, flush=True)
        if not condition:
            self.failures.append(message)


@dataclasses.dataclass
class LoadAudit:
    """What the log and the read model hold against what the load sent and had acknowledged: each field the
    idempotency keys (or, for the read model's own faults, the objectIds) that are wrong in that way."""
    missing: list  # acknowledged, and not in the log
    doubled: list  # in the log more than once
    unsent: list  # in the log, and never sent
    wrong_stream: list  # in the log on another stream than the acknowledgement named
    out_of_order: list  # in the log before a pin that was acknowledged before it was sent
    absent: list  # acknowledged, and not in the read model once as sent
    doubled_in_read_model: list  # objectIds with more than one row in the read model
    not_in_log: list  # objectIds in the read model that no pin of the log has


def audit_load(outcomes, events, pins):
    """Audits a load's `outcomes` (harness.load.Outcomes) against `events`, the log's LocationPosted events
    the load may have written, as (idempotency key, stream name, transaction id, position) rows, and `pins`,
    the read model's pins it may have made, as (objectId, mapString) rows.

    The order checked is the log's reading order, (transaction id, position): a pin acknowledged before
    another was first sent was committed before that one's transaction began, so it comes first."""
    acknowledged = dict(outcomes.acknowledged)
    logged = {}
    for key, stream, transaction, position in events:
        logged.setdefault(key, []).append((stream, (int(transaction), int(position))))
    first = {key: min(order for _, order in rows) for key, rows in logged.items()}

    # The acknowledgements in the order they came, each with the latest place in the log of any so far.
    came = sorted((outcomes.acknowledged_turn[key], first[key]) for key in acknowledged if key in first)
    turns, latest = [turn for turn, _ in came], []
    for _, order in came:
        latest.append(max(order, latest[-1]) if latest else order)
    out_of_order = []
    for key, order in first.items():
        if key in outcomes.sent_turn:
            before = bisect.bisect_left(turns, outcomes.sent_turn[key])
            if before and latest[before - 1] > order:
                out_of_order.append(key)

    rows = {}
    for object_id, place in pins:
        rows.setdefault(object_id, []).append(place)
    streams = {stream for entries in logged.values() for stream, _ in entries}
    return LoadAudit(
        missing=[key for key in acknowledged if key not in logged],
        doubled=[key for key, entries in logged.items() if len(entries) != 1],
        unsent=[key for key in logged if key not in outcomes.sent],
        wrong_stream=[key for key, (object_id, _) in acknowledged.items()
                      if key in logged and logged[key][0][0] != f"location-{object_id}"],
        out_of_order=out_of_order,
        absent=[key for key, (object_id, place) in acknowledged.items() if rows.get(object_id, [None])[-1] != place],
        doubled_in_read_model=[object_id for object_id, places in rows.items() if len(places) != 1],
        not_in_log=[object_id for object_id in rows if f"location-{object_id}" not in streams])


def check_nothing_lost(load, checks, sql, verify, tag=None):
    """Stops `load`, then: every acknowledged pin once in the log, in order, and in the read model; nothing
    that was never sent; the read model equal to the log (`verify`, a function that runs
    `locations-service replay --verify` and returns its finished process). `sql` runs a query on the
    database. With a `tag`, only the pins posted under it are looked at (a database that outlives one load)."""
    checks.expect(load.finish(), "every writer had its last pin acknowledged once the load stopped")
    only_tag = f" AND data->>'mapString' LIKE '{tag} %'" if tag else ""
    events = sql("SELECT idempotency_key, stream_name, transaction_id::text, position FROM locations.events "
                 "WHERE event_type = 'LocationPosted' AND data->>'mapString' <> 'login check'" + only_tag)
    pins = sql("SELECT object_id, map_string FROM locations.pins WHERE map_string <> 'login check'"
               + (f" AND map_string LIKE '{tag} %'" if tag else ""))
    audit = audit_load(load.outcomes, events, pins)
    acknowledged = len(load.outcomes.acknowledged)
    checks.figures["acknowledged"] = acknowledged
    checks.expect(acknowledged > 0, f"{acknowledged} pins acknowledged under the fault")
    checks.expect(not audit.missing, f"every acknowledged pin is in the log ({len(audit.missing)} missing)")
    checks.expect(not audit.doubled, f"no pin was appended twice ({len(audit.doubled)} doubled)")
    checks.expect(not audit.unsent, f"nothing in the log that was never sent ({len(audit.unsent)} unsent)")
    checks.expect(not audit.wrong_stream, f"each acknowledgement named the pin's own stream ({len(audit.wrong_stream)} differ)")
    checks.expect(not audit.out_of_order, "no pin comes before, in the log's order, one acknowledged before it was sent "
                  f"({len(audit.out_of_order)} out of order)")
    checks.expect(not audit.absent, f"every acknowledged pin is in the read model as sent ({len(audit.absent)} absent or different)")
    checks.expect(not audit.doubled_in_read_model and not audit.not_in_log,
                  f"the read model holds each pin once, and none the log does not ({len(audit.doubled_in_read_model)} twice, "
                  f"{len(audit.not_in_log)} not in the log)")
    expect_verified(checks, verify(), "replay --verify finds the read model equal to the log", tail=500)


def replay_verify(bin_dir, database_url, environment=None):
    """`locations-service replay --verify` on the database at `database_url`: the finished process."""
    return subprocess.run([os.path.join(bin_dir, "locations-service"), "replay", "--verify"], capture_output=True, text=True,
                          env=dict(os.environ, LOG_LEVEL="warning", **(environment or {}), DATABASE_URL=database_url))


def expect_verified(checks, verify, message, tail=400):
    """A check that `verify` (a finished replay --verify) found nothing, with the end of its output if it did."""
    checks.expect(verify.returncode == 0, message + ("" if verify.returncode == 0 else f": {verify.stdout[-tail:]} {verify.stderr[-tail:]}"))


def server_errors(answers):
    """(5xx other than 503, 503 without Retry-After, other refusals) among `answers` (Outcomes.answers' rows)."""
    return ([a for a in answers if a[3] is not None and a[3] >= 500 and a[3] != 503],
            [a for a in answers if a[3] == 503 and a[4] is None],
            [a for a in answers if a[3] is not None and a[3] not in (200, 201, 503)])


def check_no_server_errors(load, checks):
    """Every answer the load got was 200, 201 or an honest 503 with Retry-After."""
    answers = load.outcomes.statuses()
    errors, no_retry_after, other = server_errors(answers)
    checks.figures["requests"] = len(answers)
    checks.expect(not errors, f"no 5xx but 503 among {len(answers)} answers ({sorted({a[3] for a in errors})})")
    checks.expect(not no_retry_after, f"every 503 carries Retry-After ({len(no_retry_after)} without)")
    checks.expect(not other, f"no refusal of a valid request ({sorted({a[3] for a in other})})")
