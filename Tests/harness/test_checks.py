"""The checks that nothing acknowledged was lost catch each way of losing it, and pass on a consistent history."""
import io
import subprocess
import unittest

from harness.checks import Checks, audit_load, check_no_server_errors, check_nothing_lost, server_errors
from harness.load import Outcomes
from harness.restore import audit_restore


class History:
    """A load's outcomes and what a consistent database holds after it: each pin sent, appended in its own
    transaction, then acknowledged, one after another unless a test interleaves them."""

    def __init__(self):
        self.outcomes, self.events, self.pins = Outcomes(), [], []
        self.keys = []

    def send(self, key):
        self.outcomes.sending(key)
        self.keys.append(key)

    def append(self, key):
        """The pin of `key` committed: the next transaction and position of the log, and its read model row."""
        number = len(self.events) + 1
        self.events.append([key, f"location-object-{key}", str(700 + number), str(number)])
        self.pins.append([f"object-{key}", f"pin {key}"])

    def acknowledge(self, key):
        self.outcomes.acknowledge(key, f"object-{key}", f"pin {key}")

    def post(self, key):
        self.send(key)
        self.append(key)
        self.acknowledge(key)

    def audit(self):
        return audit_load(self.outcomes, self.events, self.pins)


def consistent(count=5):
    history = History()
    for index in range(count):
        history.post(f"k{index}")
    return history


def faults_of(audit):
    """The fields of an audit that found something."""
    return {name: found for name, found in vars(audit).items() if found}


class LoadAuditTests(unittest.TestCase):
    def test_a_consistent_history_passes(self):
        self.assertEqual(faults_of(consistent().audit()), {})

    def test_a_lost_acknowledged_write_is_missing(self):
        history = consistent()
        del history.events[2]
        self.assertEqual(faults_of(history.audit()), {"missing": ["k2"], "not_in_log": ["object-k2"]})

    def test_a_pin_appended_twice_is_doubled(self):
        history = consistent()
        history.events.append(["k1", "location-object-k1", "900", "900"])
        self.assertEqual(faults_of(history.audit()), {"doubled": ["k1"]})

    def test_a_pin_in_the_log_that_was_never_sent_is_unsent(self):
        history = consistent()
        history.events.append(["stranger", "location-object-stranger", "900", "900"])
        self.assertEqual(faults_of(history.audit()), {"unsent": ["stranger"]})

    def test_an_acknowledgement_naming_another_stream_is_caught(self):
        history = consistent()
        history.events[1][1] = "location-someone-else"
        found = faults_of(history.audit())
        self.assertEqual(found["wrong_stream"], ["k1"])

    def test_a_pin_before_one_acknowledged_before_it_was_sent_is_out_of_order(self):
        history = consistent()
        history.events[1][2:], history.events[3][2:] = history.events[3][2:], history.events[1][2:]
        # k3 now comes before k2, acknowledged before k3 was sent; k2 after k1, which came before it.
        self.assertEqual(faults_of(history.audit()), {"out_of_order": ["k2", "k3"]})

    def test_the_order_is_the_transactions_before_the_positions(self):
        # A transaction may take a position and commit after a later one: the log is read by transaction first.
        history = consistent(2)
        history.events[0][3], history.events[1][3] = "9", "3"
        self.assertEqual(faults_of(history.audit()), {})
        history.events[0][2], history.events[1][2] = "9", "3"
        self.assertEqual(faults_of(history.audit()), {"out_of_order": ["k1"]})

    def test_writes_under_way_together_may_be_in_either_order(self):
        history = History()
        history.send("a")
        history.send("b")
        history.append("b")
        history.append("a")
        history.acknowledge("a")
        history.acknowledge("b")
        history.post("c")
        self.assertEqual(faults_of(history.audit()), {})

    def test_a_pin_sent_again_after_a_lost_answer_keeps_its_first_place(self):
        history = History()
        history.send("a")
        history.append("a")
        history.post("b")
        history.acknowledge("a")  # the answer to the first send was lost; the retry is answered from the log
        self.assertEqual(faults_of(history.audit()), {})

    def test_a_duplicate_in_the_read_model_is_caught(self):
        history = consistent()
        history.pins.append(["object-k3", "pin k3"])
        self.assertEqual(faults_of(history.audit()), {"doubled_in_read_model": ["object-k3"]})

    def test_a_pin_in_the_read_model_that_the_log_lacks_is_caught(self):
        history = consistent()
        history.pins.append(["object-ghost", "pin ghost"])
        self.assertEqual(faults_of(history.audit()), {"not_in_log": ["object-ghost"]})

    def test_a_pin_missing_from_or_different_in_the_read_model_is_absent(self):
        history = consistent()
        history.pins[0][1] = "somewhere else"
        del history.pins[4]
        self.assertEqual(faults_of(history.audit()), {"absent": ["k0", "k4"]})

    def test_an_empty_load_finds_nothing_wrong_by_itself(self):
        self.assertEqual(faults_of(History().audit()), {})


class FinishedLoad:
    """What check_nothing_lost asks of a load: its outcomes, and whether its writers ended."""

    def __init__(self, outcomes, ended=True):
        self.outcomes, self.ended = outcomes, ended

    def finish(self):
        return self.ended


class CheckNothingLostTests(unittest.TestCase):
    def run_check(self, history, verified=0, ended=True, tag=None):
        checks, asked = Checks("test", out=io.StringIO()), []

        def sql(query):
            asked.append(query)
            return history.events if "locations.events" in query else history.pins
        check_nothing_lost(FinishedLoad(history.outcomes, ended), checks, sql,
                           lambda: subprocess.CompletedProcess([], verified, "differs", ""), tag=tag)
        return checks, asked

    def test_a_consistent_history_passes_every_check(self):
        checks, _ = self.run_check(consistent())
        self.assertEqual(checks.failures, [])
        self.assertEqual(checks.figures, {"acknowledged": 5})
        self.assertEqual(checks.out.getvalue().count("  ok   "), 10)

    def test_each_fault_fails_its_own_check(self):
        history = consistent()
        del history.events[0]
        checks, _ = self.run_check(history)
        self.assertEqual(checks.failures, ["every acknowledged pin is in the log (1 missing)",
                                           "the read model holds each pin once, and none the log does not (0 twice, 1 not in the log)"])

    def test_a_load_that_did_not_end_or_acknowledged_nothing_fails(self):
        checks, _ = self.run_check(History(), ended=False)
        self.assertEqual(checks.failures, ["every writer had its last pin acknowledged once the load stopped",
                                           "0 pins acknowledged under the fault"])

    def test_replay_finding_a_difference_fails(self):
        checks, _ = self.run_check(consistent(), verified=1)
        self.assertEqual(checks.failures, ["replay --verify finds the read model equal to the log: differs "])

    def test_a_tag_narrows_both_queries_to_its_pins(self):
        _, asked = self.run_check(consistent(), tag="pin")
        self.assertTrue(all("LIKE 'pin %'" in query for query in asked), asked)


class ServerErrorTests(unittest.TestCase):
    def test_honest_answers_pass(self):
        outcomes = Outcomes()
        outcomes.record(0, 0.1, "write", 201)
        outcomes.record(0, 0.1, "write", 503, {"retry-after": "1"})
        outcomes.record(0, 0.1, "read", None)
        self.assertEqual(server_errors(outcomes.statuses()), ([], [], []))

    def test_a_500_a_bare_503_and_a_refusal_are_caught(self):
        outcomes = Outcomes()
        outcomes.record(0, 0.1, "write", 500)
        outcomes.record(0, 0.1, "write", 503, {"Content-Type": "text/plain"})
        outcomes.record(0, 0.1, "write", 400)
        checks = Checks("test", out=io.StringIO())
        check_no_server_errors(FinishedLoad(outcomes), checks)
        self.assertEqual(checks.failures, ["no 5xx but 503 among 3 answers ([500])", "every 503 carries Retry-After (1 without)",
                                           "no refusal of a valid request ([400, 500])"])


class RestoreAuditTests(unittest.TestCase):
    def restored(self):
        """Three pins acknowledged before the restore point (time 10), one sent after it."""
        outcomes = Outcomes()
        for key, sent, acknowledged in (("a", 1, 2), ("b", 3, 4), ("c", 5, 6), ("late", 11, 12)):
            outcomes.sending(key)
            outcomes.acknowledge(key, f"object-{key}", f"pin {key}")
            outcomes.sent_at[key], outcomes.acknowledged_at[key] = sent, acknowledged
        return outcomes

    def test_a_restore_to_the_point_passes(self):
        audit = audit_restore(self.restored(), 10, [("a", 1), ("b", 1), ("c", 1)],
                              [("object-a", "pin a"), ("object-b", "pin b"), ("object-c", "pin c")])
        self.assertEqual((audit.before, audit.after, audit.missing, audit.doubled, audit.late, audit.absent),
                         (["a", "b", "c"], ["late"], [], [], [], []))

    def test_a_lost_pin_a_doubled_one_and_a_late_one_are_caught(self):
        audit = audit_restore(self.restored(), 10, [("a", 2), ("late", 1)], [("object-a", "pin a"), ("object-c", "elsewhere")])
        self.assertEqual((audit.missing, audit.doubled, audit.late, audit.absent), (["b", "c"], ["a"], ["late"], ["b", "c"]))


if __name__ == "__main__":
    unittest.main()
