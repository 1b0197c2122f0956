"""The web client with 100 pins in headless Chromium (bench/web_page.py drives it): bytes transferred for
the page (all but map tiles) and the time from navigation to every marker drawn, medians of 10 loads from
an empty cache and 10 that revalidate, beside the JSON list fetched alone. Goals: at most 300 KB and
500 ms. On its own PostgreSQL, services and stand-in tile server; writes the "Web client" section."""
import json
import sys

from install import ensure, ensure_selenium
from processes import RESULTS_DIR, BenchError, Server, Stack, free_port, log, output_of, post_json
from procfs import CPUS
from report import commit, load_average, meets, utc_now, write_sections

BYTES_GOAL, MS_GOAL = 300 * 1024, 500


def run(bench):
    ensure("chromium", "chromium-driver", "libjs-leaflet")
    ensure_selenium()
    stack = Stack(bench, "web", bench.binaries("locations-service", "auth-gateway", log_name="web-build"))
    tile_port = free_port()
    tiles = Server("tiles", bench.processes.start([sys.executable, "Tests/browser/tile_server.py", tile_port]),
                   tile_port, None).wait_ready(50, "/0/0/0.png")
    gateway = stack.gateway({"TILE_URL": tiles.base + "/{z}/{x}/{y}.png"})

    # 100 pins across the world from one student, posted through the gateway's API.
    session = stack.student(gateway, "bench@example.com", "bench password 1")
    for index in range(100):
        status, _ = post_json(gateway.url(), {"mapString": f"Place {index}", "mediaURL": f"https://example.com/{index}",
                                              "latitude": (index * 37) % 140 - 70 + 0.5,
                                              "longitude": (index * 71) % 340 - 170 + 0.25},
                              {"Authorization": f"Bearer {session}"})
        if status is None or status >= 400:
            raise BenchError(f"posting pin {index} answered {status}")

    log("loading the page in headless Chromium")
    measured = bench.processes.output([sys.executable, "bench/web_page.py", gateway.base, tiles.base,
                                       "bench@example.com", "bench password 1"], 900)
    (RESULTS_DIR / "web.json").write_text(measured)
    r = json.loads(measured)
    version = [line for line in output_of("chromium", "--version").splitlines() if line.startswith("Chromium")]
    browser = " ".join(version[0].split()[:2]) if version else ""

    def kb(n):
        return f"{n / 1024:.1f} KB"

    cold, warm, listed = r["cold"], r["warm"], r["list"]
    bytes_ratio = cold["bytes"]["median"] / BYTES_GOAL
    ms_ratio = cold["ms"]["median"] / MS_GOAL
    write_sections([
        "## Web client",
        "",
        f"`bench/run.py web`: the page at `/` with {r['pins']} pins, logged in, in headless {browser or 'Chromium'} "
        "(1280×800),",
        f"measured by the browser itself (Navigation and Resource Timing), {r['loads']} loads each. \"Drawn\" is from",
        "navigation start until all 100 markers are in the page with their images decoded. Bytes are what",
        "crossed the wire for the page and everything it fetched but map tiles (headers included; the live",
        f"stream left out). Release build on loopback; run on {utc_now()}, commit "
        f"{commit('Clients', 'Services', 'Package.swift')}, {CPUS} cores (load",
        f"average {load_average()} at the end: other work on the machine shows in the spread).",
        "",
        "| | median | min – max | bytes (median) |",
        "| --- | --- | --- | --- |",
        f"| page, empty cache ({cold['files']} requests) | {cold['ms']['median']:.0f} ms | {cold['ms']['min']:.0f} – "
        f"{cold['ms']['max']:.0f} ms | {kb(cold['bytes']['median'])} |",
        f"| page, cached (revalidated, 304s) | {warm['ms']['median']:.0f} ms | {warm['ms']['min']:.0f} – "
        f"{warm['ms']['max']:.0f} ms | {kb(warm['bytes']['median'])} |",
        f"| the JSON list alone (`fetch`, {listed['bodyBytes']:,} bytes of JSON) | {listed['ms']['median']:.1f} ms | "
        f"{listed['ms']['min']:.1f} – {listed['ms']['max']:.1f} ms | {kb(listed['bytes']['median'])} |",
        "",
        f"**Bytes: {bytes_ratio:.2f}× the 300 KB limit** ({meets(bytes_ratio <= 1)} it); **time to every marker drawn:",
        f"{ms_ratio:.2f}× the 500 ms limit** ({meets(ms_ratio <= 1)} it), from an empty cache. The list alone takes",
        f"{listed['ms']['median'] / cold['ms']['median'] * 100:.1f}% of that page load.",
        "",
    ])
    log(f"web client: {bytes_ratio:.2f}x the byte limit, {ms_ratio:.2f}x the time limit; wrote the Web client section")
