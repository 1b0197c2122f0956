"""Waiting for a condition, on a clock the tests drive: nothing here sleeps."""
import unittest

from harness.waiting import NotReached, poll, wait_until


class Clock:
    """A clock that moves only when the wait pauses."""

    def __init__(self):
        self.now, self.pauses = 100.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


class WaitingTests(unittest.TestCase):
    def test_a_condition_that_holds_at_once_is_not_waited_for(self):
        clock = Clock()
        self.assertEqual(poll(lambda: "there", 5, clock=clock, sleep=clock.sleep), "there")
        self.assertEqual(clock.pauses, [])

    def test_the_wait_ends_when_the_condition_holds_and_returns_its_value(self):
        clock = Clock()
        self.assertEqual(poll(lambda: clock.now >= 100.25 and 7, 5, every=0.1, clock=clock, sleep=clock.sleep), 7)
        self.assertEqual(clock.pauses, [0.1, 0.1, 0.1])

    def test_a_condition_that_never_holds_is_asked_until_the_deadline_and_once_at_it(self):
        clock, asked = Clock(), []
        self.assertIsNone(poll(lambda: asked.append(clock.now), 1, every=0.4, clock=clock, sleep=clock.sleep))
        self.assertEqual([round(at - 100, 1) for at in asked], [0.0, 0.4, 0.8, 1.0])

    def test_wait_until_names_what_it_waited_for(self):
        clock = Clock()
        with self.assertRaisesRegex(NotReached, "not reached within 2 s: the primary"):
            wait_until(lambda: False, 2, "the primary", clock=clock, sleep=clock.sleep)
        self.assertEqual(wait_until(lambda: 3, 2, "a value", clock=clock, sleep=clock.sleep), 3)


if __name__ == "__main__":
    unittest.main()
