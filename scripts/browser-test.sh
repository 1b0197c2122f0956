#!/usr/bin/env bash
# The web client's browser tests: headless Chromium (Debian's chromium and chromium-driver) driven by
# Selenium, with axe-core's accessibility audits, against both services on a private PostgreSQL, with a
# stand-in tile server and a test OpenID Connect provider on loopback.
# Installs what is missing; screenshots (desktop and a 360 px phone) and the services' logs are kept in
# test-output/browser/.
# Usage: scripts/browser-test.sh [test name, e.g. test_04_another_students_post_appears_live_without_a_reload]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain

# zbarimg (Debian's zbar-tools) reads the invite pages' QR codes back, as a phone's scanner would.
ensure_browser_tools zbarimg=zbar-tools curl=curl
# The accessibility audits' axe-core comes inside this package.
python3 -c "import axe_selenium_python" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check axe-selenium-python
# Students sign in with a real OpenID Connect provider on loopback: django-oidc-provider, served by waitress.
python3 -c "import oidc_provider, waitress" 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check django-oidc-provider==0.9.0 Django==5.2.19 waitress==3.0.2
# The world map's tests count colours in screenshots (Pillow) and serve a PMTiles archive the format's own
# writer made (pmtiles).
python3 -c "import PIL, pmtiles" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pillow pmtiles
bin=$(build_services)

output="$PWD/test-output/browser"
rm -rf "$output"
mkdir -p "$output"
trap web_stack_stop EXIT
web_stack_start "$bin" "$output" oidc

status=0
web_stack_unittest Tests/browser test_web_client.WebClientTests "$output" "$@" || status=$?
echo "screenshots: $output"
exit $status
