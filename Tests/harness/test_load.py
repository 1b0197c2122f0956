"""The load and the HTTP client against a stand-in gateway on 127.0.0.1: what they send, and what they record."""
import http.server
import json
import threading
import time
import unittest
import uuid

from harness.client import PREFIX, get_json, read_json, request, sign_up_students, strip_prefix
from harness.load import Load
from harness.processes import free_port


class StandInGateway(http.server.ThreadingHTTPServer):
    """Answers as the gateway does: sign-up, login (with the prefix), the list, and posts, each pin's first
    post refused with 503 and Retry-After and the next acknowledged, the same pin for the same key."""
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock, self.pins, self.refused = threading.Lock(), {}, set()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(200, b'{"results": []}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/accounts":
            return self.answer(201, b"{}")
        if self.path == "/v1/session":
            session = {"session": {"id": f"session-{body['udacity']['username']}"}, "account": {"key": "1"}}
            return self.answer(200, PREFIX + json.dumps(session).encode())
        key, gateway = self.headers["Idempotency-Key"], self.server
        with gateway.lock:
            if key not in gateway.refused:
                gateway.refused.add(key)
                return self.answer(503, b"{}", [("Retry-After", "1")])
            object_id = gateway.pins.setdefault(key, uuid.uuid4().hex[:10])
        self.answer(201, json.dumps({"objectId": object_id}).encode())


class ClientTests(unittest.TestCase):
    def test_the_prefix_is_taken_off_bytes_and_text_alike_and_only_when_there(self):
        self.assertEqual(strip_prefix(b")]}'\n{}"), b"{}")
        self.assertEqual(strip_prefix(")]}'\n[1]"), "[1]")
        self.assertEqual(strip_prefix(b"{}"), b"{}")
        self.assertEqual(read_json(b")]}'\n{\"a\": 1}"), {"a": 1})

    def test_students_are_signed_up_and_logged_in_with_their_sessions(self):
        gateway = StandInGateway()
        try:
            sessions = sign_up_students(gateway.port, 2)
            self.assertEqual(len(sessions), 2)
            self.assertTrue(all(session.startswith("session-student") for session in sessions), sessions)
            self.assertEqual(request(("127.0.0.1", gateway.port), "GET", "/v1/StudentLocation")[0], 200)
            self.assertEqual(get_json(f"http://127.0.0.1:{gateway.port}/v1/StudentLocation"), (200, {"results": []}))
        finally:
            gateway.shutdown()

    def test_nothing_listening_is_no_answer(self):
        self.assertEqual(get_json(f"http://127.0.0.1:{free_port()}/readyz"), (None, None))
        with self.assertRaises(OSError):
            request(free_port(), "GET", "/")


class LoadTests(unittest.TestCase):
    def test_writers_send_each_pin_again_under_its_key_until_it_is_acknowledged(self):
        gateway = StandInGateway()
        try:
            began = time.monotonic()
            load = Load([gateway.port], ["one", "two"], readers=1, logins=True, tag="test")
            self.assertIsNotNone(load.seconds_until_a_write_is_acknowledged(after=began, limit=5))
            self.assertTrue(load.finish(5))
        finally:
            gateway.shutdown()
        outcomes = load.outcomes
        self.assertEqual(set(outcomes.acknowledged), outcomes.sent)
        self.assertEqual({key: object_id for key, (object_id, _) in outcomes.acknowledged.items()}, gateway.pins)
        self.assertTrue(all(place == f"test {key[:8]}" for key, (_, place) in outcomes.acknowledged.items()))
        self.assertTrue(all(outcomes.sent_turn[key] < outcomes.acknowledged_turn[key] for key in outcomes.sent))
        writes = outcomes.statuses("write")
        self.assertEqual(sorted({a[3] for a in writes}), [201, 503])
        self.assertTrue(all(a[4] == "1" for a in writes if a[3] == 503))
        self.assertEqual({a[2] for a in outcomes.statuses()}, {"write", "read", "login", "fresh-session write"})
        self.assertIsNotNone(load.first_answer("write", began, (503,), limit=0))

    def test_answers_are_found_by_the_time_they_were_under_way(self):
        load = Load([free_port()], [], readers=0)
        load.outcomes.record(10.0, 1.0, "write", 201)
        load.outcomes.record(20.0, 1.0, "read", 200)
        self.assertEqual(len(load.outcomes.statuses(between=(10.5, 10.6))), 1)
        self.assertEqual(len(load.outcomes.statuses(between=(11.5, 19.5))), 0)
        self.assertEqual([a[2] for a in load.outcomes.statuses("read")], ["read"])
        self.assertTrue(load.finish(1))


if __name__ == "__main__":
    unittest.main()
