#!/usr/bin/env python3
"""A scripted browser for sign-in tests, given as $BROWSER to a command that opens one.

  browse.py URL --username NAME --password PASSWORD [--deny]

Goes to URL and follows redirects, keeping cookies as a browser does (by
host, not port). On the first page with a login form (the test provider's:
csrfmiddlewaretoken, username, password and next) it fills in the username
and password and posts the form to its action, then follows redirects again
to the page it ends on: the command line's loopback address included, which
it really requests.

--deny: the provider's answer on its way back to the gateway's callback
becomes error=access_denied with the same state, as a provider answers when
the student declines.

Each address visited and its status go to stderr, the last page to stdout.
Exits 0 when the last answer is 200, else 1.
"""

import argparse
import sys
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import requests

MAX_REDIRECTS = 12


class LoginForm(HTMLParser):
    """The first form holding a password field: its action and its inputs."""

    def __init__(self):
        super().__init__()
        self.action = None
        self.fields = {}
        self.has_password = False
        self.done = False
        self._in_form = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.done:
            return
        if tag == "form":
            self._in_form = True
            self.action = attrs.get("action") or ""
            self.fields = {}
            self.has_password = False
        elif tag == "input" and self._in_form and attrs.get("name"):
            self.fields[attrs["name"]] = attrs.get("value") or ""
            self.has_password |= attrs.get("type") == "password"

    def handle_endtag(self, tag):
        if tag == "form" and self._in_form:
            self._in_form = False
            self.done = self.has_password


def login_form(html):
    parser = LoginForm()
    parser.feed(html)
    return (parser.action, parser.fields) if parser.done else None


def denied(url):
    """The gateway's callback URL as the provider sends it when the student says no."""
    parts = urlsplit(url)
    state = parse_qs(parts.query).get("state", [""])[0]
    query = urlencode(
        {"error": "access_denied", "error_description": "The student declined", "state": state}
    )
    return urlunsplit(parts._replace(query=query))


def follow(session, method, url, deny, data=None):
    """Requests url, then every redirect's target, until an answer that is not a redirect."""
    for _ in range(MAX_REDIRECTS):
        response = session.request(method, url, data=data, allow_redirects=False, timeout=30)
        sys.stderr.write("browse.py: %s %s -> %d\n" % (method, url, response.status_code))
        location = response.headers.get("Location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            return url, response
        url = urljoin(url, location)
        if deny and urlsplit(url).path.endswith("/v1/auth/oidc/callback"):
            url = denied(url)
        if response.status_code not in (307, 308):
            method, data = "GET", None
    raise SystemExit("browse.py: more than %d redirects" % MAX_REDIRECTS)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--username", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--deny", action="store_true", help="decline at the provider")
    args = parser.parse_args(argv)

    session = requests.Session()
    session.headers["User-Agent"] = "browse.py (a scripted browser for tests)"
    url, response = follow(session, "GET", args.url, args.deny)
    form = login_form(response.text) if response.status_code == 200 else None
    if form:
        action, fields = form
        fields.update(username=args.username, password=args.password)
        url, response = follow(session, "POST", urljoin(url, action), args.deny, data=fields)
        if login_form(response.text):
            sys.stderr.write("browse.py: the provider showed its login form again (wrong password?)\n")
            return 1
    sys.stdout.write(response.text)
    return 0 if response.status_code == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
