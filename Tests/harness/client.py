"""HTTP to the services as their clients speak it: JSON bodies, the gateway's `)]}'` prefix on session
answers (the apps strip it), and students signed up and logged in."""
import http.client
import json
import urllib.error
import urllib.request
import uuid

PASSWORD = "correct horse battery"
# Udacity's guard before a session answer's JSON: `)]}'` and a newline.
PREFIX = b")]}'\n"


def strip_prefix(body):
    """`body` (bytes or text) without the gateway's prefix, if it has one."""
    prefix = PREFIX if isinstance(body, bytes) else PREFIX.decode()
    return body[len(prefix):] if body.startswith(prefix) else body


def read_json(body):
    """The JSON of an answer's body, the prefix taken off first."""
    return json.loads(strip_prefix(body))


def address_of(address):
    """A (host, port) pair from a port on 127.0.0.1 or a (host, port) pair."""
    return address if isinstance(address, tuple) else ("127.0.0.1", address)


def request(address, method, path, body=None, headers=None, timeout=10):
    """One HTTP exchange on its own connection to `address` (a port on 127.0.0.1, or a (host, port) pair),
    `body` sent as JSON: (status, headers, body bytes). Raises OSError when nothing answers."""
    connection = http.client.HTTPConnection(*address_of(address), timeout=timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        all_headers = {"Content-Type": "application/json"} if payload else {}
        all_headers.update(headers or {})
        connection.request(method, path, payload, all_headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def get_json(url, timeout=1.0):
    """(status, JSON body) of a GET, or (None, None) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read() or b"null")
        except ValueError:
            return error.code, None
    except (OSError, ValueError):
        return None, None


def log_in(address, email, password=PASSWORD):
    """(status, the session answer or the body) of one login at the gateway at `address`."""
    status, _, body = request(address, "POST", "/v1/session", {"udacity": {"username": email, "password": password}})
    return status, read_json(body) if status == 200 else body


def sign_up_students(address, count):
    """Signs up and logs in `count` students at the gateway at `address`: their session ids."""
    sessions = []
    for index in range(count):
        email = f"student{index}-{uuid.uuid4().hex[:8]}@example.com"
        status, _, body = request(address, "POST", "/v1/accounts",
                                  {"email": email, "password": PASSWORD, "firstName": f"Student{index}", "lastName": "Tester"})
        assert status == 201, f"sign-up answered {status}: {body[:200]}"
        status, answer = log_in(address, email)
        assert status == 200, f"login answered {status}: {answer[:200]}"
        sessions.append(answer["session"]["id"])
    return sessions
