#!/usr/bin/env bash
# The web client with 100 pins in headless Chromium: bytes transferred for the page (all but map tiles)
# and the time from navigation to every marker drawn, medians of 10 loads from an empty cache and 10 that
# revalidate, beside the JSON list fetched alone. Goals: at most 300 KB and 500 ms.
# Release builds in .build-bench/ (shared with bench/run.py); its own PostgreSQL, services and stand-in
# tile server on loopback (Tests/browser/stack.sh). Writes the "Web client" section of BENCHMARKS.md
# (replaced if there, appended if not).
#
# Usage (as root on Debian 12; installs chromium, chromium-driver, libjs-leaflet and selenium if missing): bench/web.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain
results_dir=$root/bench/results
mkdir -p "$results_dir"

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
[ -f /usr/share/javascript/leaflet/leaflet.css ] || missing+=(libjs-leaflet)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python3 -c "import selenium" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check selenium

web_stack_bench web
web_stack_start "$BENCH_BIN" "$BENCH_WORK"

# 100 pins across the world from one student, posted through the gateway's API.
session=$(web_stack_student bench@example.com "bench password 1")
python3 - "$STACK_GATEWAY" "$session" <<'PY'
import json, sys, urllib.request
gateway, session = sys.argv[1:]
def post(body):
    request = urllib.request.Request(gateway + "/v1/StudentLocation", json.dumps(body).encode(),
                                     {"Content-Type": "application/json", "Authorization": f"Bearer {session}"}, method="POST")
    urllib.request.urlopen(request, timeout=10).read()
for index in range(100):
    post({"mapString": f"Place {index}", "mediaURL": f"https://example.com/{index}",
          "latitude": (index * 37) % 140 - 70 + 0.5, "longitude": (index * 71) % 340 - 170 + 0.25})
PY

python3 bench/web_page.py "$STACK_GATEWAY" "$STACK_TILES" bench@example.com "bench password 1" | tee "$results_dir/web.json"

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Clients Services Package.swift || echo ' with local changes')"
fi
python3 - BENCHMARKS.md "$results_dir/web.json" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(nproc)" \
    "$(chromium --version 2>/dev/null | awk 'NR == 1 { print $1, $2 }')" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, os, sys

sys.path.insert(0, "bench")
from section import write_sections

target, results, date, commit, cpus, browser, load = sys.argv[1:]
r = json.load(open(results))
BYTES_GOAL, MS_GOAL = 300 * 1024, 500
kb = lambda n: f"{n / 1024:.1f} KB"
cold, warm, listed = r["cold"], r["warm"], r["list"]
bytes_ratio = cold["bytes"]["median"] / BYTES_GOAL
ms_ratio = cold["ms"]["median"] / MS_GOAL
verdict = lambda ratio: "meets" if ratio <= 1 else "misses"
section = [
    "## Web client",
    "",
    f"`bench/web.sh`: the page at `/` with {r['pins']} pins, logged in, in headless {browser or 'Chromium'} (1280×800),",
    f"measured by the browser itself (Navigation and Resource Timing), {r['loads']} loads each. \"Drawn\" is from",
    "navigation start until all 100 markers are in the page with their images decoded. Bytes are what",
    "crossed the wire for the page and everything it fetched but map tiles (headers included; the live",
    f"stream left out). Release build on loopback; run on {date}, commit {commit}, {cpus} cores (load",
    f"average {load} at the end: other work on the machine shows in the spread).",
    "",
    "| | median | min – max | bytes (median) |",
    "| --- | --- | --- | --- |",
    f"| page, empty cache ({cold['files']} requests) | {cold['ms']['median']:.0f} ms | {cold['ms']['min']:.0f} – {cold['ms']['max']:.0f} ms | {kb(cold['bytes']['median'])} |",
    f"| page, cached (revalidated, 304s) | {warm['ms']['median']:.0f} ms | {warm['ms']['min']:.0f} – {warm['ms']['max']:.0f} ms | {kb(warm['bytes']['median'])} |",
    f"| the JSON list alone (`fetch`, {listed['bodyBytes']:,} bytes of JSON) | {listed['ms']['median']:.1f} ms | {listed['ms']['min']:.1f} – {listed['ms']['max']:.1f} ms | {kb(listed['bytes']['median'])} |",
    "",
    f"**Bytes: {bytes_ratio:.2f}× the 300 KB limit** ({verdict(bytes_ratio)} it); **time to every marker drawn:",
    f"{ms_ratio:.2f}× the 500 ms limit** ({verdict(ms_ratio)} it), from an empty cache. The list alone takes",
    f"{listed['ms']['median'] / cold['ms']['median'] * 100:.1f}% of that page load.",
    "",
]
write_sections(target, section)
print(f"web client: {bytes_ratio:.2f}x the byte limit, {ms_ratio:.2f}x the time limit")
PY
echo "bench/web.sh: wrote the Web client section of BENCHMARKS.md"
