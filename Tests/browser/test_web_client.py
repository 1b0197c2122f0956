"""The web client in headless Chromium against the real services (scripts/browser-test.sh starts them).

Each test asserts what a student sees. The tests run in order on one browser: they share the students
seeded in setUpClass and the pins the earlier tests post.
"""
import base64
import contextlib
import datetime
import gzip
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from axe_selenium_python import Axe
from PIL import Image
from pmtiles.reader import MmapSource, Reader
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # Tests/, for the harness
from harness.client import PASSWORD, strip_prefix  # noqa: E402

GATEWAY = os.environ["STACK_GATEWAY"]
GATEWAY_NO_TILES = os.environ["STACK_GATEWAY_NO_TILES"]
# Tiles from the gateway's own PMTiles archive (STACK_PMTILES), written by scripts/make-test-pmtiles.py.
GATEWAY_PMTILES = os.environ["STACK_GATEWAY_PMTILES"]
PMTILES = os.environ["STACK_PMTILES"]
# The OpenID Connect provider STACK_GATEWAY signs students in with, and its one student.
PROVIDER = os.environ["STACK_OIDC_ISSUER"]
PROVIDER_NAME = os.environ["STACK_OIDC_PROVIDER_NAME"]
PROVIDER_USERNAME, PROVIDER_PASSWORD, PROVIDER_GIVEN, PROVIDER_FAMILY, _ = os.environ["STACK_OIDC_USER"].split(":")
OUTPUT = os.environ.get("TEST_OUTPUT", "test-output/browser")
HOSTILE = "<img src=x onerror=alert(1)>"
SESSION_COOKIE = "onthemap_session"

# Runs before any script of the page: records CSP violations, any dialog a script would open, and how many
# reads of the map's past (?at=) the page had in flight at once.
WATCHERS = """
window.__cspViolations = [];
window.__alerts = [];
window.__pastReads = { started: 0, inFlight: 0, most: 0 };
const originalFetch = window.fetch;
window.fetch = (resource, ...rest) => {
  if (!/[?&]at=/.test(String(resource))) return originalFetch(resource, ...rest);
  const reads = window.__pastReads;
  reads.started += 1;
  reads.inFlight += 1;
  reads.most = Math.max(reads.most, reads.inFlight);
  return originalFetch(resource, ...rest).finally(() => { reads.inFlight -= 1; });
};
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
for (const name of ['alert', 'confirm', 'prompt']) {
  const original = window[name];
  window[name] = (...args) => { window.__alerts.push(name + ':' + args.join(' ')); return original.apply(window, args); };
}
"""


def api(method, path, body=None, session=None, base=GATEWAY):
    """One request to the gateway as an app would send it; (status, JSON body)."""
    headers = {"Content-Type": "application/json"}
    if session:
        headers["Authorization"] = f"Bearer {session}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    text = strip_prefix(text)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def sign_up(email, first, last):
    status, answer = api("POST", "/v1/accounts", {"email": email, "password": PASSWORD, "firstName": first, "lastName": last})
    assert status == 201, (status, answer)


def log_in(email, password=PASSWORD):
    status, answer = api("POST", "/v1/session", {"udacity": {"username": email, "password": password}})
    assert status == 200, (status, answer)
    return answer["session"]["id"]


def post_pin(session, place, link, latitude, longitude):
    status, answer = api("POST", "/v1/StudentLocation", {
        "mapString": place, "mediaURL": link, "latitude": latitude, "longitude": longitude}, session=session)
    assert status == 200, (status, answer)
    return answer["objectId"]


def pins(at=None):
    """The list as the page asks for it: now, or at a moment (milliseconds since 1970)."""
    query = {"limit": "100", "order": "-updatedAt"}
    if at is not None:
        query["at"] = iso(at)
    status, answer = api("GET", "/v1/StudentLocation?" + urllib.parse.urlencode(query))
    assert status == 200, (status, answer)
    return answer["results"]


def new_browser():
    """Headless Chromium as the tests drive it, with the watchers in every page."""
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,800", "--lang=en-US"]:
        options.add_argument(argument)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCHERS})
    return driver


def ensure_qr_reader():
    """zbar's zbarimg, the reader behind many phones' scanner apps (scripts/browser-test.sh installs it)."""
    if not shutil.which("zbarimg"):
        raise RuntimeError("zbarimg is missing: run the browser tests with scripts/browser-test.sh, which installs it")


def read_qr(png):
    """The text of the one QR code in a PNG image, as zbar reads it ("" when it finds none)."""
    ensure_qr_reader()
    with tempfile.NamedTemporaryFile(suffix=".png") as image:
        image.write(png)
        image.flush()
        result = subprocess.run(["zbarimg", "--raw", "--quiet", "-Sdisable", "-Sqrcode.enable", image.name],
                                capture_output=True)
    return result.stdout.decode("utf-8").removesuffix("\n")


# Bytes a QR code holds in byte mode at levels L and M (ISO/IEC 18004, table 7), by version.
QR_CAPACITY = {
    "L": {1: 17, 2: 32, 3: 53, 4: 78, 5: 106, 6: 134, 7: 154, 8: 192, 9: 230, 10: 271, 20: 858, 27: 1465, 40: 2953},
    "M": {1: 14, 2: 26, 3: 42, 4: 62, 5: 84, 6: 106, 7: 122, 8: 152, 9: 180, 10: 213, 20: 666, 27: 1125, 40: 2331},
}

CLASS_SLUG, CLASS_NAME = "ios-2027", "iOS 2027"
TEACHER, STUDENT, LATECOMER, OUTSIDER = "grace@example.com", "linus@example.com", "max@example.com", "ada@example.com"
CLASS_PAGE = f"{GATEWAY}/maps/{CLASS_SLUG}/"


def iso(milliseconds):
    moment = datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def milliseconds(iso_time):
    return round(datetime.datetime.fromisoformat(iso_time.replace("Z", "+00:00")).timestamp() * 1000)


def name(pin):
    return f"{pin['firstName']} {pin['lastName']}"


def next_second(milliseconds_):
    """The first whole second after a moment: what a reader can type into a field that takes seconds."""
    return (milliseconds_ // 1000 + 1) * 1000


# The world map's colours (static/js/basemap.js): land and sea exactly; a border's line, a pixel and a half
# wide, is blended with what it crosses, so a pixel nearer its colour than the land's and the sea's counts.
LAND, SEA, BORDER = (244, 241, 234), (170, 211, 223), (155, 138, 166)


def colour_shares(png):
    """The shares of a screenshot's pixels that are land, sea and border."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = {"land": 0, "sea": 0, "border": 0}

    def distance(colour, to):
        return sum((a - b) ** 2 for a, b in zip(colour, to))
    for count, colour in image.getcolors(maxcolors=1 << 24):
        if colour == LAND:
            counts["land"] += count
        elif colour == SEA:
            counts["sea"] += count
        elif distance(colour, BORDER) < min(distance(colour, LAND), distance(colour, SEA)):
            counts["border"] += count
    total = image.width * image.height
    return {kind: count / total for kind, count in counts.items()}


def test_tiles_module():
    """scripts/make-test-pmtiles.py, for the colour it gives each tile."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "make-test-pmtiles.py")
    spec = importlib.util.spec_from_file_location("make_test_pmtiles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class WebClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        # Links to the gateway itself, so a link opened in a new tab loads without the internet.
        cls.students = {}
        for index, (email, first, last, place, lat, lon) in enumerate([
            ("grace@example.com", "Grace", "Hopper", "Arlington, Virginia", 38.88, -77.10),
            ("linus@example.com", "Linus", "Torvalds", "Portland, Oregon", 45.52, -122.68),
            ("hostile@example.com", HOSTILE, "Mallory", "Nowhere, Nevada", 39.5, -116.9),
        ]):
            sign_up(email, first, last)
            session = log_in(email)
            link = f"{GATEWAY}/healthz?student={index}"
            cls.students[email] = session
            post_pin(session, place, link, lat, lon)
        sign_up("ada@example.com", "Ada", "Lovelace")
        sign_up("throttled@example.com", "Tom", "Tries")

        cls.driver = new_browser()
        cls.browser_log = []
        cls.history = None
        cls.class_browser = None
        cls.invite = None

    @classmethod
    def known_history(cls):
        """Two students' pins with a known past, made once: Kay posts in Lima, Max in Nairobi, Kay moves to
        Oslo, Max deletes his pin, each at least a second apart. Returns the moments of those events and a
        whole second after each (milliseconds since 1970), and Max's pin."""
        if cls.history:
            return cls.history
        sign_up("kay@example.com", "Kay", "Mensah")
        sign_up("max@example.com", "Max", "Planck")
        kay, max_ = log_in("kay@example.com"), log_in("max@example.com")
        kay_pin = post_pin(kay, "Lima, Peru", "https://example.com/kay", -12.05, -77.04)
        time.sleep(1.1)
        max_pin = post_pin(max_, "Nairobi, Kenya", "https://example.com/max", -1.29, 36.82)
        time.sleep(1.1)
        status, answer = api("PUT", f"/v1/StudentLocation/{kay_pin}", {
            "mapString": "Oslo, Norway", "mediaURL": "https://example.com/kay", "latitude": 59.91, "longitude": 10.75},
            session=kay)
        assert status == 200, (status, answer)
        time.sleep(1.1)
        status, answer = api("DELETE", f"/v1/StudentLocation/{max_pin}", session=max_)
        assert status == 200, (status, answer)
        time.sleep(1.1)
        events = {}
        for pin in (kay_pin, max_pin):
            status, answer = api("GET", f"/v1/StudentLocation/{pin}/history")
            assert status == 200, (status, answer)
            events[pin] = answer["results"]
        moments = [milliseconds(events[kay_pin][0]["at"]), milliseconds(events[max_pin][0]["at"]),
                   milliseconds(events[kay_pin][1]["at"]), milliseconds(events[max_pin][1]["at"])]
        after = [next_second(moment) for moment in moments]
        assert all(a < b for a, b in zip(after, moments[1:])), (moments, after)
        cls.history = {"max_pin": max_pin, "posted_kay": moments[0], "posted_max": moments[1], "moved_kay": moments[2],
                       "deleted_max": moments[3], "after": after}
        return cls.history

    @classmethod
    def classroom(cls):
        """The class is made of students seeded before (the gateway takes few sign-ups from one address): Grace
        teaches, Linus is her student, Max asks to join later, and Ada stays outside."""
        cls.known_history()

    @classmethod
    def tearDownClass(cls):
        if cls.class_browser:
            cls.class_browser.quit()
        cls.driver.quit()

    # Helpers

    def wait_for(self, condition, timeout=10, message=""):
        # An element the page replaced while the condition read it (a popup closing as the next one opens)
        # means "not yet": the condition is asked again.
        return WebDriverWait(self.driver, timeout, poll_frequency=0.05,
                             ignored_exceptions=[StaleElementReferenceException]).until(lambda _: condition(), message)

    def by_id(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def visible(self, element_id):
        elements = self.driver.find_elements(By.ID, element_id)
        return bool(elements) and elements[0].is_displayed()

    def text(self, element_id):
        return self.by_id(element_id).text

    def open_page(self, base=GATEWAY):
        self.driver.get(base + "/")
        self.wait_for(lambda: self.visible("login-view") or self.visible("app-view"), message="neither login nor app shown")

    def log_in_through_form(self, email, password=PASSWORD):
        self.by_id("login-email").clear()
        self.by_id("login-email").send_keys(email)
        self.by_id("login-password").clear()
        self.by_id("login-password").send_keys(password + Keys.ENTER)

    def ensure_logged_in(self, email="ada@example.com", base=GATEWAY):
        self.open_page(base)
        if self.visible("login-view"):
            self.log_in_through_form(email)
        self.wait_for(lambda: self.visible("app-view"), message="the map and list did not appear after login")

    def markers(self):
        return self.driver.find_elements(By.CSS_SELECTOR, "#map .leaflet-marker-icon")

    def wait_for_popup_of(self, name):
        """The open popup, once it shows `name`: it fades in, and WebDriver reads no text while it is transparent."""
        def shown():
            popups = self.driver.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content .popup")
            return popups[0] if popups and popups[0].find_element(By.CSS_SELECTOR, ".popup-name").text == name else None
        return self.wait_for(shown, message=f"no popup showing {name}")

    def wait_for_markers(self, count, timeout=10):
        self.wait_for(lambda: len(self.markers()) == count, timeout,
                      f"expected {count} markers, saw {len(self.markers())}")

    def list_rows(self):
        return [{
            "name": row.find_element(By.CSS_SELECTOR, ".row-name").get_attribute("textContent"),
            "place": row.find_element(By.CSS_SELECTOR, ".row-place").get_attribute("textContent"),
            "link": row.find_element(By.CSS_SELECTOR, ".row-link").get_attribute("textContent"),
            "age": row.find_element(By.CSS_SELECTOR, ".row-age").get_attribute("textContent"),
        } for row in self.driver.find_elements(By.CSS_SELECTOR, "#pin-list .row")]

    def show_tab(self, name):
        self.by_id(f"tab-{name}").click()
        self.wait_for(lambda: self.visible(f"panel-{name}"))

    def collect_log(self):
        entries = self.driver.get_log("browser")
        type(self).browser_log.extend(entries)
        return entries

    def assert_no_script_ran_and_no_csp_violation(self):
        violations = self.driver.execute_script("return window.__cspViolations")
        alerts = self.driver.execute_script("return window.__alerts")
        self.assertEqual(violations, [], "the browser reported CSP violations")
        self.assertEqual(alerts, [], "a script opened a dialog")
        csp_lines = [entry["message"] for entry in self.collect_log() if "Content Security Policy" in entry["message"]]
        self.assertEqual(csp_lines, [], "the browser log mentions the Content Security Policy")
        try:
            alert = self.driver.switch_to.alert
            self.fail(f"an alert is open: {alert.text}")
        except NoAlertPresentException:
            pass

    def screenshot(self, name):
        self.driver.save_screenshot(os.path.join(OUTPUT, f"{name}.png"))

    def assert_accessible(self, view):
        """axe-core's audit of the page as it is now, every rule on."""
        axe = Axe(self.driver)
        if not self.driver.execute_script("return typeof window.axe === 'object'"):
            axe.inject()
        violations = axe.run()["violations"]
        self.assertEqual(violations, [], f"{view}: {axe.report(violations)}")

    def marker_names(self):
        """The names on the map's markers, sorted; read in one go, as the page may be replacing them."""
        return sorted(self.driver.execute_script(
            "return [...document.querySelectorAll('#map .leaflet-marker-icon')].map((marker) => marker.title)"))

    def type_moment(self, moment):
        """Types a moment (milliseconds since 1970, whole seconds) into the time control's date and time field,
        as the browser's en-US locale shows it: month, day, year, then hours, minutes, seconds, AM or PM."""
        field = self.by_id("time-moment")
        month, day, year, hours, minutes, seconds = self.driver.execute_script(
            "const d = new Date(arguments[0]); arguments[1].focus();"
            "return [d.getMonth() + 1, d.getDate(), d.getFullYear(), d.getHours(), d.getMinutes(), d.getSeconds()];",
            moment, field)
        field.send_keys(f"{month:02}{day:02}{year}" + Keys.ARROW_RIGHT
                        + f"{hours % 12 or 12:02}{minutes:02}{seconds:02}" + ("PM" if hours >= 12 else "AM"))

    def wait_for_map_at(self, moment, message=""):
        """Waits until the map and the list show the pins the server had at that moment; returns them."""
        expected = pins(at=moment)
        names = sorted(name(pin) for pin in expected)
        self.wait_for(lambda: self.marker_names() == names and [row["name"] for row in self.list_rows()] == [name(p) for p in expected],
                      message=message or f"the map does not show the pins at {iso(moment)}: {self.marker_names()} != {names}")
        return expected

    def places_of(self, *names):
        """The place each of these students' rows shows in the list tab, as seen."""
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#pin-list .row")
        return {row.find_element(By.CSS_SELECTOR, ".row-name").text: row.find_element(By.CSS_SELECTOR, ".row-place").text
                for row in rows if row.find_element(By.CSS_SELECTOR, ".row-name").text in names}

    def history_entries(self):
        return [{
            "event": item.get_attribute("data-event"),
            "at": item.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime"),
            "when": item.find_element(By.CSS_SELECTOR, "time").text,
            "what": item.find_element(By.CSS_SELECTOR, ".history-what").text,
            "lines": [line.text for line in item.find_elements(By.CSS_SELECTOR, ".history-changes li")],
        } for item in self.driver.find_elements(By.CSS_SELECTOR, "#history-events > li")]

    def open_history_from_popup(self, student):
        next(m for m in self.markers() if m.get_attribute("title") == student).click()
        self.wait_for_popup_of(student).find_element(By.CSS_SELECTOR, ".popup-history").click()
        self.wait_for(lambda: self.visible("history-dialog") and self.history_entries(), message="no history shown")

    def open_history_from_list(self, object_id):
        self.driver.find_element(By.CSS_SELECTOR, f"#pin-list li[data-object-id='{object_id}'] .row-history").click()
        self.wait_for(lambda: self.visible("history-dialog") and self.history_entries(), message="no history shown")

    def assert_showing_the_past(self):
        self.assertIn("past", self.by_id("time-control").get_attribute("class").split())
        self.assertEqual(self.text("time-status"), "The past: new pins are not shown")
        self.assertEqual(self.text("live-status"), "Paused")
        self.assertTrue(self.visible("time-now"), "no way back to now")

    # Tests, in the order a student meets the page

    def test_01_login_errors_tell_apart_wrong_password_throttling_and_no_network(self):
        self.driver.delete_all_cookies()
        self.open_page()
        self.assertTrue(self.visible("login-form"))
        self.screenshot("desktop-login")
        self.log_in_through_form("ada@example.com", "wrong password")
        self.wait_for(lambda: self.text("login-error") == "Wrong email or password.")
        self.assertFalse(self.visible("app-view"))

        # An account the operator disabled is told so (with the right password only), not "wrong password".
        sign_up("disabled@example.com", "Dis", "Abled")
        subprocess.run([os.path.join(os.environ["STACK_BIN"], "auth-gateway"), "accounts", "disable", "disabled@example.com"],
                       check=True, capture_output=True)
        self.log_in_through_form("disabled@example.com")
        self.wait_for(lambda: self.text("login-error")
                      == "This account has been disabled; ask the people who run this server to enable it.",
                      message="a disabled account's login was not told apart")
        self.assertFalse(self.visible("app-view"))

        for _ in range(5):
            api("POST", "/v1/session", {"udacity": {"username": "throttled@example.com", "password": "nope"}})
        self.log_in_through_form("throttled@example.com", "nope")
        self.wait_for(lambda: self.text("login-error").startswith("Too many attempts. Try again in "),
                      message="throttling not shown")
        self.assertRegex(self.text("login-error"), r"Try again in \d+ (second|minute)s?\.$")

        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        try:
            self.log_in_through_form("ada@example.com")
            self.wait_for(lambda: self.text("login-error").startswith("Cannot reach the server."))
        finally:
            self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    def test_02_login_shows_one_marker_per_pin_popups_and_the_list(self):
        self.driver.delete_all_cookies()
        self.open_page()
        self.log_in_through_form("ada@example.com")
        self.wait_for(lambda: self.visible("app-view"))
        expected = pins()
        self.wait_for_markers(len(expected))
        self.wait_for(lambda: self.text("live-status") == "Live", message="the live indicator never said Live")

        grace = next(pin for pin in expected if pin["firstName"] == "Grace")
        marker = next(m for m in self.markers() if m.get_attribute("title") == "Grace Hopper")
        marker.click()
        popup = self.wait_for_popup_of("Grace Hopper")
        link = popup.find_element(By.CSS_SELECTOR, "a.popup-link")
        self.assertEqual(link.text, grace["mediaURL"])
        self.assertEqual(link.get_attribute("target"), "_blank")
        self.assertEqual(set(link.get_attribute("rel").split()), {"noopener", "noreferrer"})
        self.screenshot("desktop-map")

        before = set(self.driver.window_handles)
        link.click()
        self.wait_for(lambda: len(self.driver.window_handles) == len(before) + 1, message="the link opened no new tab")
        original = self.driver.current_window_handle
        self.driver.switch_to.window((set(self.driver.window_handles) - before).pop())
        self.wait_for(lambda: self.driver.current_url == grace["mediaURL"])
        self.assertIsNone(self.driver.execute_script("return window.opener"))
        self.assertEqual(self.driver.execute_script("return document.referrer"), "")
        self.driver.close()
        self.driver.switch_to.window(original)

        # By keyboard: a marker takes the focus and Enter opens its popup; the tabs move with the arrow keys.
        linus = next(m for m in self.markers() if m.get_attribute("title") == "Linus Torvalds")
        self.assertEqual(linus.get_attribute("tabindex"), "0")
        linus.send_keys(Keys.ENTER)
        self.wait_for_popup_of("Linus Torvalds")
        self.by_id("tab-map").send_keys(Keys.ARROW_RIGHT)
        self.wait_for(lambda: self.visible("panel-list"))
        self.assertEqual(self.by_id("tab-list").get_attribute("aria-selected"), "true")
        rows = self.list_rows()
        self.assertEqual([row["name"] for row in rows], [f"{p['firstName']} {p['lastName']}" for p in expected])
        self.assertEqual([row["place"] for row in rows], [p["mapString"] for p in expected])
        self.assertEqual([row["link"] for row in rows], [p["mediaURL"] for p in expected])
        self.assertTrue(all(row["age"] == "just now" or row["age"].endswith("min ago") for row in rows))
        self.screenshot("desktop-list")
        self.show_tab("map")

        # Refresh downloads the list again: the same pins, and no error.
        self.by_id("refresh").click()
        self.wait_for(lambda: self.by_id("refresh").is_enabled())
        self.assertFalse(self.visible("notice"), f"Refresh showed: {self.text('notice')}")
        self.wait_for_markers(len(expected))

    def test_03_posting_by_place_with_preview_choosing_a_candidate_then_overwriting(self):
        self.ensure_logged_in()
        count = len(pins())
        self.wait_for_markers(count)
        self.by_id("add-pin").click()
        self.wait_for(lambda: self.visible("post-dialog"))
        place, link = self.by_id("post-place"), self.by_id("post-link")

        place.send_keys("Springfield")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.text("find-error") == "Enter a link to share.")
        link.send_keys("javascript:alert(1)")
        self.by_id("find-submit").click()
        self.wait_for(lambda: "is not a web link" in self.text("find-error"))
        link.clear()
        link.send_keys("example.com/ada")
        place.clear()
        place.send_keys("Xqzzyv Plokk")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.text("find-error").startswith('No place matches "Xqzzyv Plokk".'))

        # A link longer than the server takes (the page's own limit removed): the server's refusal is shown.
        self.driver.execute_script("arguments[0].removeAttribute('maxlength'); arguments[0].value = arguments[1]",
                                   link, "https://example.com/" + "a" * 2100)
        place.clear()
        place.send_keys("Springfield")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.visible("confirm-form"))
        self.by_id("confirm-submit").click()
        self.wait_for(lambda: self.text("confirm-error").startswith("The server refused your pin: mediaURL must be at most"))
        self.assertTrue(self.visible("post-dialog"))
        self.by_id("confirm-back").click()
        self.wait_for(lambda: self.visible("find-form"))
        link.clear()
        link.send_keys("example.com/ada")

        self.by_id("find-submit").click()
        self.wait_for(lambda: self.visible("confirm-form"), message="no preview after Find on the map")
        candidates = self.driver.find_elements(By.CSS_SELECTOR, "#candidates input[type=radio]")
        self.assertGreaterEqual(len(candidates), 2)
        self.assertTrue(candidates[0].is_selected())
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#preview-map .leaflet-marker-icon"))
        _, found = api("GET", "/v1/geocode?q=Springfield&limit=5")
        second = found["results"][1]
        labels = [label.text for label in self.driver.find_elements(By.CSS_SELECTOR, "#candidates label")]
        self.assertEqual(labels, [c["displayName"] for c in found["results"]])
        self.driver.find_element(By.CSS_SELECTOR, "label[for=candidate-1]").click()
        self.assertTrue(candidates[1].is_selected())
        self.screenshot("desktop-post-preview")
        self.by_id("confirm-submit").click()
        self.wait_for(lambda: not self.visible("post-dialog"), message="the dialog stayed open after Finish")
        self.wait_for_markers(count + 1)
        mine = [p for p in pins() if p["firstName"] == "Ada"]
        self.assertEqual(len(mine), 1)
        self.assertEqual((mine[0]["mapString"], mine[0]["mediaURL"]), ("Springfield", "https://example.com/ada"))
        self.assertAlmostEqual(mine[0]["latitude"], second["latitude"], places=4)
        self.assertAlmostEqual(mine[0]["longitude"], second["longitude"], places=4)

        self.by_id("add-pin").click()
        self.wait_for(lambda: self.visible("post-dialog"))
        self.wait_for(lambda: self.by_id("post-place").get_attribute("value") == "Springfield")
        place.clear()
        place.send_keys("Berlin, Germany")
        link.clear()
        link.send_keys("https://example.com/ada/berlin" + Keys.ENTER)
        self.wait_for(lambda: self.visible("confirm-form"))
        self.by_id("confirm-submit").click()
        self.wait_for(lambda: self.visible("question-dialog"), message="overwriting was not asked")
        self.assertEqual(self.text("question-text"), 'You already have a pin at "Springfield". Replace it with "Berlin, Germany"?')
        self.by_id("question-yes").click()
        self.wait_for(lambda: not self.visible("post-dialog"))
        self.wait_for(lambda: [p["mapString"] for p in pins() if p["firstName"] == "Ada"] == ["Berlin, Germany"])
        self.assertEqual(pins()[0]["objectId"], mine[0]["objectId"], "the pin was overwritten, not added")
        self.wait_for_markers(count + 1)
        self.show_tab("list")
        self.wait_for(lambda: self.list_rows()[0]["place"] == "Berlin, Germany")
        self.show_tab("map")

    def test_04_another_students_post_appears_live_without_a_reload(self):
        self.ensure_logged_in()
        count = len(pins())
        self.wait_for_markers(count)
        self.wait_for(lambda: self.text("live-status") == "Live")
        self.driver.execute_script("window.__sameDocument = true")
        session = self.students["linus@example.com"]
        posted_at = time.monotonic()
        post_pin(session, "Helsinki, Finland", f"{GATEWAY}/healthz?who=linus2", 60.17, 24.94)
        self.wait_for_markers(count + 1, timeout=2)
        elapsed = time.monotonic() - posted_at
        self.assertTrue(self.driver.execute_script("return window.__sameDocument === true"), "the page reloaded")
        self.show_tab("list")
        self.assertEqual(self.list_rows()[0]["place"], "Helsinki, Finland")
        self.show_tab("map")
        print(f"\n  live post shown after {elapsed * 1000:.0f} ms", end=" ")

    def test_05_a_hostile_name_renders_literally_and_runs_nothing(self):
        self.ensure_logged_in()
        self.wait_for_markers(len(pins()))
        marker = next(m for m in self.markers() if m.get_attribute("title") == f"{HOSTILE} Mallory")
        marker.click()
        self.wait_for_popup_of(f"{HOSTILE} Mallory")
        self.show_tab("list")
        self.assertIn(f"{HOSTILE} Mallory", [row["name"] for row in self.list_rows()])
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "img[src=x], img[src$='/x']"), [])
        self.assert_no_script_ran_and_no_csp_violation()
        self.show_tab("map")

    def test_06_without_tiles_the_pins_still_show_and_no_error_dialog(self):
        self.ensure_logged_in(base=GATEWAY_NO_TILES)
        self.wait_for_markers(len(pins()))
        self.wait_for(lambda: self.text("notice").startswith("Map tiles cannot be loaded right now"),
                      message="no notice about the tiles")
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "dialog[open]"), [])
        self.assertTrue("tiles-offline" in self.by_id("map").get_attribute("class"))
        self.screenshot("desktop-map-without-tiles")
        self.assert_no_script_ran_and_no_csp_violation()

    def test_07_usable_on_a_360_px_phone(self):
        self.driver.set_window_size(360, 740)
        try:
            self.ensure_logged_in()
            self.wait_for_markers(len(pins()))
            for element_id in ["refresh", "add-pin", "account-button", "log-out", "tab-map", "tab-list",
                               "time-moment", "time-slider", "time-play"]:
                box = self.by_id(element_id).rect
                self.assertTrue(self.by_id(element_id).is_displayed())
                self.assertLessEqual(box["x"] + box["width"], 360, f"{element_id} is cut off")
            width = self.driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(width, 360, "the page scrolls sideways")
            self.screenshot("phone-map")
            self.show_tab("list")
            self.screenshot("phone-list")
            self.show_tab("map")
            self.by_id("add-pin").click()
            self.wait_for(lambda: self.visible("post-dialog"))
            self.screenshot("phone-post")
            self.by_id("find-cancel").click()
            self.wait_for(lambda: not self.visible("post-dialog"))
        finally:
            self.driver.set_window_size(1280, 800)

    def test_08_log_out_returns_to_the_login_and_ends_the_session(self):
        self.ensure_logged_in()
        session = self.driver.get_cookie(SESSION_COOKIE)["value"]
        status, _ = api("GET", "/v1/users/me", session=session)
        self.assertEqual(status, 200)
        self.by_id("log-out").click()
        self.wait_for(lambda: self.visible("login-form"), message="log out did not show the login form")
        self.assertFalse(self.visible("app-view"))
        status, _ = api("POST", "/v1/StudentLocation", {
            "mapString": "Paris", "mediaURL": "https://example.com", "latitude": 48.85, "longitude": 2.35}, session=session)
        self.assertEqual(status, 401, "the session still works after logging out")
        self.open_page()
        self.assertTrue(self.visible("login-form"), "a reload after logging out shows the map")

    def test_09_sign_up_form_creates_an_account_and_logs_in(self):
        self.driver.delete_all_cookies()
        self.open_page()
        self.by_id("show-sign-up").click()
        self.wait_for(lambda: self.visible("sign-up-form"))
        for element_id, value in [("sign-up-first", "Hedy"), ("sign-up-last", "Lamarr"),
                                  ("sign-up-email", "hedy@example.com"), ("sign-up-password", PASSWORD)]:
            self.by_id(element_id).send_keys(value)
        self.by_id("sign-up-submit").click()
        self.wait_for(lambda: self.visible("app-view"), message="sign-up did not log in")
        self.wait_for_markers(len(pins()))
        self.assertEqual(self.text("add-pin"), "Add my pin")
        self.assert_no_script_ran_and_no_csp_violation()

    def test_10_every_view_passes_an_accessibility_audit(self):
        known = self.known_history()
        self.driver.delete_all_cookies()
        self.open_page()
        self.assert_accessible("login")
        self.by_id("show-sign-up").click()
        self.wait_for(lambda: self.visible("sign-up-form"))
        self.assert_accessible("sign-up")
        self.by_id("sign-up-cancel").click()
        self.log_in_through_form("ada@example.com")
        self.wait_for(lambda: self.visible("app-view"))
        self.wait_for_markers(len(pins()))
        self.assert_accessible("map")
        self.show_tab("list")
        self.assert_accessible("list")
        self.show_tab("map")

        self.by_id("add-pin").click()
        self.wait_for(lambda: self.visible("post-dialog"))
        if any(name(pin) == "Ada Lovelace" for pin in pins()):
            self.wait_for(lambda: self.by_id("post-place").get_attribute("value"), message="Ada's pin was not filled in")
        else:
            self.by_id("post-place").send_keys("Berlin, Germany")
            self.by_id("post-link").send_keys("https://example.com/ada")
        self.assert_accessible("posting: place and link")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.visible("confirm-form"))
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#preview-map .leaflet-marker-icon"))
        self.assert_accessible("posting: the place found")
        self.by_id("confirm-cancel").click()
        self.wait_for(lambda: not self.visible("post-dialog"))

        self.type_moment(known["after"][1])
        self.wait_for_map_at(known["after"][1])
        self.assert_accessible("the map at a past moment")
        self.show_tab("list")
        self.assert_accessible("the list at a past moment")
        self.open_history_from_list(known["max_pin"])
        self.assert_accessible("a pin's history")
        self.by_id("history-close").click()
        self.show_tab("map")
        self.by_id("time-now").click()

        self.by_id("account-button").click()
        self.wait_for(lambda: self.visible("account-menu"))
        self.assert_accessible("the account menu")
        self.by_id("erase-account").click()
        self.wait_for(lambda: self.visible("question-dialog"))
        self.assert_accessible("the question before erasing")
        self.by_id("question-no").click()

    def test_11_the_map_at_a_past_moment_shows_the_pins_of_that_moment_and_live_changes_wait(self):
        known = self.known_history()
        self.ensure_logged_in()
        self.wait_for_markers(len(pins()))
        self.wait_for(lambda: self.text("live-status") == "Live")
        self.assertEqual(self.text("time-status"), "Now, live")
        self.assertFalse(self.visible("time-now"))
        after_kay_posted, after_max_posted, after_kay_moved, after_max_deleted = known["after"]
        for moment, places in [
            (after_kay_posted, {"Kay Mensah": "Lima, Peru"}),
            (after_max_posted, {"Kay Mensah": "Lima, Peru", "Max Planck": "Nairobi, Kenya"}),
            (after_kay_moved, {"Kay Mensah": "Oslo, Norway", "Max Planck": "Nairobi, Kenya"}),
            (after_max_deleted, {"Kay Mensah": "Oslo, Norway"}),
        ]:
            self.type_moment(moment)
            self.wait_for_map_at(moment)
            self.assert_showing_the_past()
            self.show_tab("list")
            self.assertEqual(self.places_of("Kay Mensah", "Max Planck"), places, f"the list at {iso(moment)}")
            self.assertTrue(self.by_id("pin-list").get_attribute("aria-label").startswith("Pins at "))
            self.show_tab("map")
            if moment == after_kay_moved:
                next(m for m in self.markers() if m.get_attribute("title") == "Kay Mensah").click()
                self.wait_for_popup_of("Kay Mensah")
                self.wait_for(lambda: self.driver.execute_script(
                    "return getComputedStyle(document.querySelector('.leaflet-popup')).opacity") == "1")
                self.screenshot("desktop-time-control")

        # A pin posted now stays off the past map, and is there once the map is back to now.
        shown = self.marker_names()
        post_pin(self.students["linus@example.com"], "Reykjavik, Iceland", f"{GATEWAY}/healthz?who=linus3", 64.15, -21.94)
        time.sleep(1.0)
        self.assertEqual(self.marker_names(), shown, "a live change reached the past map")
        self.assertNotIn("Reykjavik, Iceland", [row["place"] for row in self.list_rows()])
        self.by_id("time-now").click()
        self.wait_for(lambda: self.marker_names() == sorted(name(pin) for pin in pins()), message="back to now did not show the present")
        self.assertIn("Reykjavik, Iceland", [row["place"] for row in self.list_rows()])
        self.assertEqual(self.text("time-status"), "Now, live")
        self.assertEqual(self.text("live-status"), "Live")
        self.assertNotIn("past", self.by_id("time-control").get_attribute("class").split())

    def test_12_play_steps_from_the_first_pin_to_now_one_read_at_a_time_and_pauses(self):
        self.ensure_logged_in()
        self.wait_for_markers(len(pins()))
        # The first pin posted is still on the map: the playback begins with it.
        first = min(milliseconds(pin["createdAt"]) for pin in pins())
        step = (time.time() * 1000 - first) / 50
        self.by_id("time-play").click()
        self.wait_for(lambda: self.text("time-play") == "Pause", message="Play did not start")
        moments = []

        def moved_on():
            value = self.by_id("time-moment").get_attribute("value")
            if not moments or moments[-1] != value:
                moments.append(value)
            return len(moments) >= 4
        self.wait_for(moved_on, message="the moment did not move while playing")
        self.assertEqual(moments, sorted(moments), "playing went back in time")
        self.by_id("time-play").click()
        self.wait_for(lambda: self.text("time-play") == "Play")
        paused = self.by_id("time-moment").get_attribute("value")
        reads = self.driver.execute_script("return window.__pastReads.started")
        time.sleep(0.6)
        self.assertEqual(self.by_id("time-moment").get_attribute("value"), paused, "the moment moved after Pause")
        self.assertEqual(self.driver.execute_script("return window.__pastReads.started"), reads, "reads went on after Pause")
        self.assert_showing_the_past()
        started = datetime.datetime.fromisoformat(moments[0]).timestamp() * 1000
        self.assertTrue(first - 1000 < started <= first + step, f"playing began at {moments[0]}, not at the first pin")

        self.by_id("time-play").click()
        self.wait_for(lambda: self.text("time-status") == "Now, live", timeout=20, message="playing did not reach now")
        self.assertEqual(self.text("time-play"), "Play")
        self.wait_for_markers(len(pins()))
        reads = self.driver.execute_script("return window.__pastReads")
        self.assertGreaterEqual(reads["started"], 10)
        self.assertEqual(reads["most"], 1, "more than one read of the past was in flight at once")

    def test_13_a_pins_history_lists_its_events_oldest_first_and_shows_the_map_then(self):
        known = self.known_history()
        self.ensure_logged_in()
        self.wait_for_markers(len(pins()))
        self.open_history_from_popup("Kay Mensah")
        self.assertEqual(self.text("history-title"), "History of Kay Mensah’s pin")
        link = "https://example.com/kay"
        entries = self.history_entries()
        self.assertEqual([(e["event"], e["what"]) for e in entries], [("posted", "Posted"), ("moved", "Moved")])
        self.assertEqual([milliseconds(e["at"]) for e in entries], [known["posted_kay"], known["moved_kay"]])
        self.assertTrue(all(e["when"] for e in entries), "an event without its time shown")
        self.assertEqual(entries[0]["lines"], ["Place: Lima, Peru", f"Link: {link}"])
        self.assertEqual(entries[1]["lines"], [
            "Place changed from “Lima, Peru” to “Oslo, Norway”",
            "Latitude changed from -12.05 to 59.91",
            "Longitude changed from -77.04 to 10.75",
        ])

        # "See the map then" on the move: the map at that moment, where Max's pin, deleted since, still is.
        self.driver.find_elements(By.CSS_SELECTOR, "#history-events .history-see")[1].click()
        self.wait_for(lambda: not self.visible("history-dialog"))
        self.wait_for_map_at(known["moved_kay"])
        self.assert_showing_the_past()
        self.show_tab("list")
        self.assertEqual(self.places_of("Kay Mensah", "Max Planck"), {"Kay Mensah": "Oslo, Norway", "Max Planck": "Nairobi, Kenya"})
        self.open_history_from_list(known["max_pin"])
        self.assertEqual(self.text("history-title"), "History of Max Planck’s pin")
        entries = self.history_entries()
        self.assertEqual([(e["event"], e["what"]) for e in entries], [("posted", "Posted"), ("deleted", "Deleted by its owner")])
        self.assertEqual([milliseconds(e["at"]) for e in entries], [known["posted_max"], known["deleted_max"]])
        self.by_id("history-close").click()
        self.wait_for(lambda: not self.visible("history-dialog"))
        self.show_tab("map")
        self.by_id("time-now").click()
        self.wait_for_markers(len(pins()))

    def test_14_erasing_the_account_asks_first_and_cancel_keeps_everything(self):
        self.known_history()
        self.driver.delete_all_cookies()
        self.ensure_logged_in("kay@example.com")
        self.wait_for_markers(len(pins()))
        self.by_id("account-button").click()
        self.wait_for(lambda: self.visible("account-menu"))
        self.assertEqual(self.text("account-name"), "Logged in as Kay Mensah")
        self.by_id("erase-account").click()
        self.wait_for(lambda: self.visible("question-dialog"), message="erasing did not ask first")
        self.assertEqual(self.text("question-title"), "Erase your account?")
        question = self.text("question-text")
        for words in ["Kay Mensah", "every pin you have posted", "every past moment", "cannot be undone"]:
            self.assertIn(words, question)
        self.assertEqual(self.driver.switch_to.active_element.get_attribute("id"), "question-no", "the safe answer is not focused")
        self.screenshot("desktop-erase-question")
        self.by_id("question-no").click()
        self.wait_for(lambda: not self.visible("question-dialog"))
        self.assertTrue(self.visible("app-view"))
        status, _ = api("GET", "/v1/users/me", session=self.driver.get_cookie(SESSION_COOKIE)["value"])
        self.assertEqual(status, 200, "the session ended though erasing was cancelled")
        self.assertIn("Kay Mensah", [name(pin) for pin in pins()])
        self.assertIn("Kay Mensah", self.marker_names())

    def test_15_erasing_the_account_logs_out_and_its_pins_leave_the_map_now_and_then(self):
        known = self.known_history()
        self.driver.delete_all_cookies()
        self.ensure_logged_in("kay@example.com")
        self.wait_for_markers(len(pins()))
        session = self.driver.get_cookie(SESSION_COOKIE)["value"]
        self.by_id("account-button").click()
        self.by_id("erase-account").click()
        self.wait_for(lambda: self.visible("question-dialog"))
        self.by_id("question-yes").click()
        self.wait_for(lambda: self.visible("login-form"), message="erasing did not return to the login")
        self.assertFalse(self.visible("app-view"))
        self.assertEqual(self.text("login-message"), "Your account and your pin have been erased.")
        self.assertFalse(self.visible("login-error"))
        status, _ = api("GET", "/v1/users/me", session=session)
        self.assertNotEqual(status, 200, "the session still works after erasing")

        self.log_in_through_form("kay@example.com")
        self.wait_for(lambda: self.text("login-error") == "Wrong email or password.", message="the erased account still logs in")
        self.log_in_through_form("ada@example.com")
        self.wait_for(lambda: self.visible("app-view"))
        self.wait_for_markers(len(pins()))
        self.assertNotIn("Kay Mensah", self.marker_names())
        self.type_moment(known["after"][2])
        self.wait_for_map_at(known["after"][2])
        self.assertNotIn("Kay Mensah", self.marker_names(), "the erased student is still on the past map")
        self.assertIn("Max Planck", self.marker_names(), "another student's past changed")
        self.by_id("time-now").click()

    def test_16_log_in_with_the_provider_post_a_pin_under_its_names_and_log_out(self):
        student = f"{PROVIDER_GIVEN} {PROVIDER_FAMILY}"
        self.driver.delete_all_cookies()
        self.open_page()
        self.assertTrue(self.visible("login-form"), "the email and password form is gone")
        self.assertEqual(self.text("provider-sign-in-link"), f"Log in with {PROVIDER_NAME}")
        self.by_id("provider-sign-in-link").click()
        provider_origin = PROVIDER.removesuffix("/openid")
        self.wait_for(lambda: self.driver.current_url.startswith(provider_origin) and self.visible("username"),
                      message="the provider's login page did not open")
        self.by_id("username").send_keys(PROVIDER_USERNAME)
        self.by_id("password").send_keys(PROVIDER_PASSWORD)
        self.by_id("login-submit").click()
        self.wait_for(lambda: self.driver.current_url == GATEWAY + "/" and self.visible("app-view"), timeout=20,
                      message="signing in at the provider did not end on the map")
        count = len(pins())
        self.wait_for_markers(count)
        self.by_id("account-button").click()
        self.wait_for(lambda: self.visible("account-menu"))
        self.assertEqual(self.text("account-name"), f"Logged in as {student}")
        self.by_id("account-button").click()

        self.by_id("add-pin").click()
        self.wait_for(lambda: self.visible("post-dialog"))
        self.by_id("post-place").send_keys("Berlin, Germany")
        self.by_id("post-link").send_keys("https://example.com/hypatia")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.visible("confirm-form"), message="no preview after Find on the map")
        self.by_id("confirm-submit").click()
        self.wait_for(lambda: not self.visible("post-dialog"), message="the dialog stayed open after Finish")
        self.wait_for_markers(count + 1)
        self.assertIn(student, self.marker_names())
        self.assertEqual([(p["mapString"], p["mediaURL"]) for p in pins() if name(p) == student],
                         [("Berlin, Germany", "https://example.com/hypatia")])
        self.show_tab("list")
        self.assertEqual(self.list_rows()[0]["name"], student)
        self.show_tab("map")

        session = self.driver.get_cookie(SESSION_COOKIE)["value"]
        self.by_id("log-out").click()
        self.wait_for(lambda: self.visible("login-form"), message="log out did not show the login form")
        self.assertTrue(self.visible("provider-sign-in-link"))
        status, _ = api("GET", "/v1/users/me", session=session)
        self.assertNotEqual(status, 200, "the session still works after logging out")

    def test_17_a_sign_in_not_started_in_this_browser_is_refused_with_a_way_back(self):
        self.driver.delete_all_cookies()
        self.driver.get(GATEWAY + "/v1/auth/oidc/callback?code=x&state=y")
        self.assertEqual(self.text("reason"), "This sign-in was not started in this browser; start again from the login page.")
        self.screenshot("desktop-sign-in-refused")
        self.driver.find_element(By.LINK_TEXT, "Back to On The Map").click()
        self.wait_for(lambda: self.visible("login-form"), message="the way back did not show the login")
        self.assertIsNone(self.driver.get_cookie(SESSION_COOKIE))

    def test_18_without_a_provider_the_login_offers_none(self):
        self.driver.delete_all_cookies()
        self.open_page(GATEWAY_NO_TILES)
        self.assertTrue(self.visible("login-form"))
        self.assertFalse(self.visible("provider-sign-in"))


    # Class maps: a teacher's map at /maps/{slug}/, its invite link and QR code, members and moderation

    @contextlib.contextmanager
    def in_second_browser(self):
        """The helpers drive a second browser meanwhile (a student beside the teacher), with its own cookies."""
        if not type(self).class_browser:
            type(self).class_browser = new_browser()
        self.driver = type(self).class_browser
        try:
            yield
        finally:
            del self.driver

    def open_class_map(self, email):
        """The class map's page, logged in as `email` (the account logged in already, or through the form)."""
        self.driver.get(CLASS_PAGE)
        self.wait_for(lambda: self.visible("login-view") or self.visible("app-view") or self.visible("map-message-view"))
        if self.visible("login-view"):
            self.log_in_through_form(email)
        self.wait_for(lambda: self.visible("app-view"), message=f"the class map did not open for {email}")
        self.wait_for(lambda: self.text("live-status") == "Live", message="the class map's live feed did not connect")

    def maps_in_switcher(self):
        """The switcher's maps as (name, role note, whether it is the map shown), once it has listed them."""
        if self.by_id("maps-menu").is_displayed():
            self.by_id("maps-button").click()
        self.by_id("maps-button").click()
        self.wait_for(lambda: self.visible("maps-menu") and self.by_id("maps-list").get_attribute("aria-busy") == "false",
                      message="the switcher did not list the maps")

        def listed():
            return [(item.find_element(By.TAG_NAME, "a").text,
                     item.find_element(By.CSS_SELECTOR, ".map-role").text,
                     item.find_element(By.TAG_NAME, "a").get_attribute("aria-current") == "page")
                    for item in self.driver.find_elements(By.CSS_SELECTOR, "#maps-list li")]
        return listed()

    def close_switcher(self):
        if self.visible("maps-menu"):
            self.by_id("maps-button").click()

    def open_management(self):
        self.maps_in_switcher()
        self.by_id("manage-map").click()
        self.wait_for(lambda: self.visible("manage-dialog"), message="Manage this map did not open")

    def session_of_this_browser(self):
        return self.driver.get_cookie(SESSION_COOKIE)["value"]

    def test_19_a_teacher_creates_a_members_only_map_and_the_switcher_lists_it(self):
        self.classroom()
        self.driver.delete_all_cookies()
        self.ensure_logged_in(TEACHER)
        self.assertEqual(self.maps_in_switcher(), [("On The Map", "everyone", True)])
        self.assertFalse(self.visible("manage-map"), "the default map offered managing")
        self.by_id("my-maps").click()
        self.wait_for(lambda: self.visible("maps-dialog") and self.visible("my-maps-empty"), message="My maps did not open")
        self.by_id("new-map-name").send_keys(CLASS_NAME)
        self.assertEqual(self.by_id("new-map-slug").get_attribute("value"), CLASS_SLUG, "no address suggested from the name")
        self.assertEqual(self.text("new-map-slug-preview"), CLASS_SLUG)
        Select(self.by_id("new-map-read")).select_by_visible_text("Only its members")
        Select(self.by_id("new-map-post")).select_by_visible_text("Only its members")
        self.assert_accessible("my maps and creating a map")
        self.screenshot("desktop-create-map")
        self.by_id("create-map-submit").click()
        self.wait_for(lambda: self.driver.current_url == CLASS_PAGE and self.visible("app-view"), message="the new map did not open")
        self.wait_for(lambda: self.text("live-status") == "Live")
        self.assertEqual(self.text("map-name"), CLASS_NAME)
        self.assertEqual(self.driver.title, f"{CLASS_NAME} · On The Map")
        self.assertEqual(self.markers(), [], "the new map shows pins")
        self.assertEqual(self.maps_in_switcher(), [("On The Map", "everyone", False), (CLASS_NAME, "owner", True)])
        self.assertTrue(self.visible("manage-map"), "its owner cannot manage the map")
        self.assert_accessible("the map switcher")
        self.close_switcher()
        status, answer = api("GET", f"/v1/maps/{CLASS_SLUG}", session=self.session_of_this_browser())
        self.assertEqual(status, 200, answer)
        self.assertEqual((answer["name"], answer["read"], answer["post"], answer["role"]), (CLASS_NAME, "members", "members", "owner"))

    def test_20_the_invite_links_qr_code_reads_as_the_link_on_screen_and_on_a_projector(self):
        self.open_class_map(TEACHER)
        self.open_management()
        Select(self.by_id("invite-expires")).select_by_visible_text("1 week")
        self.by_id("invite-create").click()
        self.wait_for(lambda: self.visible("invite") and self.by_id("invite-url").get_attribute("value"), message="no invite link")
        link = self.by_id("invite-url").get_attribute("value")
        self.assertRegex(link, rf"^{re.escape(CLASS_PAGE)}join/[A-Za-z0-9_-]{{22}}$")
        self.assertEqual(read_qr(self.by_id("invite-qr").screenshot_as_png), link, "the QR code on screen is not the link")
        self.wait_for(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "#invite-list li.manage-item")) == 1,
                      message="the new link is not listed")
        self.assertIn("works until", self.driver.find_element(By.CSS_SELECTOR, "#invite-list .manage-details").text)
        self.screenshot("desktop-manage-map")
        self.assert_accessible("managing a map")

        self.by_id("invite-project").click()
        self.wait_for(lambda: self.visible("qr-dialog"))
        self.assertEqual(self.text("qr-title"), f"Join {CLASS_NAME}")
        self.assertEqual(self.text("qr-url"), link)
        big = self.by_id("qr-big")
        shortest = self.driver.execute_script("return Math.min(innerWidth, innerHeight)")
        self.assertGreaterEqual(big.rect["width"], 0.7 * shortest, "the projector's QR code is small")
        self.assertEqual(read_qr(big.screenshot_as_png), link, "the projector's QR code is not the link")
        self.screenshot("desktop-invite-projector")
        self.assert_accessible("the invite for a projector")
        self.by_id("qr-close").click()
        self.by_id("manage-close").click()
        self.wait_for(lambda: not self.visible("manage-dialog"))
        type(self).invite = link
        self.assert_no_script_ran_and_no_csp_violation()

    def test_21_the_qr_encoder_picks_the_smallest_version_and_reads_back_up_to_version_40(self):
        self.open_page()
        filler = f"{CLASS_PAGE}join/" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_" * 80
        cases = [(level, version, filler[:capacity]) for level, capacities in QR_CAPACITY.items()
                 for version, capacity in capacities.items()]
        # One byte more than a version holds takes the next; a text that is not ASCII says it is UTF-8.
        cases += [(level, version + 1, filler[:capacity + 1]) for level, capacities in QR_CAPACITY.items()
                  for version, capacity in capacities.items() if version < 10]
        cases.append(("M", 1, "Zoë → 🗺"))
        self.driver.set_script_timeout(60)
        drawn = self.driver.execute_async_script("""
            const [cases, done] = [arguments[0], arguments[arguments.length - 1]];
            import('/web/js/qr.js').then(({ encode, drawOn }) => done(cases.map(([level, , text]) => {
              const modules = encode(text, { level });
              const canvas = document.createElement('canvas');
              drawOn(canvas, modules, 4);
              return { size: modules.length, png: canvas.toDataURL('image/png') };
            })), (error) => done({ error: String(error) }));
        """, cases)
        self.assertNotIn("error", drawn)
        for (level, version, text), symbol in zip(cases, drawn):
            self.assertEqual(symbol["size"], 17 + 4 * version, f"{len(text.encode())} bytes at level {level}")
            png = base64.b64decode(symbol["png"].split(",", 1)[1])
            self.assertEqual(read_qr(png), text, f"version {version}-{level} did not read back")

    def test_22_a_student_logs_in_from_the_invite_joins_posts_and_the_teacher_sees_it_live(self):
        self.assertTrue(self.invite, "no invite link from the test before")
        self.classroom()
        self.open_class_map(TEACHER)
        self.wait_for_markers(0)
        with self.in_second_browser():
            self.driver.delete_all_cookies()
            self.driver.get(self.invite)
            self.wait_for(lambda: self.visible("login-view"), message="the invite did not ask to log in")
            self.assertEqual(self.text("login-message"), "Log in, or sign up, to join this map.")
            self.log_in_through_form(STUDENT)
            self.wait_for(lambda: self.driver.current_url == CLASS_PAGE and self.visible("app-view"),
                          message="joining did not land on the class map")
            self.assertEqual(self.text("map-name"), CLASS_NAME)
            self.assertEqual(self.maps_in_switcher(), [("On The Map", "everyone", False), (CLASS_NAME, "member", True)])
            self.assertFalse(self.visible("manage-map"), "a member is offered managing the map")
            self.close_switcher()
            self.wait_for(lambda: self.text("live-status") == "Live")
            self.by_id("add-pin").click()
            self.wait_for(lambda: self.visible("post-dialog"))
            self.by_id("post-place").send_keys("Berlin, Germany")
            self.by_id("post-link").send_keys("https://example.com/linus")
            self.by_id("find-submit").click()
            self.wait_for(lambda: self.visible("confirm-form"), message="no preview after Find on the map")
            self.by_id("confirm-submit").click()
            self.wait_for(lambda: not self.visible("post-dialog"), message="the dialog stayed open after Finish")
            self.wait_for_markers(1)
            session = self.session_of_this_browser()
            self.assert_no_script_ran_and_no_csp_violation()
        self.wait_for_markers(1, timeout=3)
        self.assertEqual(self.marker_names(), ["Linus Torvalds"])
        status, answer = api("GET", f"/maps/{CLASS_SLUG}/v1/StudentLocation?limit=100", session=session)
        self.assertEqual(status, 200, answer)
        self.assertEqual([(name(p), p["mapString"]) for p in answer["results"]], [("Linus Torvalds", "Berlin, Germany")])
        self.assertNotIn("https://example.com/linus", [pin["mediaURL"] for pin in pins()], "the class map's pin is on the default map")

    def test_23_the_teacher_hides_the_pin_with_a_reason_and_the_student_no_longer_sees_it(self):
        self.open_class_map(TEACHER)
        self.wait_for_markers(1)
        with self.in_second_browser():
            self.open_class_map(STUDENT)
            self.wait_for_markers(1)
            self.show_tab("list")
            self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, ".row-hide"), [], "a member is offered hiding pins")
            self.show_tab("map")
        self.show_tab("list")
        self.driver.find_element(By.CSS_SELECTOR, "#pin-list .row-hide").click()
        self.wait_for(lambda: self.visible("hide-dialog"), message="Hide did not ask for a reason")
        self.assertIn("Linus Torvalds", self.text("hide-text"))
        self.by_id("hide-submit").click()
        self.wait_for(lambda: self.text("hide-error") == "Say why the pin is hidden.")
        self.assert_accessible("hiding a pin")
        self.by_id("hide-reason").send_keys("Not a place in this class")
        self.by_id("hide-submit").click()
        self.wait_for(lambda: not self.visible("hide-dialog"), message="the pin was not hidden")
        self.wait_for(lambda: self.list_rows() == [], message="the hidden pin is still listed")
        self.show_tab("map")
        self.wait_for_markers(0)
        with self.in_second_browser():
            self.wait_for_markers(0, timeout=3)
            self.driver.refresh()
            self.wait_for(lambda: self.visible("app-view"))
            self.wait_for(lambda: self.text("live-status") == "Live")
            self.assertEqual(self.markers(), [], "the hidden pin came back after a reload")
            session = self.session_of_this_browser()
        status, answer = api("GET", f"/maps/{CLASS_SLUG}/v1/StudentLocation?limit=100", session=session)
        self.assertEqual((status, answer["results"]), (200, []))

        self.open_management()
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#hidden-list .manage-item"), message="no hidden pin listed")
        hidden = self.driver.find_element(By.CSS_SELECTOR, "#hidden-list .manage-item")
        self.assertEqual(hidden.find_element(By.CSS_SELECTOR, ".manage-what").text, "Linus Torvalds")
        self.assertEqual(hidden.find_element(By.CSS_SELECTOR, ".hidden-reason").text, "Reason: Not a place in this class")
        self.screenshot("desktop-hidden-pins")

    def test_24_showing_a_hidden_pin_again_returns_it_to_everyone(self):
        self.open_class_map(TEACHER)
        with self.in_second_browser():
            self.open_class_map(STUDENT)
            self.wait_for_markers(0)
        self.open_management()
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#hidden-list .manage-item button"))
        self.driver.find_element(By.CSS_SELECTOR, "#hidden-list .manage-item button").click()
        self.wait_for(lambda: self.visible("hidden-empty"), message="the pin is still listed as hidden")
        self.by_id("manage-close").click()
        self.wait_for_markers(1)
        with self.in_second_browser():
            self.wait_for_markers(1, timeout=3)
            self.assertEqual(self.marker_names(), ["Linus Torvalds"])

    def test_25_the_members_page_approves_changes_a_role_and_removes(self):
        self.open_class_map(TEACHER)
        status, answer = api("PATCH", f"/v1/maps/{CLASS_SLUG}", {"approval": True}, session=self.session_of_this_browser())
        self.assertEqual(status, 200, answer)
        with self.in_second_browser():
            self.driver.delete_all_cookies()
            self.driver.get(self.invite)
            self.wait_for(lambda: self.visible("login-view"))
            self.log_in_through_form(LATECOMER)
            self.wait_for(lambda: self.visible("map-message-view"), message="joining with approval on showed no message")
            self.assertEqual(self.text("map-message-title"), "Waiting for approval")
            self.screenshot("desktop-waiting-for-approval")
            latecomer = self.session_of_this_browser()
        self.open_management()

        def members():
            return {item.find_element(By.CSS_SELECTOR, ".manage-what").text: item.get_attribute("data-role")
                    for item in self.driver.find_elements(By.CSS_SELECTOR, "#member-list .manage-item")}
        self.wait_for(lambda: members() == {"Grace Hopper": "owner", "Linus Torvalds": "member", "Max Planck": "pending"},
                      message=f"members listed: {members()}")
        self.assert_accessible("the members")
        self.driver.find_element(By.CSS_SELECTOR, "#member-list button[aria-label='Approve Max Planck']").click()
        self.wait_for(lambda: members().get("Max Planck") == "member", message="approving did not make a member")
        status, _ = api("GET", f"/maps/{CLASS_SLUG}/v1/StudentLocation", session=latecomer)
        self.assertEqual(status, 200, "the approved member cannot read the map")

        Select(self.driver.find_element(By.CSS_SELECTOR, "#member-list select[aria-label='Role of Linus Torvalds']")).select_by_value("moderator")
        self.wait_for(lambda: members().get("Linus Torvalds") == "moderator", message="the role did not change")

        self.driver.find_element(By.CSS_SELECTOR, "#member-list button[aria-label='Remove Max Planck']").click()
        self.wait_for(lambda: self.visible("question-dialog"), message="removing did not ask first")
        self.by_id("question-yes").click()
        self.wait_for(lambda: "Max Planck" not in members(), message="the removed member is still listed")
        self.screenshot("desktop-members")
        self.by_id("manage-close").click()
        status, _ = api("GET", f"/maps/{CLASS_SLUG}/v1/StudentLocation", session=latecomer)
        self.assertEqual(status, 404, "a removed member still reads the map")
        status, answer = api("POST", f"/v1/maps/{CLASS_SLUG}/members", {"code": self.invite.rsplit("/", 1)[1]}, session=latecomer)
        self.assertEqual(status, 404, f"a removed member rejoined with an invite made before: {answer}")

    def test_26_someone_outside_the_class_sees_not_found_and_a_bad_invite_says_so(self):
        self.classroom()
        self.driver.delete_all_cookies()
        self.driver.get(CLASS_PAGE)
        self.wait_for(lambda: self.visible("login-view"))
        self.log_in_through_form(OUTSIDER)
        self.wait_for(lambda: self.visible("map-message-view"), message="a non-member was shown something else")
        self.assertEqual(self.text("map-message-title"), "Map not found")
        self.assertFalse(self.visible("app-view"))
        self.assertEqual(self.markers(), [])
        self.screenshot("desktop-map-not-found")
        self.assert_accessible("a map not found")
        status, _ = api("GET", f"/maps/{CLASS_SLUG}/v1/StudentLocation", session=self.session_of_this_browser())
        self.assertEqual(status, 404)

        self.driver.get(f"{GATEWAY}/maps/no-such-class/")
        self.wait_for(lambda: self.visible("map-message-view"))
        self.assertEqual(self.text("map-message-title"), "Map not found", "a map that does not exist reads otherwise")

        self.driver.get(f"{CLASS_PAGE}join/{'A' * 22}")
        self.wait_for(lambda: self.visible("map-message-view"))
        self.assertEqual(self.text("map-message-title"), "This invite link does not work")
        self.assertIn("expired", self.text("map-message-text"))

        self.by_id("map-message-log-out").click()
        self.wait_for(lambda: self.visible("login-form"), message="Log in as someone else did not show the login")
        self.assert_no_script_ran_and_no_csp_violation()

    def test_27_a_new_student_signs_up_from_the_invite_and_lands_on_the_map_on_a_phone(self):
        self.assertTrue(self.invite, "no invite link from the tests before")
        status, answer = api("PATCH", f"/v1/maps/{CLASS_SLUG}", {"approval": False}, session=log_in(TEACHER))
        self.assertEqual(status, 200, answer)
        with self.in_second_browser():
            self.driver.set_window_size(360, 740)
            try:
                self.driver.delete_all_cookies()
                self.driver.get(self.invite)
                self.wait_for(lambda: self.visible("login-view"))
                self.by_id("show-sign-up").click()
                self.wait_for(lambda: self.visible("sign-up-form"))
                for element_id, value in [("sign-up-first", "Noor"), ("sign-up-last", "Newcomer"),
                                          ("sign-up-email", "noor@example.com"), ("sign-up-password", PASSWORD)]:
                    self.by_id(element_id).send_keys(value)
                self.by_id("sign-up-submit").click()
                self.wait_for(lambda: self.driver.current_url == CLASS_PAGE and self.visible("app-view"),
                              message="signing up from the invite did not land on the class map")
                self.wait_for_markers(1)
                for element_id in ["maps-button", "tab-map", "tab-list", "refresh", "add-pin", "account-button", "log-out"]:
                    box = self.by_id(element_id).rect
                    self.assertLessEqual(box["x"] + box["width"], 360, f"{element_id} is cut off")
                self.assertLessEqual(self.driver.execute_script("return document.documentElement.scrollWidth"), 360,
                                     "the page scrolls sideways")
                self.assertEqual(self.maps_in_switcher()[1], (CLASS_NAME, "member", True))
                self.screenshot("phone-class-map-switcher")
                self.close_switcher()
            finally:
                self.driver.set_window_size(1280, 800)

    def zoom_map(self, steps):
        """Zooms the map with its own buttons: out (negative) or in, waiting for each step to end."""
        button = self.driver.find_element(By.CSS_SELECTOR, "#map .leaflet-control-zoom-" + ("in" if steps > 0 else "out"))
        for _ in range(abs(steps)):
            if "leaflet-disabled" in button.get_attribute("class"):
                break
            button.click()
            time.sleep(0.4)

    def centre_map_on(self, student, below=0):
        """Drags the map until the student's pin is in its middle (or `below` pixels under it), as a reader
        would: the pin of theirs nearest the middle, in drags of at most 250 pixels each way from the middle,
        so the pointer never leaves the window however far the pin is."""
        for _ in range(8):
            box = self.by_id("map").rect
            middle = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2 + below)
            spots = [marker.rect for marker in self.driver.find_elements(By.CSS_SELECTOR, f"#map .leaflet-marker-icon[title='{student}']")]
            self.assertTrue(spots, f"no pin of {student} on the map")
            offsets = [(middle[0] - (spot["x"] + spot["width"] / 2), middle[1] - (spot["y"] + spot["height"])) for spot in spots]
            dx, dy = min(offsets, key=lambda offset: abs(offset[0]) + abs(offset[1]))
            if abs(dx) < 8 and abs(dy) < 8:
                return
            dx, dy = (max(-250, min(250, round(value))) for value in (dx, dy))
            actions = ActionChains(self.driver)
            actions.move_to_element(self.by_id("map")).click_and_hold()
            for _ in range(10):
                actions.move_by_offset(dx // 10, dy // 10).pause(0.03)
            actions.pause(0.4).release().perform()
            time.sleep(0.5)

    def wait_for_world_map(self, element_id, view, land=0.05, sea=0.05, border=0.0005):
        """Waits until the element's screenshot has land, sea and borders in these shares at least."""
        shares = {}
        # The pins and their shadows are left out of the count: what is under them is counted.
        pins_pane = f"#{element_id} .leaflet-marker-pane, #{element_id} .leaflet-shadow-pane"
        hide = f"document.querySelectorAll('{pins_pane}').forEach((pane) => {{ pane.style.visibility = arguments[0]; }})"

        def drawn():
            self.driver.execute_script(hide, "hidden")
            try:
                shares.update(colour_shares(self.by_id(element_id).screenshot_as_png))
            finally:
                self.driver.execute_script(hide, "")
            return shares["land"] >= land and shares["sea"] >= sea and shares["border"] >= border
        try:
            self.wait_for(drawn, timeout=15)
        finally:
            self.screenshot(f"world-map-{view}")
        self.assertTrue(drawn(), f"{view}: the world map is not drawn: {shares}")
        return shares

    def test_28_without_tiles_the_world_map_shows_land_borders_and_sea_under_the_pins_at_three_zooms(self):
        self.ensure_logged_in(base=GATEWAY_NO_TILES)
        self.wait_for_markers(len(pins()))
        self.wait_for(lambda: "tiles-offline" in self.by_id("map").get_attribute("class"), message="the tiles were not given up")
        self.zoom_map(-10)
        # Zoom 2 (the whole world), 4 (a continent) and 6 (a region): one of each of the world map's bands,
        # around Portland, Oregon: the Pacific to its west, Canada's border to its north.
        for view, steps, below in [("world", 1, 0), ("continent", 2, 0), ("region", 2, 150)]:
            self.zoom_map(steps)
            self.centre_map_on("Linus Torvalds", below)
            self.wait_for_world_map("map", view)
            # The pins are drawn over it.
            self.assertTrue(any(marker.is_displayed() for marker in self.markers()), f"{view}: no pin shown")
            if view == "continent":
                # The countries in view are named (a name out of view reads as empty).
                named = [label.text for label in self.driver.find_elements(By.CSS_SELECTOR, "#map .basemap-label")]
                self.assertTrue([name for name in named if name], "no country is named")
        self.assertTrue(self.text("notice").startswith("Map tiles cannot be loaded right now"))
        self.assert_no_script_ran_and_no_csp_violation()

    def test_29_the_posting_preview_shows_the_place_found_on_the_world_map(self):
        self.ensure_logged_in(base=GATEWAY_NO_TILES)
        self.by_id("add-pin").click()
        self.wait_for(lambda: self.visible("post-dialog"))
        self.by_id("post-place").clear()
        self.by_id("post-place").send_keys("Lisbon, Portugal")
        self.by_id("post-link").clear()
        self.by_id("post-link").send_keys("https://example.com/ada")
        self.by_id("find-submit").click()
        self.wait_for(lambda: self.visible("confirm-form"))
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#preview-map .leaflet-marker-icon"))
        # Lisbon at zoom 9: the city's land and the Atlantic beside it; no border that near.
        self.wait_for_world_map("preview-map", "posting-preview", land=0.1, sea=0.05, border=0)
        self.by_id("confirm-cancel").click()
        self.wait_for(lambda: not self.visible("post-dialog"))
        self.assert_no_script_ran_and_no_csp_violation()

    def test_30_with_a_pmtiles_archive_the_gateway_serves_its_tiles_and_the_page_draws_them(self):
        with open(PMTILES, "rb") as file:
            archive = Reader(MmapSource(file))
            for z, x, y in [(0, 0, 0), (1, 0, 1), (2, 3, 2)]:
                with urllib.request.urlopen(f"{GATEWAY_PMTILES}/basemap/{z}/{x}/{y}.png", timeout=10) as response:
                    self.assertEqual(response.headers["Content-Type"], "image/png")
                    self.assertIn("max-age", response.headers["Cache-Control"])
                    self.assertTrue(response.headers["ETag"])
                    self.assertEqual(response.read(), archive.get(z, x, y), f"{z}/{x}/{y}")
        for outside in ["/basemap/3/0/0.png", "/basemap/1/2/0.png", "/basemap/1/0/0.jpg"]:
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(GATEWAY_PMTILES + outside, timeout=10)
            self.assertEqual(refused.exception.code, 404, outside)

        self.ensure_logged_in(base=GATEWAY_PMTILES)
        self.wait_for_markers(len(pins()))
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#map .leaflet-tile-loaded"), message="no tile drew")
        sources = [tile.get_attribute("src") for tile in self.driver.find_elements(By.CSS_SELECTOR, "#map .leaflet-tile-loaded")]
        self.assertTrue(all(source.startswith(GATEWAY_PMTILES + "/basemap/") for source in sources), sources)
        self.assertNotIn("tiles-offline", self.by_id("map").get_attribute("class"))
        # The tiles cover the world map: the screenshot is mostly the archive's own colours.
        tiles = test_tiles_module()
        colours = {tiles.tile_colour(z, x, y) for z in range(3) for x in range(1 << z) for y in range(1 << z)}

        def tile_share():
            image = Image.open(io.BytesIO(self.by_id("map").screenshot_as_png)).convert("RGB")
            return sum(count for count, colour in image.getcolors(maxcolors=1 << 24) if colour in colours) / (image.width * image.height)
        self.wait_for(lambda: tile_share() > 0.5, message="the archive's tiles do not cover the map")
        self.screenshot("desktop-map-pmtiles")
        self.assert_no_script_ran_and_no_csp_violation()

    def test_31_every_compressed_route_reads_the_same_in_curl_urllib_and_chromium(self):
        pin = pins()[0]["objectId"]
        routes = ["/v1/StudentLocation", "/parse/classes/StudentLocation", "/v1/StudentLocation.geojson",
                  "/v1/StudentLocation?order=mapString", f"/v1/StudentLocation/{pin}/history", "/openapi.yaml", "/",
                  "/web/js/main.js"]

        def read(path, **headers):
            request = urllib.request.Request(GATEWAY + path, headers=headers)
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.headers, response.read()

        plain = {}
        for path in routes:
            headers, body = read(path)
            self.assertIsNone(headers["Content-Encoding"], path)
            self.assertEqual(headers["Vary"], "Accept-Encoding", path)
            plain[path] = body
            # Python's urllib, asking for gzip as a script would, and gzip's own module to read it.
            headers, coded = read(path, **{"Accept-Encoding": "gzip"})
            self.assertEqual(headers["Content-Encoding"], "gzip", path)
            self.assertLess(len(coded), len(body), path)
            self.assertEqual(gzip.decompress(coded), body, path)
            # curl --compressed asks for every coding its build reads (brotli among them) and decodes it.
            with tempfile.TemporaryDirectory() as folder:
                done = subprocess.run(["curl", "-sS", "--compressed", "-D", f"{folder}/headers", "-o", f"{folder}/body",
                                       GATEWAY + path], capture_output=True, text=True, timeout=20)
                self.assertEqual(done.returncode, 0, done.stderr)
                with open(f"{folder}/headers") as file:
                    head = file.read().lower()
                with open(f"{folder}/body", "rb") as file:
                    self.assertEqual(file.read(), body, f"curl: {path}")
            self.assertIn("content-encoding: br", head, f"curl: {path}")

        # Chromium, from the page: each route fetched, its text the plain bytes, and fewer bytes on the wire
        # than it decoded (the browser's own account of the transfer).
        self.driver.get(GATEWAY + "/")
        read_all = """
        const [paths, done] = arguments;
        Promise.all(paths.map(async (path) => {
          const response = await fetch(path, {cache: "no-store"});
          const text = await response.text();
          const entry = performance.getEntriesByName(new URL(path, location.href).href).pop();
          return {path, text, encoded: entry.encodedBodySize, decoded: entry.decodedBodySize};
        })).then(done, (error) => done(String(error)));
        """
        self.driver.set_script_timeout(20)
        answers = self.driver.execute_async_script(read_all, routes)
        self.assertIsInstance(answers, list, answers)
        for answer in answers:
            path = answer["path"]
            self.assertEqual(answer["text"], plain[path].decode(), f"Chromium: {path}")
            self.assertLess(answer["encoded"], answer["decoded"], f"Chromium: {path} came uncompressed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
