#!/usr/bin/env bash
# The web client's browser tests: headless Chromium (Debian's chromium and chromium-driver) driven by
# Selenium, against both services on a private PostgreSQL, with a stand-in tile server on loopback.
# Installs what is missing; screenshots (desktop and a 360 px phone) and the services' logs are kept in
# test-output/browser/.
# Usage: scripts/browser-test.sh [test name, e.g. test_4_another_students_post_appears_live_without_a_reload]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
[ -f /usr/share/javascript/leaflet/leaflet.css ] || missing+=(libjs-leaflet)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python3 -c "import selenium" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check selenium

for product in locations-service auth-gateway; do swift build -q --product "$product"; done
bin=$(swift build --show-bin-path)

output="$PWD/test-output/browser"
rm -rf "$output"
mkdir -p "$output"
trap web_stack_stop EXIT
web_stack_start "$bin" "$output"

tests=(Tests/browser/test_web_client.py)
[ $# -gt 0 ] && tests=("${@/#/test_web_client.WebClientTests.}")
status=0
(cd Tests/browser && BROWSER_TEST_OUTPUT="$output" python3 -m unittest -v "${tests[@]##*/}") || status=$?
if [ $status -ne 0 ]; then
    echo "browser tests failed; the services' logs:"
    tail -n 20 "$output"/*.log
fi
echo "screenshots: $output"
exit $status
