"""Loads the web client in headless Chromium with 100 pins and measures it (`bench/run.py web` runs it).

For each of 10 loads: the bytes transferred for the page and everything it fetches but map tiles, and the
time from navigation start until every marker is drawn (all 100 marker images in the page and decoded),
from the browser's own clock. Cold loads start from an empty cache; warm loads revalidate what is cached.
Beside them, the JSON list alone, fetched from the same page 10 times. Prints one JSON object.

Usage: python3 web_page.py GATEWAY_URL TILE_ORIGIN EMAIL PASSWORD
"""
import json
import os
import statistics
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

GATEWAY, TILES, EMAIL, PASSWORD = sys.argv[1:5]
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


def main():
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"]:
        options.add_argument(argument)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MARKER_CLOCK})
        driver.execute_cdp_cmd("Network.enable", {})
        driver.get(GATEWAY + "/")
        wait = WebDriverWait(driver, 30, poll_frequency=0.02)
        wait.until(lambda d: d.find_element(By.ID, "login-form").is_displayed())
        driver.find_element(By.ID, "login-email").send_keys(EMAIL)
        driver.find_element(By.ID, "login-password").send_keys(PASSWORD)
        driver.find_element(By.ID, "login-submit").click()
        wait.until(lambda d: d.execute_script("return window.__markersDrawnAt") is not None)

        def load(cold):
            if cold:
                driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.get(GATEWAY + "/")
            wait.until(lambda d: d.execute_script("return window.__markersDrawnAt") is not None)
            drawn = driver.execute_script("return window.__markersDrawnAt")
            markers = len(driver.find_elements(By.CSS_SELECTOR, "#map .leaflet-marker-icon"))
            assert markers == PINS, f"{markers} markers drawn, expected {PINS}"
            page = driver.execute_script(PAGE_BYTES, TILES)
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

    print(json.dumps({
        "pins": PINS, "loads": LOADS,
        "cold": {"ms": summary(cold, "ms"), "bytes": summary(cold, "transferred"), "files": cold[0]["files"]},
        "warm": {"ms": summary(warm, "ms"), "bytes": summary(warm, "transferred")},
        "list": {"ms": summary(lists, "ms"), "bytes": summary(lists, "transferred"), "bodyBytes": lists[0]["bodyBytes"]},
    }))


if __name__ == "__main__":
    main()
