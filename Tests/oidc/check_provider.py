#!/usr/bin/env python3
"""Self-check of the test OpenID Connect provider (provider.py).

Starts `provider.py serve` in a temporary directory and, as a browser would
(a requests.Session keeping cookies), runs the authorization code flow with
PKCE S256, state and nonce through the login page; exchanges codes with
client_secret_basic and client_secret_post; verifies ID tokens with PyJWT
against the JWKS; checks that a replayed code, a wrong code_verifier and a
wrong client secret are refused; rotates the keys with `provider.py
rotate-keys` while the server runs; and stops the server with SIGTERM.
The redirect URI is never connected to: its code and state are read from the
Location header. Exits non-zero on any failure.

  python3 Tests/oidc/check_provider.py [--keep] [-v]
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDER = os.path.join(HERE, "provider.py")
sys.path.insert(0, os.path.dirname(HERE))  # Tests/, for the harness
from harness.waiting import poll  # noqa: E402

CLIENT_ID = "on-the-map-gateway"
# Unreserved characters only: django-oidc-provider neither form-urldecodes the
# Basic credentials (RFC 6749 2.3.1) nor allows a ":" in them.
CLIENT_SECRET = "gateway-test-secret_0123456789.~"
REDIRECT_URI = "http://127.0.0.1:9/auth/oidc/callback"  # port 9: never connected to
OTHER_REDIRECT_URI = "http://localhost:9/other/callback"
USERS = {
    "alice": ("pass:word 1", "Alice", "Liddell", "alice@example.test"),
    "bob": ("hunter2", "Bob", "Ross", "bob@example.test"),
}
# Bob is in no group: his ID token has no groups claim.
GROUPS = {"alice": ["teachers", "class:2027"]}

results = {"passed": 0, "failed": 0}
notes = []  # facts worth reporting, printed at the end
VERBOSE = False


class CheckFailed(Exception):
    pass


def check(condition, what, detail=""):
    if condition:
        results["passed"] += 1
        print("ok    %s" % what)
    else:
        results["failed"] += 1
        print("FAIL  %s%s" % (what, (": %s" % detail) if detail else ""))
        raise CheckFailed(what)


def note(text):
    notes.append(text)
    if VERBOSE:
        print("note  %s" % text)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair():
    verifier = b64url(secrets.token_bytes(32))
    challenge = b64url(hashlib.sha256(verifier.encode("ascii")).digest())
    return verifier, challenge


class Provider:
    def __init__(self, directory):
        self.directory = directory
        self.port_file = os.path.join(directory, "port")
        self.stderr_path = os.path.join(directory, "provider.stderr")
        self.process = None
        self.port = None
        self.ready_seconds = None

    def start(self):
        args = [
            sys.executable, PROVIDER, "serve",
            "--dir", self.directory,
            "--port-file", self.port_file,
            "--client-id", CLIENT_ID,
            "--client-secret", CLIENT_SECRET,
            "--redirect-uri", REDIRECT_URI,
            "--redirect-uri", OTHER_REDIRECT_URI,
        ]
        for name, (password, given, family, email) in USERS.items():
            args += ["--user", "%s:%s:%s:%s:%s" % (name, password, given, family, email)]
        for name, groups in GROUPS.items():
            args += [argument for group in groups for argument in ("--group", "%s:%s" % (name, group))]
        self.stderr = open(self.stderr_path, "w")
        started = time.monotonic()
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self.stderr, stdin=subprocess.DEVNULL, text=True
        )
        poll(lambda: os.path.exists(self.port_file) or self.process.poll() is not None, 60, every=0.02)
        if not os.path.exists(self.port_file):
            if self.process.poll() is not None:
                raise CheckFailed("serve exited with %s before it was ready; stderr:\n%s"
                                  % (self.process.returncode, self.stderr_text()))
            raise CheckFailed("serve not ready after 60 s")
        self.ready_seconds = time.monotonic() - started
        with open(self.port_file) as f:
            self.port = int(f.read().strip())
        self.stdout_line = self.process.stdout.readline().strip()

    def stderr_text(self):
        self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


class Flow:
    """One browser's authorization code flow against the provider."""

    def __init__(self, discovery, browser=None):
        self.discovery = discovery
        self.browser = browser or requests.Session()

    def authorize(self, username, password=None, redirect_uri=REDIRECT_URI,
                  expect_login_page=True, wrong_password=False):
        self.verifier, challenge = pkce_pair()
        self.state = secrets.token_urlsafe(16)
        self.nonce = secrets.token_urlsafe(16)
        self.redirect_uri = redirect_uri
        params = {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": redirect_uri,
            "scope": "openid profile email",
            "state": self.state,
            "nonce": self.nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        response = self.browser.get(
            self.discovery["authorization_endpoint"], params=params, allow_redirects=False
        )
        check(response.status_code == 302, "authorize answers 302", response.status_code)
        location = urljoin(response.url, response.headers["Location"])
        if expect_login_page:
            check(urlsplit(location).path == "/accounts/login/",
                  "unauthenticated authorize redirects to /accounts/login/", location)
            page = self.browser.get(location, allow_redirects=False)
            check(page.status_code == 200, "login page answers 200", page.status_code)
            html = page.text
            check('name="username"' in html and 'name="password"' in html
                  and 'id="login-submit"' in html,
                  "login page has username, password and #login-submit")
            token_match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
            next_match = re.search(r'name="next" value="([^"]*)"', html)
            check(token_match is not None and next_match is not None,
                  "login page carries the csrf token and next")
            action = re.search(r'<form[^>]*action="([^"]+)"', html).group(1)
            next_value = next_match.group(1).replace("&amp;", "&")
            posted = self.browser.post(
                urljoin(location, action),
                data={
                    "csrfmiddlewaretoken": token_match.group(1),
                    "username": username,
                    "password": password,
                    "next": next_value,
                },
                allow_redirects=False,
            )
            if wrong_password:
                check(posted.status_code == 200 and 'id="login-error"' in posted.text
                      and "Location" not in posted.headers,
                      "a wrong password gets the login page again (200), no redirect",
                      posted.status_code)
                return None
            check(posted.status_code == 302, "login post answers 302",
                  "%s %s" % (posted.status_code, posted.text[:300]))
            back = urljoin(posted.url, posted.headers["Location"])
            check(urlsplit(back).path == "/openid/authorize",
                  "login redirects back to the authorize endpoint", back)
            response = self.browser.get(back, allow_redirects=False)
            check(response.status_code == 302, "authorize after login answers 302",
                  response.status_code)
            location = response.headers["Location"]
        # The redirect to the client: read, never followed.
        split = urlsplit(location)
        check("%s://%s%s" % (split.scheme, split.netloc, split.path) == redirect_uri,
              "authorize redirects to the registered redirect URI", location)
        query = parse_qs(split.query)
        check("code" in query and query.get("state") == [self.state],
              "redirect carries a code and the same state", location)
        self.code = query["code"][0]
        return self.code

    def exchange(self, auth="basic", code=None, verifier=None, secret=CLIENT_SECRET):
        data = {
            "grant_type": "authorization_code",
            "code": code or self.code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": self.verifier if verifier is None else verifier,
        }
        if verifier is False:
            del data["code_verifier"]
        kwargs = {}
        if auth == "basic":
            kwargs["auth"] = (CLIENT_ID, secret)
        else:
            data["client_id"] = CLIENT_ID
            data["client_secret"] = secret
        # A back channel: the client's own connection, not the browser's.
        return requests.post(self.discovery["token_endpoint"], data=data, timeout=30, **kwargs)


def jwks_keys(discovery):
    response = requests.get(discovery["jwks_uri"], timeout=10)
    check(response.status_code == 200, "JWKS answers 200", response.status_code)
    return response.json()["keys"]


def verify_id_token(id_token, discovery, nonce, access_token, expected_user):
    header = jwt.get_unverified_header(id_token)
    check(header.get("alg") == "RS256", "ID token header alg is RS256", header)
    keys = jwks_keys(discovery)
    matching = [key for key in keys if key["kid"] == header.get("kid")]
    check(len(matching) == 1, "ID token kid is in the JWKS",
          "%s not in %s" % (header.get("kid"), [key["kid"] for key in keys]))
    public_key = jwt.PyJWK(matching[0]).key
    claims = jwt.decode(
        id_token,
        public_key,
        algorithms=["RS256"],
        audience=CLIENT_ID,
        issuer=discovery["issuer"],
        options={"require": ["iss", "sub", "aud", "exp", "iat", "nonce"]},
    )
    check(True, "ID token verifies (RS256 signature, iss, aud, exp)")
    check(claims["nonce"] == nonce, "ID token echoes the nonce", claims.get("nonce"))
    password, given, family, email = USERS[expected_user]
    check(claims.get("given_name") == given and claims.get("family_name") == family
          and claims.get("email") == email,
          "ID token carries given_name, family_name, email",
          json.dumps(claims))
    check(claims.get("name") == "%s %s" % (given, family), "ID token carries name",
          claims.get("name"))
    groups = sorted(GROUPS[expected_user]) if expected_user in GROUPS else None
    check(claims.get("groups") == groups, "ID token carries the user's groups, or none",
          claims.get("groups"))
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    check(claims.get("at_hash") == b64url(digest[:16]), "ID token at_hash matches the access token")
    return header, claims


def run(directory):
    provider = Provider(directory)
    provider.start()
    try:
        port = provider.port
        issuer = "http://127.0.0.1:%d/openid" % port
        note("serve ready (port file written) %.2f s after start" % provider.ready_seconds)
        check(provider.stdout_line == "ready %s" % issuer, "serve prints 'ready ISSUER' on stdout",
              provider.stdout_line)

        # Discovery.
        response = requests.get(issuer + "/.well-known/openid-configuration", timeout=10)
        check(response.status_code == 200, "discovery answers 200", response.status_code)
        discovery = response.json()
        check(discovery["issuer"] == issuer, "issuer is http://127.0.0.1:PORT/openid",
              discovery["issuer"])
        for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
            check(discovery[name].startswith(issuer + "/"), "%s under the issuer" % name,
                  discovery[name])
        check("S256" in discovery.get("code_challenge_methods_supported", []),
              "discovery lists PKCE S256")
        note("discovery: %s" % json.dumps(discovery, indent=1))

        # 1. A full login, client_secret_basic.
        alice = Flow(discovery)
        alice.authorize("alice", USERS["alice"][0])
        response = alice.exchange(auth="basic")
        check(response.status_code == 200, "code exchange with client_secret_basic + verifier",
              "%s %s" % (response.status_code, response.text))
        check(response.headers.get("Cache-Control") == "no-store", "token response is no-store")
        tokens = response.json()
        header, claims = verify_id_token(
            tokens["id_token"], discovery, alice.nonce, tokens["access_token"], "alice")
        first_kid = header["kid"]
        note("token response keys: %s" % sorted(tokens))
        note("ID token header: %s" % json.dumps(header))
        note("ID token claims: %s" % json.dumps(claims, indent=1, sort_keys=True))

        info = requests.get(discovery["userinfo_endpoint"],
                            headers={"Authorization": "Bearer " + tokens["access_token"]},
                            timeout=10)
        check(info.status_code == 200 and info.json().get("email") == USERS["alice"][3]
              and info.json().get("sub") == claims["sub"],
              "userinfo answers the same sub and the email", info.text)
        note("userinfo: %s" % info.text)

        # 2. The same code again.
        replay = alice.exchange(auth="basic")
        check(replay.status_code == 400 and replay.json().get("error") == "invalid_grant",
              "a replayed code is refused (400 invalid_grant)",
              "%s %s" % (replay.status_code, replay.text))
        note("replayed code: %s %s" % (replay.status_code, replay.text))
        still = requests.get(discovery["userinfo_endpoint"],
                             headers={"Authorization": "Bearer " + tokens["access_token"]},
                             timeout=10)
        note("access token from the first exchange after the replay: userinfo %s"
             " (tokens are not revoked on a replay)" % still.status_code)

        # 3. Same browser again: already signed in, no login page (single sign-on).
        alice.authorize("alice", expect_login_page=False)
        check(alice.exchange(auth="basic").status_code == 200,
              "signed-in browser gets a code without the login page")

        # 4. client_secret_post, second redirect URI, another user.
        bob = Flow(discovery)
        bob.authorize("bob", USERS["bob"][0], redirect_uri=OTHER_REDIRECT_URI)
        response = bob.exchange(auth="post")
        check(response.status_code == 200, "code exchange with client_secret_post + verifier",
              "%s %s" % (response.status_code, response.text))
        verify_id_token(response.json()["id_token"], discovery, bob.nonce,
                        response.json()["access_token"], "bob")

        # 5. Wrong code_verifier, missing verifier, wrong secret: all refused,
        #    and the code is still good afterwards (nothing is consumed on failure).
        carol = Flow(discovery)
        carol.authorize("alice", USERS["alice"][0])
        wrong = carol.exchange(verifier=pkce_pair()[0])
        check(wrong.status_code == 400 and wrong.json().get("error") == "invalid_grant",
              "a wrong code_verifier is refused (400 invalid_grant)",
              "%s %s" % (wrong.status_code, wrong.text))
        note("wrong code_verifier: %s %s" % (wrong.status_code, wrong.text))
        missing = carol.exchange(verifier=False)
        check(missing.status_code == 400 and missing.json().get("error") == "invalid_grant",
              "a missing code_verifier is refused (400 invalid_grant)",
              "%s %s" % (missing.status_code, missing.text))
        bad_secret = carol.exchange(secret="not-the-secret")
        check(bad_secret.status_code == 400 and bad_secret.json().get("error") == "invalid_client",
              "a wrong client secret is refused (400 invalid_client)",
              "%s %s" % (bad_secret.status_code, bad_secret.text))
        note("wrong client secret: %s %s" % (bad_secret.status_code, bad_secret.text))
        after = carol.exchange()
        note("the right verifier after those failures: %s (a failed attempt does not"
             " consume the code)" % after.status_code)

        # 6. Wrong password: the login page again, no redirect.
        Flow(discovery).authorize("alice", "wrong password", wrong_password=True)

        # 7. One code exchanged by several clients at once: exactly one wins.
        dave = Flow(discovery)
        dave.authorize("bob", USERS["bob"][0])
        barrier = threading.Barrier(4)
        statuses = []

        def racer():
            barrier.wait()
            statuses.append(dave.exchange().status_code)

        racers = [threading.Thread(target=racer) for _ in range(4)]
        for thread in racers:
            thread.start()
        for thread in racers:
            thread.join()
        check(sorted(statuses) == [200, 400, 400, 400],
              "4 concurrent exchanges of one code: one 200, three 400", statuses)

        # 8. Key rotation while serving.
        rotated = subprocess.run(
            [sys.executable, PROVIDER, "rotate-keys", "--dir", directory],
            capture_output=True, text=True, timeout=60,
        )
        check(rotated.returncode == 0, "rotate-keys exits 0", rotated.stderr)
        new_kid = rotated.stdout.strip()
        keys = jwks_keys(discovery)
        check([key["kid"] for key in keys] == [new_kid] and new_kid != first_kid,
              "JWKS lists only the new kid after rotate-keys",
              "%s (old %s, new %s)" % ([key["kid"] for key in keys], first_kid, new_kid))
        erin = Flow(discovery)
        erin.authorize("alice", USERS["alice"][0])
        response = erin.exchange()
        check(response.status_code == 200, "code exchange after rotation", response.text)
        header, _ = verify_id_token(response.json()["id_token"], discovery, erin.nonce,
                                    response.json()["access_token"], "alice")
        check(header["kid"] == new_kid, "a new ID token is signed with the new kid", header)
        note("rotate-keys: kid %s -> %s, picked up without restart" % (first_kid, new_kid))

        # 9. A clean stop.
        started = time.monotonic()
        code = provider.stop()
        check(code == 0, "serve exits 0 on SIGTERM", code)
        check(not os.path.exists(provider.port_file), "serve removes the port file on exit")
        note("SIGTERM to exit: %.2f s" % (time.monotonic() - started))
    except CheckFailed:
        print("--- provider stderr (last 40 lines) ---")
        print("\n".join(provider.stderr_text().splitlines()[-40:]))
        raise
    finally:
        provider.stop()


def main():
    global VERBOSE
    parser = argparse.ArgumentParser(description="self-check of provider.py")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the notes as they come")
    args = parser.parse_args()
    VERBOSE = args.verbose
    directory = tempfile.mkdtemp(prefix="oidc-provider-check-")
    try:
        run(directory)
    except CheckFailed:
        pass
    except Exception as error:  # an unexpected error is a failure too
        results["failed"] += 1
        print("FAIL  unexpected %s: %s" % (type(error).__name__, error))
    finally:
        if args.keep:
            print("kept %s" % directory)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    if not VERBOSE:
        for text in notes:
            print("note  %s" % text)
    print("check_provider: %d passed, %d failed" % (results["passed"], results["failed"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
