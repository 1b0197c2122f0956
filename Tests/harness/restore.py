"""A restore to a moment under load: the mistake made while the load runs, and the checks of the restored log
against what the load sent and had acknowledged. The restore drill (Tests/faults/restore_drill.py) and the
failover tests' restore through Patroni (Tests/ha/ha.py) share them."""
import dataclasses
import datetime
import subprocess
import time


def utc(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def make_the_mistake(sql, load, checks):
    """`DROP SCHEMA locations CASCADE` through `sql` (a function that runs one statement on the database, as
    its owner or a superuser) under `load`, which is then stopped; every post after it must fail. Returns
    the moment it was sent, by the database's clock."""
    mistake = float(sql("SELECT extract(epoch FROM clock_timestamp())")[0][0])
    # The DROP waits for the appends holding the log's tables, and takes effect when it commits; one that
    # locks the tables in another order than an append may be chosen as a deadlock's victim, and is sent again.
    for attempt in range(5):
        try:
            sql("DROP SCHEMA locations CASCADE")
            break
        except subprocess.CalledProcessError:
            if attempt == 4:
                raise
    dropped_at = time.time()
    dropped = time.monotonic()
    print(f"  the mistake: DROP SCHEMA locations CASCADE at {utc(mistake).isoformat()}, committed {dropped_at - mistake:.2f} s later",
          flush=True)
    time.sleep(2)  # two seconds of posts after it, each of which must fail
    load.finish(20)
    failed_after = [a for a in load.outcomes.statuses("write") if a[0] > dropped and a[3] not in (200, 201)]
    acknowledged_after = [key for key, at in load.outcomes.acknowledged_at.items() if at > dropped_at + 0.5]
    checks.expect(len(failed_after) > 0 and not acknowledged_after,
                  f"posts after the mistake fail ({len(failed_after)} failed, {len(acknowledged_after)} acknowledged)")
    return mistake


@dataclasses.dataclass
class RestoreAudit:
    """A restored log against a load that was running when the mistake was made: idempotency keys."""
    before: list  # acknowledged by the restore point
    after: list  # first sent after it
    missing: list  # acknowledged by the restore point, and not in the log
    doubled: list  # in the log more than once
    late: list  # sent after the restore point, and in the log
    absent: list  # acknowledged by the restore point, and not in the read model as sent


def audit_restore(outcomes, restore_point, counts, pins):
    """Audits the load's `outcomes` against a log restored to `restore_point` (a time.time()): `counts`, rows
    of (idempotency key, how many LocationPosted events have it), and `pins`, the read model's
    (objectId, mapString) rows."""
    logged = {key: int(count) for key, count in counts}
    places = dict(pins)
    before = [key for key, at in outcomes.acknowledged_at.items() if at <= restore_point]
    after = [key for key, at in outcomes.sent_at.items() if at > restore_point]
    return RestoreAudit(
        before=before, after=after,
        missing=[key for key in before if key not in logged],
        doubled=[key for key, count in logged.items() if count != 1],
        late=[key for key in after if key in logged],
        absent=[key for key in before if places.get(outcomes.acknowledged[key][0]) != outcomes.acknowledged[key][1]])


def check_restored(outcomes, restore_point, checks, sql):
    """Every pin acknowledged by `restore_point` once in the log and the read model; none sent after it."""
    audit = audit_restore(outcomes, restore_point,
                          sql("SELECT idempotency_key, count(*) FROM locations.events WHERE event_type = 'LocationPosted' "
                              "AND idempotency_key IS NOT NULL GROUP BY 1"),
                          sql("SELECT object_id, map_string FROM locations.pins"))
    checks.figures["acknowledged_before_restore_point"] = len(audit.before)
    checks.expect(len(audit.before) > 0 and not audit.missing,
                  f"every one of the {len(audit.before)} pins acknowledged before the restore point is in the log ({len(audit.missing)} missing)")
    checks.expect(not audit.doubled, f"no pin is in the log twice ({len(audit.doubled)} doubled)")
    checks.expect(not audit.late, f"none of the {len(audit.after)} pins sent after the restore point is in the log ({len(audit.late)} there)")
    checks.expect(not audit.absent, f"each of them is in the read model as sent ({len(audit.absent)} absent or different)")
