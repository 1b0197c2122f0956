#!/usr/bin/env python3
"""A real OpenID Connect provider for tests, on loopback only.

django-oidc-provider on Django, served by waitress (threaded), with a
sqlite database in a directory of the caller's choosing.

  provider.py serve --dir DIR --port-file FILE [--host 127.0.0.1] [--port 0]
      --client-id ID --client-secret SECRET --redirect-uri URI [--redirect-uri URI ...]
      --user USERNAME:PASSWORD:GIVEN_NAME:FAMILY_NAME:EMAIL [--user ...]
      [--group USERNAME:GROUP ...] [--verbose]

      Migrates DIR/idp.sqlite3, makes one RSA signing key if there is none,
      creates or updates the confidential client (response type `code`,
      RS256 ID tokens, no consent screen) and the users, binds HOST:PORT
      (0: the system picks), and once the discovery document answers writes
      the port to FILE (through a temporary file and a rename). The issuer is
      http://HOST:PORT/openid; the login page is /accounts/login/. One line
      per request goes to stderr; stdout gets one line, "ready ISSUER".
      SIGTERM or SIGINT stops it (exit 0) and removes FILE.
      In --user the password may contain ':' (the other four fields may not).
      --group puts a user in a group (the group may contain ':'); the ID
      token of a user in any group carries a `groups` claim, the sorted list
      of their groups' names, with the `profile` scope. A user named in no
      --group is in none (groups from an earlier run on DIR are replaced).

  provider.py rotate-keys --dir DIR

      With serve running on DIR or not: in one transaction, adds a new RSA key
      and deletes every other one, so the JWKS lists only the new key and the
      next ID tokens are signed with it. Prints the new kid.
"""

import argparse
import ipaddress
import json
import os
import secrets
import signal
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DB_NAME = "idp.sqlite3"


def log(message):
    sys.stderr.write("oidc-provider: %s\n" % message)
    sys.stderr.flush()


# --- Django ------------------------------------------------------------------


def secret_key(directory):
    path = os.path.join(directory, "secret_key")
    try:
        with open(path) as f:
            key = f.read().strip()
            if key:
                return key
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(50)
    tmp = path + ".%d.tmp" % os.getpid()
    with open(tmp, "w") as f:
        f.write(key)
    os.replace(tmp, path)
    return key


def configure_django(directory, site_url, verbose=False):
    import django
    from django.conf import settings

    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    settings.configure(
        DEBUG=False,
        SECRET_KEY=secret_key(directory),
        ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]", "::1"],
        INSTALLED_APPS=[
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "oidc_provider",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
        ],
        ROOT_URLCONF="idp_site",
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "DIRS": [os.path.join(HERE, "templates")],
                "APP_DIRS": True,
                "OPTIONS": {
                    "context_processors": [
                        "django.template.context_processors.request",
                        "django.contrib.auth.context_processors.auth",
                    ]
                },
            }
        ],
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": os.path.join(directory, DB_NAME),
                "OPTIONS": {
                    # Wait for the other process's or thread's write instead of
                    # failing with "database is locked".
                    "timeout": 30,
                    # The token endpoint reads the code and deletes it in one
                    # transaction.atomic(); IMMEDIATE takes the write lock at
                    # BEGIN, so two exchanges of one code are serialised and the
                    # second finds it gone (with DEFERRED both could read it).
                    "transaction_mode": "IMMEDIATE",
                    # Readers (JWKS, discovery) never wait on rotate-keys.
                    "init_command": "PRAGMA journal_mode=WAL;",
                },
            }
        },
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        USE_TZ=True,
        TIME_ZONE="UTC",
        PASSWORD_HASHERS=["idp_site.FastPBKDF2PasswordHasher"],
        # The gateway under test may also set cookies on 127.0.0.1 (cookies
        # ignore the port), so these names must not collide with its own.
        SESSION_COOKIE_NAME="test_idp_session",
        CSRF_COOKIE_NAME="test_idp_csrftoken",
        LOGIN_URL="/accounts/login/",
        LOGIN_REDIRECT_URL="/",
        LOGOUT_REDIRECT_URL="/",
        SITE_URL=site_url,
        OIDC_USERINFO="idp_site.userinfo",
        OIDC_EXTRA_SCOPE_CLAIMS="idp_site.GroupClaims",
        OIDC_IDTOKEN_INCLUDE_CLAIMS=True,
        OIDC_SESSION_MANAGEMENT_ENABLE=False,
        LOGGING={
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {
                "stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
            },
            "loggers": {
                "django": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
                "oidc_provider": {
                    "handlers": ["stderr"],
                    "level": "DEBUG" if verbose else "WARNING",
                    "propagate": False,
                },
            },
        },
    )
    django.setup()


def new_rsa_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from oidc_provider.models import RSAKey

    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private_key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    ).decode("ascii")
    key = RSAKey(key=pem)
    key.save()
    return key


def parse_user(spec):
    username, sep, rest = spec.partition(":")
    fields = rest.rsplit(":", 3) if sep else []
    if not username or len(fields) != 4:
        raise argparse.ArgumentTypeError(
            "--user wants USERNAME:PASSWORD:GIVEN_NAME:FAMILY_NAME:EMAIL, got %r" % spec
        )
    password, given, family, email = fields
    return {
        "username": username,
        "password": password,
        "first_name": given,
        "last_name": family,
        "email": email,
    }


def parse_group(spec):
    username, sep, group = spec.partition(":")
    if not username or not sep or not group:
        raise argparse.ArgumentTypeError("--group wants USERNAME:GROUP, got %r" % spec)
    return username, group


def seed(args):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import transaction
    from oidc_provider.models import Client, ResponseType, RSAKey

    with transaction.atomic():
        if not RSAKey.objects.exists():
            key = new_rsa_key()
            log("created RSA signing key kid=%s" % key.kid)

        client, _ = Client.objects.get_or_create(
            client_id=args.client_id, defaults={"name": args.client_id}
        )
        client.name = args.client_id
        client.client_type = "confidential"
        client.client_secret = args.client_secret
        client.redirect_uris = list(args.redirect_uri)
        client.require_consent = False
        client.reuse_consent = True
        client.jwt_alg = "RS256"
        client.scope = ["openid", "profile", "email"]
        client.save()
        client.response_types.set([ResponseType.objects.get(value="code")])

        User = get_user_model()
        for spec in args.user:
            user, _ = User.objects.get_or_create(username=spec["username"])
            user.first_name = spec["first_name"]
            user.last_name = spec["last_name"]
            user.email = spec["email"]
            user.is_active = True
            user.set_password(spec["password"])
            user.save()
            names = [group for username, group in args.group if username == spec["username"]]
            user.groups.set([Group.objects.get_or_create(name=name)[0] for name in names])


# --- serving -----------------------------------------------------------------


class LazyApp:
    """The WSGI application that waitress is given when the socket is bound,
    before Django is set up (Django needs the port for SITE_URL). Logs one
    line per request to stderr."""

    def __init__(self):
        self.app = None

    def __call__(self, environ, start_response):
        started = time.monotonic()
        status_seen = []

        def logging_start_response(status, headers, exc_info=None):
            status_seen.append(status.split(" ", 1)[0])
            return start_response(status, headers, exc_info)

        app = self.app
        if app is None:
            logging_start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            body = [b"starting\n"]
        else:
            body = app(environ, logging_start_response)
        path = environ.get("PATH_INFO", "")
        if environ.get("QUERY_STRING"):
            path += "?" + environ["QUERY_STRING"]
        log(
            "%s %s %s %.1fms"
            % (
                environ.get("REQUEST_METHOD"),
                path,
                status_seen[0] if status_seen else "-",
                (time.monotonic() - started) * 1000,
            )
        )
        return body


def check_loopback(host):
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise SystemExit("provider.py: --host must be a loopback address, not %r" % host)


def write_atomically(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def serve(args):
    started = time.monotonic()
    check_loopback(args.host)
    os.makedirs(args.dir, exist_ok=True)
    try:
        os.remove(args.port_file)  # a stale port must never be read as this run's
    except FileNotFoundError:
        pass

    from waitress.server import create_server

    lazy = LazyApp()
    server = create_server(
        lazy,
        host=args.host,
        port=args.port,
        threads=args.threads,
        ident="test-oidc-provider",
        clear_untrusted_proxy_headers=True,
    )
    port = int(server.effective_port)
    url_host = "[%s]" % args.host if ":" in args.host else args.host
    site_url = "http://%s:%d" % (url_host, port)
    issuer = site_url + "/openid"

    configure_django(args.dir, site_url, verbose=args.verbose)
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    seed(args)
    from django.core.wsgi import get_wsgi_application

    lazy.app = get_wsgi_application()

    stopping = threading.Event()
    failed = []

    def on_signal(signum, frame):
        if not stopping.is_set():
            stopping.set()
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def announce_when_ready():
        # Write the port only once a real request through the server works.
        discovery = issuer + "/.well-known/openid-configuration"
        deadline = time.monotonic() + 30
        while not stopping.is_set():
            try:
                with urllib.request.urlopen(discovery, timeout=5) as response:
                    if json.load(response).get("issuer") == issuer:
                        break
            except Exception as error:  # not up yet
                if time.monotonic() > deadline:
                    log("never became ready: %s" % error)
                    failed.append(error)
                    os.kill(os.getpid(), signal.SIGTERM)
                    return
            stopping.wait(0.05)
        else:
            return
        write_atomically(args.port_file, "%d\n" % port)
        log("ready in %.2fs, issuer %s" % (time.monotonic() - started, issuer))
        sys.stdout.write("ready %s\n" % issuer)
        sys.stdout.flush()

    threading.Thread(target=announce_when_ready, name="announce", daemon=True).start()
    try:
        server.run()  # returns on SystemExit/KeyboardInterrupt, after the workers stop
    finally:
        stopping.set()
        try:
            server.close()
        except Exception:
            pass
        try:
            os.remove(args.port_file)
        except FileNotFoundError:
            pass
        log("stopped")
    return 1 if failed else 0


def rotate_keys(args):
    database = os.path.join(args.dir, DB_NAME)
    if not os.path.exists(database):
        raise SystemExit("provider.py: no database at %s (run serve first)" % database)
    configure_django(args.dir, "http://127.0.0.1")
    from django.db import transaction
    from oidc_provider.models import RSAKey

    with transaction.atomic():
        old = [key.kid for key in RSAKey.objects.all()]
        key = new_rsa_key()
        RSAKey.objects.exclude(pk=key.pk).delete()
    log("rotated keys: removed %s, added %s" % (", ".join(old) or "none", key.kid))
    sys.stdout.write("%s\n" % key.kid)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    s = commands.add_parser("serve", help="run the provider")
    s.add_argument("--dir", required=True, help="state directory (sqlite database, secret key)")
    s.add_argument("--port-file", required=True, help="written with the port once ready")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--client-id", required=True)
    s.add_argument("--client-secret", required=True)
    s.add_argument("--redirect-uri", action="append", required=True)
    s.add_argument("--user", action="append", type=parse_user, default=[])
    s.add_argument("--group", action="append", type=parse_group, default=[],
                   help="USERNAME:GROUP, a group the user is in (repeatable)")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--verbose", action="store_true", help="django-oidc-provider's debug log")

    r = commands.add_parser("rotate-keys", help="replace the signing key")
    r.add_argument("--dir", required=True)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return rotate_keys(args)


if __name__ == "__main__":
    sys.exit(main())
