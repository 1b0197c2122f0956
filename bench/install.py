"""Installing what a benchmark needs and this machine lacks, from Debian's packages (and Python modules from pip)."""
import contextlib
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.processes import RESULTS_DIR, BenchError, log, show_tail


# What shows that a Debian package is installed: a command it brings, or a file (a pattern).
SIGN = {"nginx-light": "nginx", "postgresql": "/usr/lib/postgresql/*/bin/pgbench", "chromium-driver": "chromedriver",
        "libjs-leaflet": "/usr/share/javascript/leaflet/leaflet.css",
        "libnginx-mod-nchan": "/usr/lib/nginx/modules/ngx_nchan_module.so", "libc6-dev": "/usr/include/stdio.h",
        "nghttp2-client": "h2load",
        "libnginx-mod-http-brotli-static": "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"}


def is_installed(package):
    sign = SIGN.get(package, package)
    return glob.glob(sign) if sign.startswith("/") else shutil.which(sign, path=f"{os.environ['PATH']}:/usr/sbin:/sbin")


@contextlib.contextmanager
def no_service_starts():
    """The packages would start system services of their own (nginx on :80, a cluster on :5432). A
    policy-rc.d that refuses is Debian's way to prevent that; ours is removed again afterwards."""
    policy = Path("/usr/sbin/policy-rc.d")
    made = not policy.exists()
    if made:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        yield
    finally:
        if made:
            policy.unlink(missing_ok=True)


def ensure(*packages):
    """Installs those of PACKAGES (Debian's names) that are missing."""
    missing = [package for package in packages if not is_installed(package)]
    if not missing:
        return
    log(f"installing {' '.join(missing)}")
    apt_log = RESULTS_DIR / "apt.log"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}

    def apt_get(*args):
        with open(apt_log, "a") as out:
            return subprocess.run(["apt-get", *args], stdout=out, stderr=subprocess.STDOUT, env=env).returncode == 0

    with no_service_starts():
        # Package lists are refreshed only when the install cannot go ahead without them.
        installed = apt_get("install", "-y", "-qq", *missing) or (
            apt_get("update", "-qq") and apt_get("install", "-y", "-qq", *missing))
    if not installed:
        show_tail(apt_log)
        raise BenchError(f"could not install {' '.join(missing)}")


def ensure_module(module, package=None):
    """Python's MODULE for this interpreter, from pip's PACKAGE (the module's name unless given) if missing."""
    if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode:
        log(f"installing {package or module}")
        if subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           package or module]).returncode:
            raise BenchError(f"could not install {package or module}")

