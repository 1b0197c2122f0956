"""The web client in headless Chromium against the real services (scripts/browser-test.sh starts them).

Each test asserts what a student sees. The tests run in order on one browser: they share the students
seeded in setUpClass and the pins the earlier tests post.
"""
import datetime
import json
import os
import subprocess
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from axe_selenium_python import Axe
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

GATEWAY = os.environ["STACK_GATEWAY"]
GATEWAY_NO_TILES = os.environ["STACK_GATEWAY_NO_TILES"]
# The OpenID Connect provider STACK_GATEWAY signs students in with, and its one student.
PROVIDER = os.environ["STACK_OIDC_ISSUER"]
PROVIDER_NAME = os.environ["STACK_OIDC_PROVIDER_NAME"]
PROVIDER_USERNAME, PROVIDER_PASSWORD, PROVIDER_GIVEN, PROVIDER_FAMILY, _ = os.environ["STACK_OIDC_USER"].split(":")
OUTPUT = os.environ.get("TEST_OUTPUT", "test-output/browser")
PASSWORD = "correct horse battery"
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
    if text.startswith(")]}'\n"):
        text = text[5:]
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

        options = webdriver.ChromeOptions()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,800", "--lang=en-US"]:
            options.add_argument(argument)
        options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
        cls.driver = webdriver.Chrome(options=options, service=service)
        cls.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCHERS})
        cls.browser_log = []
        cls.history = None

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
    def tearDownClass(cls):
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
