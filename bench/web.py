"""The web client with 100 pins in headless Chromium, driven by Selenium: bytes transferred for the page
(all but map tiles) and the time from navigation to every marker drawn, medians of 10 loads from
an empty cache and 10 that revalidate, beside the JSON list fetched alone. Goals: at most 300 KB and
500 ms. Then the same page on a gateway with no tile server (`TILE_URL=none`): the time to the first paint
of the map on its built-in world map alone (land drawn and the countries named), the basemap's bytes among
the page's. On its own PostgreSQL, services and stand-in tile server; writes the "Web client" section."""
import json
import os
import statistics
import sys

from bench.install import ensure, ensure_module
from bench.processes import RESULTS_DIR, BenchError, Server, Stack, free_port, log, output_of, post_json, student_session
from bench.report import load_average, meets, stamp, write_sections

PINS = 100
LOADS = 10

# Runs before the page's scripts: notes the time at which every marker is in the page with its image decoded.
MARKER_CLOCK = """
window.__markersDrawnAt = null;
const check = () => {
  if (window.__markersDrawnAt !== null) return;
  const icons = document.querySelectorAll('#map .leaflet-marker-icon');
  if (icons.length < %d) return;
  if (![...icons].every((icon) => icon.complete && icon.naturalWidth > 0)) {
    setTimeout(check, 1);
    return;
  }
  requestAnimationFrame(() => { window.__markersDrawnAt = performance.now(); });
};
new MutationObserver(check).observe(document, { childList: true, subtree: true });
""" % PINS

# Runs before the page's scripts: notes the time at which the world map is first painted (its canvas in the
# map's basemap pane, which Leaflet adds with the first cell's shapes and draws in the next frame).
BASEMAP_CLOCK = """
window.__basemapDrawnAt = null;
const basemapCheck = () => {
  if (window.__basemapDrawnAt !== null) return;
  if (!document.querySelector('#map .leaflet-basemap-pane canvas')) return;
  requestAnimationFrame(() => { window.__basemapDrawnAt = performance.now(); });
};
new MutationObserver(basemapCheck).observe(document, { childList: true, subtree: true });
"""

BASEMAP_BYTES = """
let transferred = 0, files = 0;
for (const entry of performance.getEntriesByType('resource')) {
  if (!entry.name.includes('/web/basemap/')) continue;
  transferred += entry.transferSize;
  files += 1;
}
return { transferred, files };
"""

PAGE_BYTES = """
const tiles = arguments[0];
const navigation = performance.getEntriesByType('navigation')[0];
let transferred = navigation.transferSize, files = 1;
for (const entry of performance.getEntriesByType('resource')) {
  if (entry.name.startsWith(tiles) || entry.name.includes('/events')) continue;
  transferred += entry.transferSize;
  files += 1;
}
return { transferred, files };
"""

LIST_FETCH = """
const done = arguments[arguments.length - 1];
const start = performance.now();
fetch('/v1/StudentLocation?limit=100&order=-updatedAt', { cache: 'no-store' })
  .then((response) => response.text())
  .then((text) => {
    const elapsed = performance.now() - start;
    const entries = performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/StudentLocation?'));
    done({ ms: elapsed, transferred: entries[entries.length - 1].transferSize, bodyBytes: text.length });
  });
"""


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"]:
        options.add_argument(argument)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    return webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))


def logged_in(driver, gateway, email, password, clocks, drawn):
    """Loads the page with CLOCKS run before its scripts, logs in through its form, and waits until the script
    DRAWN says the map is drawn: the wait, for the loads that follow."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": clocks})
    driver.execute_cdp_cmd("Network.enable", {})
    driver.get(gateway + "/")
    wait = WebDriverWait(driver, 30, poll_frequency=0.02)
    wait.until(lambda d: d.find_element(By.ID, "login-form").is_displayed())
    driver.find_element(By.ID, "login-email").send_keys(email)
    driver.find_element(By.ID, "login-password").send_keys(password)
    driver.find_element(By.ID, "login-submit").click()
    wait.until(lambda d: d.execute_script(drawn))
    return wait


def measure_basemap(gateway, email, password):
    """For each of LOADS loads from an empty cache, on a gateway with no tile server: the time from navigation
    start until the world map is first painted, and until every marker is drawn, and the bytes of the page
    (everything but the live stream) and of its basemap files."""
    driver = chromium()
    try:
        wait = logged_in(driver, gateway, email, password, MARKER_CLOCK + BASEMAP_CLOCK,
                         "return window.__markersDrawnAt !== null && window.__basemapDrawnAt !== null")

        def load():
            driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.get(gateway + "/")
            wait.until(lambda d: d.execute_script("return window.__markersDrawnAt !== null && window.__basemapDrawnAt !== null"))
            basemap, markers = driver.execute_script("return [window.__basemapDrawnAt, window.__markersDrawnAt]")
            page = driver.execute_script(PAGE_BYTES, "-")
            cells = driver.execute_script(BASEMAP_BYTES)
            return {"basemap_ms": basemap, "markers_ms": markers, "transferred": page["transferred"],
                    "basemap_bytes": cells["transferred"], "basemap_files": cells["files"]}

        runs = [load() for _ in range(LOADS)]
    finally:
        driver.quit()
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]} | {
        "basemap_ms_min": min(r["basemap_ms"] for r in runs), "basemap_ms_max": max(r["basemap_ms"] for r in runs)}


def measure_page(gateway, tiles, email, password):
    """For each of LOADS loads: the bytes transferred for the page and everything it fetches but map tiles, and
    the time from navigation start until every marker is drawn (all PINS marker images in the page and
    decoded), from the browser's own clock. Cold loads start from an empty cache; warm loads revalidate what
    is cached. Beside them, the JSON list alone, fetched from the same page LOADS times."""
    from selenium.webdriver.common.by import By

    driver = chromium()
    try:
        wait = logged_in(driver, gateway, email, password, MARKER_CLOCK, "return window.__markersDrawnAt !== null")

        def load(cold):
            if cold:
                driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.get(gateway + "/")
            wait.until(lambda d: d.execute_script("return window.__markersDrawnAt") is not None)
            drawn = driver.execute_script("return window.__markersDrawnAt")
            markers = len(driver.find_elements(By.CSS_SELECTOR, "#map .leaflet-marker-icon"))
            assert markers == PINS, f"{markers} markers drawn, expected {PINS}"
            page = driver.execute_script(PAGE_BYTES, tiles)
            return {"ms": drawn, **page}

        cold = [load(True) for _ in range(LOADS)]
        warm = [load(False) for _ in range(LOADS)]
        driver.set_script_timeout(10)
        lists = [driver.execute_async_script(LIST_FETCH) for _ in range(LOADS)]
    finally:
        driver.quit()

    def summary(runs, key):
        return {"median": statistics.median(r[key] for r in runs), "min": min(r[key] for r in runs),
                "max": max(r[key] for r in runs)}

    return {
        "pins": PINS, "loads": LOADS,
        "cold": {"ms": summary(cold, "ms"), "bytes": summary(cold, "transferred"), "files": cold[0]["files"]},
        "warm": {"ms": summary(warm, "ms"), "bytes": summary(warm, "transferred")},
        "list": {"ms": summary(lists, "ms"), "bytes": summary(lists, "transferred"), "bodyBytes": lists[0]["bodyBytes"]},
    }



BYTES_GOAL, MS_GOAL = 300 * 1024, 500


def run(bench):
    ensure("chromium", "chromium-driver", "libjs-leaflet")
    ensure_module("selenium")
    stack = Stack(bench, "web", bench.binaries("locations-service", "auth-gateway", log_name="web-build"))
    tile_port = free_port()
    tiles = Server("tiles", bench.processes.start([sys.executable, "Tests/browser/tile_server.py", tile_port]),
                   tile_port, None).wait_ready(50, "/0/0/0.png")
    gateway = stack.gateway({"TILE_URL": tiles.base + "/{z}/{x}/{y}.png"})

    # 100 pins across the world from one student, posted through the gateway's API.
    session = student_session(gateway, "bench@example.com", "bench password 1", "Bench", "Student")
    for index in range(100):
        status, _ = post_json(gateway.url(), {"mapString": f"Place {index}", "mediaURL": f"https://example.com/{index}",
                                              "latitude": (index * 37) % 140 - 70 + 0.5,
                                              "longitude": (index * 71) % 340 - 170 + 0.25},
                              {"Authorization": f"Bearer {session}"})
        if status is None or status >= 400:
            raise BenchError(f"posting pin {index} answered {status}")

    log("loading the page in headless Chromium")
    r = measure_page(gateway.base, tiles.base, "bench@example.com", "bench password 1")
    log("loading the page on the built-in world map alone (TILE_URL=none)")
    alone = stack.gateway({"TILE_URL": "none"}, log_name="web-basemap-gateway.log")
    r["basemap"] = measure_basemap(alone.base, "bench@example.com", "bench password 1")
    (RESULTS_DIR / "web.json").write_text(json.dumps(r))
    version = [line for line in output_of("chromium", "--version").splitlines() if line.startswith("Chromium")]
    browser = " ".join(version[0].split()[:2]) if version else ""

    def kb(n):
        return f"{n / 1024:.1f} KB"

    cold, warm, listed, basemap = r["cold"], r["warm"], r["list"], r["basemap"]
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
        f"stream left out). Release build on loopback; {stamp('Clients', 'Services', 'Package.swift')} (load",
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
        "On the built-in world map alone (`TILE_URL=none`, no tile server), from an empty cache: the map is first",
        f"painted (its first cell's land drawn) in **{basemap['basemap_ms']:.0f} ms** (median; "
        f"{basemap['basemap_ms_min']:.0f} – {basemap['basemap_ms_max']:.0f} ms), every marker drawn in "
        f"{basemap['markers_ms']:.0f} ms ({basemap['markers_ms'] / MS_GOAL:.2f}× the 500 ms limit, "
        f"{meets(basemap['markers_ms'] <= MS_GOAL)} it); the page weighs {kb(basemap['transferred'])} "
        f"({basemap['transferred'] / BYTES_GOAL:.2f}× the 300 KB limit), of which the basemap's "
        f"{basemap['basemap_files']:.0f} file{'' if basemap['basemap_files'] == 1 else 's'} {'is' if basemap['basemap_files'] == 1 else 'are'} {kb(basemap['basemap_bytes'])}. With a tile server the basemap",
        "is fetched the same way, so its bytes are among the empty-cache page's above.",
        "",
    ])
    log(f"web client: {bytes_ratio:.2f}x the byte limit, {ms_ratio:.2f}x the time limit; wrote the Web client section")
