"""Waiting for a condition, not for a fixed time: each wait asks again and again, and ends as soon as the
condition holds. The clock and the pause are parameters, so that the waits' own tests never sleep."""
import time


class NotReached(RuntimeError):
    """A condition that did not hold within the time it was given."""


def poll(condition, seconds, every=0.1, clock=time.monotonic, sleep=time.sleep):
    """The first true value `condition()` returns within `seconds`, asked every `every` seconds and once more
    at the deadline; None if it never returned one."""
    deadline = clock() + seconds
    while True:
        value = condition()
        if value:
            return value
        left = deadline - clock()
        if left <= 0:
            return None
        sleep(min(every, left))


def wait_until(condition, seconds, what, every=0.1, clock=time.monotonic, sleep=time.sleep):
    """As `poll`, but a condition that never holds raises NotReached, naming `what` was waited for."""
    value = poll(condition, seconds, every, clock, sleep)
    if not value:
        raise NotReached(f"not reached within {seconds} s: {what}")
    return value
