"""HTTPS at the gateway, as its clients meet it (scripts/https-test.sh starts the services and makes the CA).

curl and Python's ssl check the TLS versions, ciphers and ALPN, and that every contract route answers the same
over HTTP/2 as over HTTP/1.1; a SIGHUP serves a new certificate to new connections while an open live stream goes
on; a bad pair stops start-up with one line; a trusted proxy's X-Forwarded-Proto is believed and nobody else's;
and headless Chromium logs in over HTTPS with the test CA and holds live streams in eight tabs over HTTP/2.
"""
import hashlib
import json
import os
import queue
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # Tests/, for the harness
from harness.client import PASSWORD, read_json as wire_json  # noqa: E402
from harness.processes import free_port  # noqa: E402
from harness.waiting import poll  # noqa: E402

GATEWAY = os.environ["STACK_GATEWAY"]
TLS_GATEWAY = os.environ["STACK_GATEWAY_TLS"]
TLS_DIR = os.environ["STACK_TLS_DIR"]
CA = os.path.join(TLS_DIR, "ca.pem")
GATEWAY_BIN = os.environ["STACK_GATEWAY_BIN"]
OUTPUT = os.environ.get("TEST_OUTPUT", "test-output/https")
TLS_PORT = int(TLS_GATEWAY.rsplit(":", 1)[1])


def curl(base, path, method="GET", body=None, headers=(), http="1.1", cookies=None):
    """One exchange through curl: (HTTP version, status, headers as (lower-cased name, value) pairs, body bytes)."""
    with tempfile.TemporaryDirectory() as folder:
        head_file = os.path.join(folder, "head")
        command = ["curl", "-sS", "--cacert", CA, *(["--head"] if method == "HEAD" else ["-X", method]), "-D", head_file,
                   "-o", os.devnull if method == "HEAD" else "-", "-w", "\n%{http_version}", "--http2" if http == "2" else "--http1.1"]
        if cookies:
            command += ["-b", cookies, "-c", cookies]
        for header in headers:
            command += ["-H", header]
        if body is not None:
            command += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        result = subprocess.run(command + [base + path], input=None if body is None else json.dumps(body).encode(),
                                capture_output=True, timeout=20, check=True)
        answer, _, version = result.stdout.rpartition(b"\n")
        with open(head_file, "rb") as file:
            lines = file.read().decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:] if ":" in line]
    return version.decode(), status, [(name.lower(), value) for name, value in fields], answer


def field(fields, name):
    return [value for key, value in fields if key == name]


def tls_context(minimum=None, maximum=None, ciphers=None, alpn=None):
    context = ssl.create_default_context(cafile=CA)
    if minimum or maximum:
        # Debian's OpenSSL allows TLS 1.0 and 1.1 only at security level 0: the client must offer them to
        # show that the server refuses them.
        context.set_ciphers(ciphers or "DEFAULT@SECLEVEL=0")
        context.minimum_version = minimum or ssl.TLSVersion.MINIMUM_SUPPORTED
        context.maximum_version = maximum or ssl.TLSVersion.MAXIMUM_SUPPORTED
    elif ciphers:
        context.set_ciphers(ciphers)
    if alpn:
        context.set_alpn_protocols(alpn)
    return context


def handshake(context, port=TLS_PORT):
    """(TLS version, ALPN protocol, SHA-256 of the server's certificate) of one handshake with the gateway."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            certificate = hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()
            return tls.version(), tls.selected_alpn_protocol(), certificate


def certificate_digest(path):
    with open(path) as file:
        pem = file.read()
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def sign_up_and_log_in(base, email, first="Hedy", last="Lamarr"):
    version, status, _, answer = curl(base, "/v1/accounts", "POST",
                                      {"email": email, "password": PASSWORD, "firstName": first, "lastName": last})
    assert status == 201, (status, answer)
    _, status, _, answer = curl(base, "/v1/session", "POST", {"udacity": {"username": email, "password": PASSWORD}})
    assert status == 200, (status, answer)
    return wire_json(answer)["session"]["id"]


class LineReader:
    """The lines a stream sends, read on a thread so that a test can wait for one with a deadline."""

    def __init__(self, stream):
        self.lines = queue.Queue()
        self.thread = threading.Thread(target=self.pump, args=(stream,), daemon=True)
        self.thread.start()

    def pump(self, stream):
        try:
            for line in iter(stream.readline, b""):
                self.lines.put(line.decode(errors="replace"))
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def wait_for(self, text, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(f"the stream ended before it sent {text!r}")
            if text in line:
                return line
        raise AssertionError(f"the stream did not send {text!r} within {timeout} s")


def gateway_process(environment, log_name):
    """A gateway of this test's own on a free port, with the stack's database and locations-service."""
    port = free_port()
    env = dict(os.environ, LOCATIONS_URL=os.environ["STACK_LOCATIONS"], PORT=str(port), **environment)
    with open(os.path.join(OUTPUT, log_name), "wb") as log:
        process = subprocess.Popen([GATEWAY_BIN, "serve", "--host", "127.0.0.1"], env=env, stdout=log, stderr=subprocess.STDOUT)
    return process, port


def log_of(log_name):
    """What a gateway of `gateway_process` has logged so far."""
    with open(os.path.join(OUTPUT, log_name), errors="replace") as log:
        return log.read()


def wait_ready(url, context=None):
    def ready():
        try:
            with urllib.request.urlopen(url, timeout=1, context=context):
                return True
        except OSError:
            return False
    if not poll(ready, 15):
        raise AssertionError(f"not ready: {url}")


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # and an empty SETTINGS
H2_GOAWAY = 0x7


def h2_get(path, stream_id):
    """A HEADERS frame asking GET `path` on `stream_id`, with END_STREAM and END_HEADERS: each field an HPACK
    literal without indexing, so no table is needed."""
    fields = b"".join(b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value for name, value in (
        (b":method", b"GET"), (b":scheme", b"https"), (b":path", path.encode()), (b":authority", b"localhost")))
    return len(fields).to_bytes(3, "big") + b"\x01\x05" + stream_id.to_bytes(4, "big") + fields


def h2_frames(tls):
    """The frames an HTTP/2 connection sends, as (type, flags, stream id, payload), until it closes."""
    pending = b""
    while True:
        while len(pending) >= 9 and len(pending) >= 9 + int.from_bytes(pending[:3], "big"):
            length = int.from_bytes(pending[:3], "big")
            yield pending[3], pending[4], int.from_bytes(pending[5:9], "big") & 0x7FFFFFFF, pending[9:9 + length]
            pending = pending[9 + length:]
        chunk = tls.recv(65536)
        if not chunk:
            return
        pending += chunk


class HTTPSTests(unittest.TestCase):
    def test_tls_1_0_and_1_1_are_refused_and_1_2_and_1_3_served(self):
        for old in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            with self.assertRaises(ssl.SSLError, msg=f"{old.name} was accepted"):
                handshake(tls_context(minimum=old, maximum=old))
        self.assertEqual(handshake(tls_context(minimum=ssl.TLSVersion.TLSv1_2, maximum=ssl.TLSVersion.TLSv1_2))[0], "TLSv1.2")
        self.assertEqual(handshake(tls_context())[0], "TLSv1.3")
        for flag in ("--tlsv1.0", "--tlsv1.1"):
            result = subprocess.run(["curl", "-sS", "--cacert", CA, flag, "--tls-max", flag[5:], "--ciphers", "DEFAULT@SECLEVEL=0",
                                     TLS_GATEWAY + "/healthz"], capture_output=True, timeout=10)
            self.assertNotEqual(result.returncode, 0, f"curl {flag} got an answer")
        result = subprocess.run(["curl", "-sS", "--cacert", CA, "--tlsv1.2", "--tls-max", "1.2", TLS_GATEWAY + "/healthz"],
                                capture_output=True, timeout=10)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_tls_1_2_takes_only_forward_secret_aead_ciphers(self):
        tls12 = dict(minimum=ssl.TLSVersion.TLSv1_2, maximum=ssl.TLSVersion.TLSv1_2)
        for weak in ("ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "AES128-GCM-SHA256"):
            with self.assertRaises(ssl.SSLError, msg=f"{weak} was accepted"):
                handshake(tls_context(ciphers=weak, **tls12))
        for strong in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"):
            self.assertEqual(handshake(tls_context(ciphers=strong, **tls12))[0], "TLSv1.2", strong)

    def test_alpn_chooses_h2_and_http_1_1_as_asked(self):
        self.assertEqual(handshake(tls_context(alpn=["h2", "http/1.1"]))[1], "h2")
        self.assertEqual(handshake(tls_context(alpn=["http/1.1"]))[1], "http/1.1")
        self.assertEqual(curl(TLS_GATEWAY, "/healthz", http="2")[0], "2")
        self.assertEqual(curl(TLS_GATEWAY, "/healthz", http="1.1")[0], "1.1")

    def test_every_contract_route_answers_the_same_on_http2_as_on_http1_1(self):
        """The contract's routes in the order an app uses them, over plain HTTP/1.1, HTTPS/1.1 and HTTP/2."""
        transcripts = {}
        for label, base, http in (("plain", GATEWAY, "1.1"), ("https1", TLS_GATEWAY, "1.1"), ("h2", TLS_GATEWAY, "2")):
            email = f"contract-{label}@example.com"
            curl(base, "/v1/accounts", "POST", {"email": email, "password": PASSWORD, "firstName": "Ada", "lastName": "Lovelace"})
            steps = []

            def step(name, path, method="GET", body=None, headers=(), keep=None):
                version, status, fields, answer = curl(base, path, method, body, headers, http)
                self.assertEqual(version, http, f"{label} {name} went over HTTP/{version}")
                shape = answer[:5] == b")]}'\n", field(fields, "content-type"), field(fields, "x-content-type-options")
                parsed = wire_json(answer) if answer else None
                steps.append((name, status, shape, sorted(parsed) if isinstance(parsed, dict) else parsed if keep else type(parsed).__name__,
                              sorted(cookie.split("=")[0] for cookie in field(fields, "set-cookie"))))
                return parsed, fields

            login, _ = step("login", "/v1/session", "POST", {"udacity": {"username": email, "password": PASSWORD}})
            step("wrong password", "/api/session", "POST", {"udacity": {"username": email, "password": "wrong password"}}, keep=True)
            session, key = login["session"]["id"], login["account"]["key"]
            bearer = (f"Authorization: Bearer {session}",)
            user, _ = step("user", f"/v1/users/{key}")
            self.assertEqual((user["first_name"], user["user"]["last_name"]), ("Ada", "Lovelace"))
            pin = {"mapString": "Patiala, Punjab", "mediaURL": "https://udacity.com", "latitude": 30.3, "longitude": 76.4}
            posted, _ = step("post", "/v1/StudentLocation", "POST", pin, bearer)
            object_id = posted["objectId"]
            step("legacy post", "/parse/classes/StudentLocation", "POST", pin, bearer)
            step("put", f"/v1/StudentLocation/{object_id}", "PUT", dict(pin, mapString="Berlin, Germany"), bearer)
            mine, _ = step("list mine", f"/v1/StudentLocation?uniqueKey={key}&order=-updatedAt", keep=True)
            self.assertEqual([item["mapString"] for item in mine["results"]], ["Berlin, Germany", "Patiala, Punjab"])
            got, _ = step("get", f"/v1/StudentLocation/{object_id}")
            self.assertEqual(got["mapString"], "Berlin, Germany")
            step("latest", "/v1/StudentLocation?limit=100&order=-updatedAt")
            step("missing", "/1/classes/StudentLocation/ZZZZZZZZZZ", keep=True)
            step("delete", f"/v1/StudentLocation/{object_id}", "DELETE", headers=bearer, keep=True)
            step("not logged in", "/v1/StudentLocation", "POST", pin, keep=True)
            step("logout", "/v1/session", "DELETE", headers=bearer)
            step("after logout", "/v1/StudentLocation", "POST", pin, bearer, keep=True)
            # The list's bytes are the same at every door while nobody posts.
            lists = {curl(base, "/v1/StudentLocation", http=http)[3] for _ in range(2)}
            self.assertEqual(len(lists), 1)
            transcripts[label] = steps
        self.assertEqual(transcripts["https1"], transcripts["plain"])
        self.assertEqual(transcripts["h2"], transcripts["plain"])
        same = [curl(base, "/v1/StudentLocation", http=http)[3] for base, http in ((GATEWAY, "1.1"), (TLS_GATEWAY, "1.1"), (TLS_GATEWAY, "2"))]
        self.assertEqual(same[1], same[0])
        self.assertEqual(same[2], same[0])

    def test_the_list_over_http2_is_answered_before_the_router_as_over_http_1_1(self):
        def counted():
            _, _, _, metrics = curl(TLS_GATEWAY, "/metrics", http="2")
            line = next(line for line in metrics.decode().splitlines()
                        if line.startswith('onthemap_http_requests_total{status="2xx",door="prepared"}'))
            return float(line.split()[-1])

        # The first read after a change of the list goes through the router, which keeps the list for the
        # door once the gateway's live feed follows the log (within seconds of its start): then both reads
        # are answered before the router.
        def both_before_the_router():
            before = counted()
            answers = {http: curl(TLS_GATEWAY, "/v1/StudentLocation", http=http) for http in ("1.1", "2")}
            return counted() - before == 2 and answers
        answers = poll(both_before_the_router, 15, every=0.5)
        self.assertTrue(answers, "the list is not answered before the router over HTTP/1.1 and HTTP/2")
        self.assertEqual(answers["2"][0], "2")
        self.assertEqual(answers["2"][3], answers["1.1"][3])
        for name in ("content-type", "content-length", "etag", "cache-control", "strict-transport-security"):
            self.assertEqual(field(answers["2"][2], name), field(answers["1.1"][2], name), name)
        version, status, fields, body = curl(TLS_GATEWAY, "/v1/StudentLocation", http="2",
                                             headers=(f"If-None-Match: {field(answers['2'][2], 'etag')[0]}",))
        self.assertEqual((version, status, body), ("2", 304, b""))

    def test_head_is_answered_on_http2_as_on_http_1_1(self):
        """Without a body: HTTP/2 refuses DATA on a HEAD's stream, and a body there would end the connection."""
        for path in ("/v1/StudentLocation", "/healthz", "/", "/nowhere"):
            heads = {}
            for http in ("1.1", "2"):
                version, status, fields, _ = curl(TLS_GATEWAY, path, "HEAD", http=http)
                self.assertEqual(version, http)
                heads[http] = status, [(name, value) for name, value in fields if name not in ("date", "x-request-id")]
            self.assertEqual(heads["2"], heads["1.1"], path)

    def test_https_answers_carry_hsts_and_plain_ones_do_not(self):
        for path in ("/", "/v1/StudentLocation", "/v1/StudentLocation?limit=5", "/healthz", "/nowhere"):
            for http in ("1.1", "2"):
                _, _, fields, _ = curl(TLS_GATEWAY, path, http=http)
                self.assertEqual(field(fields, "strict-transport-security"), ["max-age=31536000"], f"{path} over HTTP/{http}")
                self.assertEqual(field(fields, "x-content-type-options"), ["nosniff"], f"{path} over HTTP/{http}")
                self.assertEqual(len(field(fields, "date")), 1, f"{path} over HTTP/{http}")
            _, _, fields, _ = curl(GATEWAY, path)
            self.assertEqual(field(fields, "strict-transport-security"), [], path)

    def test_the_session_cookie_is_secure_on_https_and_not_on_plain_http(self):
        for base, http, secure in ((TLS_GATEWAY, "1.1", True), (TLS_GATEWAY, "2", True), (GATEWAY, "1.1", False)):
            email = f"cookie-{http}-{secure}@example.com"
            curl(base, "/v1/accounts", "POST", {"email": email, "password": PASSWORD, "firstName": "C", "lastName": "S"})
            _, status, fields, _ = curl(base, "/v1/session", "POST", {"udacity": {"username": email, "password": PASSWORD}}, http=http)
            self.assertEqual(status, 200)
            cookies = field(fields, "set-cookie")
            self.assertEqual(len(cookies), 2)
            for cookie in cookies:
                attributes = [part.strip().lower() for part in cookie.split(";")]
                self.assertEqual("secure" in attributes, secure, cookie)
                self.assertIn("samesite=lax", attributes)

    def test_the_live_stream_works_on_http2(self):
        session = sign_up_and_log_in(TLS_GATEWAY, "stream-h2@example.com")
        stream = subprocess.Popen(["curl", "-sSN", "--http2", "--cacert", CA, TLS_GATEWAY + "/v1/StudentLocation/events"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            reader = LineReader(stream.stdout)
            reader.wait_for(": connected")
            _, status, _, answer = curl(TLS_GATEWAY, "/v1/StudentLocation", "POST", {
                "mapString": "Oslo, Norway", "mediaURL": "https://example.com/h2", "latitude": 59.9, "longitude": 10.7},
                headers=(f"Authorization: Bearer {session}",), http="2")
            self.assertEqual(status, 200)
            reader.wait_for(wire_json(answer)["objectId"])
        finally:
            stream.kill()
            stream.wait()

    def test_http2_connections_count_against_the_per_address_cap_with_http_1_1_ones(self):
        """MAX_CONNECTIONS_PER_CLIENT=3: one HTTP/1.1 and two HTTP/2 connections are served, a fourth of
        either kind is not; once one closes, another is served."""
        process, port = gateway_process({"TLS_CERT": os.path.join(TLS_DIR, "server.pem"), "TLS_KEY": os.path.join(TLS_DIR, "server.key"),
                                         "MAX_CONNECTIONS_PER_CLIENT": "3"}, "gateway-capped.log")

        def connect(protocol):
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            tls = tls_context(alpn=[protocol]).wrap_socket(raw, server_hostname="localhost")
            self.assertEqual(tls.selected_alpn_protocol(), protocol)
            return tls

        def served(tls):
            """Whether the connection answers: the server's SETTINGS on HTTP/2, an answer on HTTP/1.1."""
            try:
                if tls.selected_alpn_protocol() == "h2":
                    tls.sendall(H2_PREFACE)
                    frame = tls.recv(9)
                    return len(frame) == 9 and frame[3] == 0x4
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return tls.recv(12) == b"HTTP/1.1 200"
            except (ConnectionError, ssl.SSLError, socket.timeout):
                return False

        try:
            wait_ready(f"https://localhost:{port}/readyz", tls_context())
            time.sleep(0.5)  # the readiness checks' connections have closed
            held = [connect("http/1.1"), connect("h2"), connect("h2")]
            self.assertEqual([served(tls) for tls in held], [True, True, True])
            for protocol in ("h2", "http/1.1"):
                refused = connect(protocol)
                self.assertFalse(served(refused), f"a fourth connection ({protocol}) was served")
                refused.close()
            held.pop(1).close()

            def another_served():
                try:
                    again = connect("h2")
                except (ConnectionError, ssl.SSLError, socket.timeout):
                    return False
                try:
                    return served(again)
                finally:
                    again.close()
            self.assertTrue(poll(another_served, 5, every=0.1), "a connection was refused after one of the three closed")
            for tls in held:
                tls.close()
        finally:
            process.terminate()
            process.wait(10)

    def test_a_stopping_gateway_tells_its_http2_clients_goaway_and_ends_their_streams_first(self):
        """SIGTERM with two answered streams and a live stream open on one connection: a GOAWAY naming the last
        stream the connection took, with no error; the live stream's clean end; then the connection's end. The
        gateway exits at once, though this client never answers TLS's close_notify (Python's ssl does not)."""
        process, port = gateway_process({"TLS_CERT": os.path.join(TLS_DIR, "server.pem"), "TLS_KEY": os.path.join(TLS_DIR, "server.key")},
                                        "gateway-stopping.log")
        try:
            wait_ready(f"https://localhost:{port}/readyz", tls_context())
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            with tls_context(alpn=["h2"]).wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(H2_PREFACE + h2_get("/healthz", 1) + h2_get("/v1/StudentLocation", 3) + h2_get("/v1/StudentLocation/events", 5))
                frames = h2_frames(tls)
                ended, connected = set(), False
                for kind, flags, stream, payload in frames:
                    if kind in (0x0, 0x1) and flags & 0x1:  # DATA or HEADERS ending its stream
                        ended.add(stream)
                    connected = connected or (kind == 0x0 and stream == 5 and b": connected" in payload)
                    if ended == {1, 3} and connected:
                        break
                started = time.monotonic()
                process.send_signal(signal.SIGTERM)
                rest = list(frames)
                closed = time.monotonic() - started
                goaways = [payload for kind, _, _, payload in rest if kind == H2_GOAWAY]
                self.assertEqual(len(goaways), 1, rest)
                self.assertEqual((int.from_bytes(goaways[0][:4], "big"), int.from_bytes(goaways[0][4:8], "big")), (5, 0))
                self.assertTrue(any(stream == 5 and kind in (0x0, 0x1) and flags & 0x1 for kind, flags, stream, _ in rest),
                                f"the live stream was not ended before the connection: {rest}")
            self.assertEqual(process.wait(timeout=10), 0)
            self.assertLess(closed, 1, "the connection was closed late")
            self.assertLess(time.monotonic() - started, 3, f"the gateway exited late (the connection closed after {closed:.2f} s)")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

    def test_sighup_serves_a_new_certificate_to_new_connections_while_an_open_stream_goes_on(self):
        folder = tempfile.mkdtemp(prefix="onthemap-reload.")
        try:
            certificate, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
            shutil.copy(os.path.join(TLS_DIR, "server.pem"), certificate)
            shutil.copy(os.path.join(TLS_DIR, "server.key"), key)
            process, port = gateway_process({"TLS_CERT": certificate, "TLS_KEY": key, "LOG_LEVEL": "notice"}, "gateway-reload.log")
            try:
                base = f"https://localhost:{port}"
                wait_ready(base + "/readyz", tls_context())
                first = certificate_digest(os.path.join(TLS_DIR, "server.pem"))
                second = certificate_digest(os.path.join(TLS_DIR, "next.pem"))
                self.assertEqual(handshake(tls_context(), port)[2], first)
                session = sign_up_and_log_in(base, "reload@example.com")

                # A live stream on a connection made before the reload.
                raw = socket.create_connection(("127.0.0.1", port), timeout=10)
                stream = tls_context(alpn=["http/1.1"]).wrap_socket(raw, server_hostname="localhost")
                self.assertEqual(hashlib.sha256(stream.getpeercert(binary_form=True)).hexdigest(), first)
                stream.sendall(b"GET /v1/StudentLocation/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
                reader = LineReader(stream.makefile("rb"))
                reader.wait_for(": connected")

                shutil.copy(os.path.join(TLS_DIR, "next.pem"), certificate)
                shutil.copy(os.path.join(TLS_DIR, "next.key"), key)
                process.send_signal(signal.SIGHUP)
                self.assertTrue(poll(lambda: handshake(tls_context(), port)[2] == second, 5, every=0.05),
                                "new connections still get the old certificate")
                self.assertEqual(handshake(tls_context(alpn=["h2"]), port)[2], second)

                _, status, _, answer = curl(base, "/v1/StudentLocation", "POST", {
                    "mapString": "Lima, Peru", "mediaURL": "https://example.com/reload", "latitude": -12.0, "longitude": -77.0},
                    headers=(f"Authorization: Bearer {session}",))
                self.assertEqual(status, 200)
                reader.wait_for(wire_json(answer)["objectId"])

                # A pair that does not go together is not taken: the one in use stays, and the gateway goes on.
                shutil.copy(os.path.join(TLS_DIR, "server.key"), key)
                process.send_signal(signal.SIGHUP)
                poll(lambda: "TLS certificate not reloaded" in log_of("gateway-reload.log"), 5)
                self.assertIsNone(process.poll(), "the gateway stopped on a bad pair")
                self.assertEqual(handshake(tls_context(), port)[2], second)
                stream.close()
            finally:
                process.terminate()
                process.wait(timeout=30)
            text = log_of("gateway-reload.log")
            self.assertIn("TLS certificate reloaded", text)
            self.assertIn("TLS certificate not reloaded", text)
        finally:
            shutil.rmtree(folder)

    def test_a_missing_unreadable_or_mismatched_pair_stops_start_up_with_one_line(self):
        server, key, other_key = (os.path.join(TLS_DIR, name) for name in ("server.pem", "server.key", "next.key"))
        cases = [
            ({"TLS_CERT": "/nonexistent/cert.pem", "TLS_KEY": key}, "TLS_CERT names a file that does not exist"),
            ({"TLS_CERT": server, "TLS_KEY": TLS_DIR}, "TLS_KEY names a folder"),
            ({"TLS_CERT": key, "TLS_KEY": key}, "TLS_CERT (" + key + ") holds no PEM certificate"),
            ({"TLS_CERT": server, "TLS_KEY": server}, "holds no PEM private key"),
            ({"TLS_CERT": server, "TLS_KEY": other_key}, "is not the private key of the first certificate in TLS_CERT"),
            ({"TLS_CERT": server}, "TLS_CERT and TLS_KEY go together"),
        ]
        for settings, expected in cases:
            env = dict(os.environ, LOCATIONS_URL=os.environ["STACK_LOCATIONS"], PORT="9", **settings)
            result = subprocess.run([GATEWAY_BIN, "serve", "--host", "127.0.0.1"], env=env, capture_output=True, timeout=30)
            lines = result.stderr.decode().strip().splitlines()
            self.assertEqual(result.returncode, 2, (settings, lines))
            self.assertEqual(len(lines), 1, lines)
            self.assertIn(expected, lines[0])
            self.assertTrue(lines[0].startswith("auth-gateway: "), lines[0])

    def test_the_scheme_is_taken_from_a_trusted_proxy_only(self):
        process, port = gateway_process({"TRUSTED_PROXIES": "127.0.0.1"}, "gateway-proxied.log")
        try:
            proxied = f"http://127.0.0.1:{port}"
            wait_ready(proxied + "/readyz")
            email = "proxied@example.com"
            curl(proxied, "/v1/accounts", "POST", {"email": email, "password": PASSWORD, "firstName": "P", "lastName": "X"})
            login = {"udacity": {"username": email, "password": PASSWORD}}
            for base, proto, https in ((proxied, "https", True), (proxied, "http", False), (proxied, None, False), (GATEWAY, "https", False)):
                headers = (f"X-Forwarded-Proto: {proto}",) if proto else ()
                _, status, fields, _ = curl(base, "/v1/session", "POST", login, headers)
                self.assertEqual(status, 200)
                for cookie in field(fields, "set-cookie"):
                    self.assertEqual("secure" in [part.strip().lower() for part in cookie.split(";")], https, (base, proto, cookie))
                # The page through the router, and the list before it.
                for path in ("/", "/v1/StudentLocation"):
                    _, _, fields, _ = curl(base, path, headers=headers)
                    self.assertEqual(bool(field(fields, "strict-transport-security")), https, (base, proto, path))
        finally:
            process.terminate()
            process.wait(timeout=30)

    def test_chromium_logs_in_over_https_and_holds_live_streams_in_eight_tabs_over_http2(self):
        """One browser, eight tabs of the page, each with its live stream: over HTTP/1.1 a browser opens at most six
        connections to a site, so the seventh tab's stream would wait; over HTTP/2 they share one connection."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.support.ui import WebDriverWait

        email = "tabs@example.com"
        session = sign_up_and_log_in(TLS_GATEWAY, email, "Tab", "Keeper")
        home = tempfile.mkdtemp(prefix="onthemap-browser-home.")
        driver = None
        try:
            # Chromium trusts the test CA through its own certificate store, in a home of its own.
            nssdb = os.path.join(home, ".pki", "nssdb")
            os.makedirs(nssdb)
            subprocess.run(["certutil", "-d", f"sql:{nssdb}", "-N", "--empty-password"], check=True, capture_output=True)
            subprocess.run(["certutil", "-d", f"sql:{nssdb}", "-A", "-t", "C,,", "-n", "On The Map test CA", "-i", CA],
                           check=True, capture_output=True)
            options = webdriver.ChromeOptions()
            for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"]:
                options.add_argument(argument)
            options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"), env=dict(os.environ, HOME=home))
            driver = webdriver.Chrome(options=options, service=service)
            wait = lambda condition, message, timeout=15: WebDriverWait(driver, timeout, poll_frequency=0.05).until(
                lambda _: condition(), message)
            visible = lambda element_id: any(e.is_displayed() for e in driver.find_elements(By.ID, element_id))

            driver.get(TLS_GATEWAY + "/")
            wait(lambda: visible("login-view"), "the login did not appear over HTTPS")
            driver.find_element(By.ID, "login-email").send_keys(email)
            driver.find_element(By.ID, "login-password").send_keys(PASSWORD + Keys.ENTER)
            wait(lambda: visible("app-view"), "the map and list did not appear after login")
            cookie = driver.get_cookie("onthemap_session")
            self.assertIsNotNone(cookie)
            self.assertTrue(cookie["secure"], cookie)
            self.assertTrue(cookie["httpOnly"], cookie)

            tabs = [driver.current_window_handle]
            for _ in range(7):
                driver.switch_to.new_window("tab")
                driver.get(TLS_GATEWAY + "/")
                tabs.append(driver.current_window_handle)
            for tab in tabs:
                driver.switch_to.window(tab)
                wait(lambda: visible("app-view"), "a tab did not open logged in")
                wait(lambda: driver.find_element(By.ID, "live-status").text == "Live", "a tab's live stream did not open")
                protocol = driver.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol")
                self.assertEqual(protocol, "h2")
            violations = driver.get_log("browser")
            self.assertEqual([entry["message"] for entry in violations if "Content Security Policy" in entry["message"]], [])

            with urllib.request.urlopen(urllib.request.Request(TLS_GATEWAY + "/metrics"), context=tls_context(), timeout=5) as response:
                metrics = response.read().decode()
            streams = [float(line.split()[1]) for line in metrics.splitlines() if line.startswith("onthemap_live_streams ")]
            self.assertEqual(streams, [8.0], "the gateway does not hold one live stream per tab")

            place = "Reykjavik, Iceland"
            _, status, _, _ = curl(TLS_GATEWAY, "/v1/StudentLocation", "POST", {
                "mapString": place, "mediaURL": "https://example.com/tabs", "latitude": 64.1, "longitude": -21.9},
                headers=(f"Authorization: Bearer {session}",), http="2")
            self.assertEqual(status, 200)
            for tab in tabs:
                driver.switch_to.window(tab)
                rows = lambda: [row.get_attribute("textContent") for row in driver.find_elements(By.CSS_SELECTOR, "#pin-list .row-place")]
                wait(lambda: place in rows(), f"a tab did not show the new pin live (rows: {rows()[:3]})", timeout=5)
            driver.switch_to.window(tabs[-1])
            driver.save_screenshot(os.path.join(OUTPUT, "eight-tabs.png"))
        finally:
            if driver:
                driver.quit()
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
