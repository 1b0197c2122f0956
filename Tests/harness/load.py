"""The load the fault tests put on the gateways: writers, each posting pins one after another and retrying
each under its Idempotency-Key until it is acknowledged, as a careful client does; readers of the list; and
logins, each followed by a write with the new session. Every answer is recorded, for the checks."""
import itertools
import json
import threading
import time
import uuid

from .client import PASSWORD, read_json, request
from .waiting import poll

# A writer's pause before sending a refused or unanswered pin again; a reader's between two reads; a login
# loop's between two logins, and after a login that went unanswered.
RETRY_PAUSE, READ_PAUSE, LOGIN_PAUSE, LOGIN_RETRY_PAUSE = 0.05, 0.02, 0.2, 0.1


class Outcomes:
    """Every answer the load got, and what each writer sent and had acknowledged.

    `answers` holds (started, seconds, kind, status or None for a connection error, Retry-After or None).
    The times of a send and of an acknowledgement are kept twice: by the wall clock (a restore to a moment
    compares them with the database's), and as turns of one counter, which orders every send and every
    acknowledgement of the load exactly (the checks' order of the log)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answers = []
        self.acknowledged = {}  # idempotency key → (objectId, mapString)
        self.sent = set()
        self.sent_at, self.acknowledged_at = {}, {}
        self.sent_turn, self.acknowledged_turn = {}, {}
        self.turns = itertools.count()

    def sending(self, key):
        """A writer sends the pin of `key` for the first time."""
        with self.lock:
            self.sent.add(key)
            self.sent_at[key] = time.time()
            self.sent_turn[key] = next(self.turns)

    def acknowledge(self, key, object_id, place):
        """The pin of `key` was acknowledged as `object_id`."""
        with self.lock:
            self.acknowledged[key] = (object_id, place)
            self.acknowledged_at[key] = time.time()
            self.acknowledged_turn[key] = next(self.turns)

    def record(self, started, seconds, kind, status, headers=None):
        with self.lock:
            # Header names are matched without regard to case, as HTTP has them (HAProxy sends them in lower case).
            retry_after = next((value for name, value in (headers or {}).items() if name.lower() == "retry-after"), None)
            self.answers.append((started, seconds, kind, status, retry_after))

    def statuses(self, kind=None, between=None):
        """The answers of `kind` (all by default) that were under way at some time `between` (began, ended)."""
        with self.lock:
            return [a for a in self.answers if (kind is None or a[2] == kind)
                    and (between is None or between[0] <= a[0] + a[1] and a[0] <= between[1])]


def timed(outcomes, kind, address, method, path, body=None, headers=None):
    """One request, its answer recorded as `kind`: (status, headers, body), status None when nothing answered."""
    started = time.monotonic()
    try:
        status, answer_headers, data = request(address, method, path, body, headers)
    except OSError:
        outcomes.record(started, time.monotonic() - started, kind, None)
        return None, {}, b""
    outcomes.record(started, time.monotonic() - started, kind, status, answer_headers)
    return status, answer_headers, data


def writer(addresses, session, outcomes, stop, tag, pause=0.0):
    """Posts pins until told to stop, taking the gateways in turn; each pin is sent again under one
    Idempotency-Key until acknowledged."""
    turn = 0
    while not stop.is_set():
        key = str(uuid.uuid4())
        place = f"{tag} {key[:8]}"
        body = {"mapString": place, "mediaURL": f"https://example.com/{key[:8]}", "latitude": 52.52, "longitude": 13.40}
        outcomes.sending(key)
        while True:
            address = addresses[turn % len(addresses)]
            turn += 1
            status, _, data = timed(outcomes, "write", address, "POST", "/v1/StudentLocation", body,
                                    {"Authorization": f"Bearer {session}", "Idempotency-Key": key})
            if status in (200, 201):
                outcomes.acknowledge(key, json.loads(data)["objectId"], place)
                break
            if status not in (None, 503):
                break  # recorded; the checks fail on it
            time.sleep(RETRY_PAUSE)
        if pause:
            time.sleep(pause)


def reader(addresses, outcomes, stop):
    turn = 0
    while not stop.is_set():
        timed(outcomes, "read", addresses[turn % len(addresses)], "GET", "/v1/StudentLocation?limit=100")
        turn += 1
        time.sleep(READ_PAUSE)


def logger_in(addresses, email, outcomes, stop):
    """Logs in again and again, and writes once with each new session: a session no replica holds yet."""
    while not stop.is_set():
        status, _, data = timed(outcomes, "login", addresses[0], "POST", "/v1/session",
                                {"udacity": {"username": email, "password": PASSWORD}})
        if status is None:
            time.sleep(LOGIN_RETRY_PAUSE)
            continue
        if status == 200:
            timed(outcomes, "fresh-session write", addresses[0], "POST", "/v1/StudentLocation",
                  {"mapString": "login check", "mediaURL": "https://example.com", "latitude": 1, "longitude": 1},
                  {"Authorization": f"Bearer {read_json(data)['session']['id']}", "Idempotency-Key": str(uuid.uuid4())})
        time.sleep(LOGIN_PAUSE)


class Load:
    """A writer for each of `sessions`, `readers` readers and (with `logins`) a login loop on the gateways at
    `addresses` (ports on 127.0.0.1, or (host, port) pairs), until `finish`. Each writer starts on another
    gateway; every pin's mapString begins with `tag`."""

    def __init__(self, addresses, sessions, readers=2, logins=False, tag="pin"):
        self.outcomes, self.stop_flag, self.threads = Outcomes(), threading.Event(), []
        for index, session in enumerate(sessions):
            first = index % len(addresses)
            self.threads.append(threading.Thread(target=writer, args=(addresses[first:] + addresses[:first], session, self.outcomes,
                                                                      self.stop_flag, tag)))
        for _ in range(readers):
            self.threads.append(threading.Thread(target=reader, args=(addresses, self.outcomes, self.stop_flag)))
        if logins:
            email = f"login-{uuid.uuid4().hex[:8]}@example.com"
            request(addresses[0], "POST", "/v1/accounts", {"email": email, "password": PASSWORD, "firstName": "Login", "lastName": "Loop"})
            self.threads.append(threading.Thread(target=logger_in, args=(addresses, email, self.outcomes, self.stop_flag)))
        for thread in self.threads:
            thread.daemon = True
            thread.start()

    def finish(self, seconds=60):
        """Stops the load; a writer first gets its pin in flight acknowledged. Whether every thread ended."""
        self.stop_flag.set()
        for thread in self.threads:
            thread.join(seconds)
        return not any(thread.is_alive() for thread in self.threads)

    def first_answer(self, kind, after, statuses, limit=30):
        """The first answer of `kind` sent at or after `after` (a time.monotonic()) whose status is among
        `statuses`, once there is one; None if none came within `limit` seconds of `after`."""
        def found():
            answers = [a for a in self.outcomes.statuses(kind) if a[0] >= after and a[3] in statuses]
            return min(answers, key=lambda a: a[0] + a[1]) if answers else None
        return poll(found, max(0.0, after + limit - time.monotonic()), every=0.05)

    def seconds_until_a_write_is_acknowledged(self, after, limit=30):
        """How long after `after` the first write sent since then was acknowledged; None if none was within `limit`."""
        answer = self.first_answer("write", after, (200, 201), limit)
        return None if answer is None else answer[0] + answer[1] - after
