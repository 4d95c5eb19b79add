"""Runs `orchard-sandbox demo` processes and headless Chromium (Debian's chromium + chromium-driver,
driven through Selenium's WebDriver) for the checkout page's browser tests. Loopback only."""

import base64
import contextlib
import http.client
import json
import os
import re
import sqlite3
import ssl
import subprocess
import threading
import time
import http.server
import sys
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# The launcher Tests/Client's harness shares (Tests/PythonSupport): unittest puts only Tests/Browser on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "PythonSupport"))
from sandbox_demo import SandboxDemo  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = Path(os.environ.get("ORCHARD_SANDBOX_BINARY", ROOT / ".build" / "debug" / "orchard-sandbox"))
SCREENSHOTS = Path(os.environ.get("ORCHARD_SCREENSHOTS", ROOT / ".ci" / "artifacts" / "screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WEBKIT_DRIVER = os.environ.get("WEBKIT_DRIVER", "/usr/bin/WebKitWebDriver")

DESKTOP = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}

BUTTON = '[data-testid="apple-pay-button"]'
RESULT = '[data-testid="payment-result"]'
SHEET = '[data-testid="simulated-sheet"]'

# Collects CSP violations from the first byte of every document, before the page's own scripts.
CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI}`);
});
"""

# Records which browser API each payment used, from the page's own `orchard:start` events.
START_RECORDER = """
window.__starts = [];
document.addEventListener('orchard:start', (event) => window.__starts.push(event.detail.api));
"""


class Demo(SandboxDemo):
    """One `orchard-sandbox demo` on a free loopback port with its own state folder."""

    banner = {**SandboxDemo.banner, "gateway_port": (r"mock Apple gateway:\s+https://127\.0\.0\.1:(\d+)", int)}
    required = ("port", "gateway_port")

    def __init__(self, *flags):
        super().__init__(SANDBOX, ROOT, flags, prefix="orchard-browser-", start_timeout=60, stop_timeout=10)

    def stop(self):
        self.end()

    def database(self):
        connection = sqlite3.connect(self.state_dir / "state" / "orchard.sqlite")
        connection.row_factory = sqlite3.Row
        return connection

    def order(self, order_id):
        with contextlib.closing(self.database()) as db:
            return db.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone()

    def payments(self, order_id):
        with contextlib.closing(self.database()) as db:
            return db.execute("SELECT * FROM payments WHERE order_id = ?", (order_id,)).fetchall()

    def token_event(self, event_type, merchant_token_identifier, token_notification_url, reason="user"):
        """Makes the demo's mock Apple gateway create a merchant-token event and send Apple's
        `GET {token_notification_url}/notification/merchantToken/{eventId}` for it (retried as Apple
        does), through its `POST /_mock/token-events` over mutual TLS with the demo's test merchant
        identity. Returns `{"eventId": ..., "status": <HTTP status the notification got>}`; raises
        RuntimeError when the gateway refuses (400: a URL not http(s) on loopback) or no answer came (502)."""
        context = ssl.create_default_context(cafile=str(self.state_dir / "test-ca.pem"))
        context.load_cert_chain(str(self.state_dir / "test-merchant-identity.pem"),
                                str(self.state_dir / "test-merchant-identity.key"))
        body = json.dumps({"eventType": event_type, "merchantTokenIdentifier": merchant_token_identifier,
                           "reason": reason, "tokenNotificationURL": token_notification_url})
        # Apple's 4 attempts may each wait up to 15 s for a receiver that does not answer.
        connection = http.client.HTTPSConnection("127.0.0.1", self.gateway_port, context=context, timeout=90)
        try:
            connection.request("POST", "/_mock/token-events", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            text = response.read().decode()
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"mock gateway answered {response.status} to POST /_mock/token-events: {text}")
        return json.loads(text)

    def mint_token(self, amount, application_data_base64):
        """A token from `orchard-sandbox token mint`, as a shopper's device would sign it for this order."""
        application_data = base64.b64decode(application_data_base64).decode()
        output = subprocess.run(
            [str(SANDBOX), "token", "mint", "--state-dir", str(self.state_dir), "--amount", str(amount),
             "--application-data", application_data],
            check=True, capture_output=True, text=True, timeout=60).stdout
        return json.loads(output)


class Browser:
    """Headless Chromium with a CSP probe, console capture and device emulation."""

    def __init__(self, viewport=DESKTOP, init_script=None):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                         "--window-size=1280,900"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", viewport)
        self.viewport = viewport
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_PROBE})
        if init_script:
            self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": init_script})
        self.console = []

    def quit(self):
        self.driver.quit()

    def open(self, url):
        self.driver.get(url)

    def find(self, selector):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def find_all(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait(self, condition, timeout=20, message=""):
        try:
            # The page swaps elements (the SDK's button replaces its own): a vanished one means "not yet".
            return WebDriverWait(
                self.driver, timeout, poll_frequency=0.05,
                ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)).until(lambda _: condition())
        except TimeoutException:
            raise AssertionError(f"timed out after {timeout} s waiting for {message or condition}") from None

    def wait_for(self, selector, timeout=20):
        return self.wait(lambda: (self.find_all(selector) or [None])[0], timeout, selector)

    def wait_status(self, status, timeout=20):
        self.wait(lambda: self.find(RESULT).get_attribute("data-status") == status, timeout,
                  f'payment-result data-status="{status}" (now {self.find(RESULT).get_attribute("data-status")!r}, '
                  f'text {self.find(RESULT).text!r})')
        return self.find(RESULT)

    def wait_button_enabled(self, timeout=20):
        return self.wait(
            lambda: next((b for b in self.find_all(BUTTON) if b.is_displayed()
                          and b.get_attribute("aria-disabled") == "false"), None),
            timeout, "an enabled Apple Pay button")

    def sheet_state(self):
        sheets = self.find_all(SHEET)
        return sheets[0].get_attribute("data-state") if sheets else None

    def wait_sheet(self, state="ready", timeout=20):
        self.wait(lambda: self.sheet_state() == state, timeout, f"simulated sheet in state {state} (now {self.sheet_state()})")
        return self.find(SHEET)

    def page_total(self):
        return self.find('[data-testid="order-total"]').get_attribute("data-amount")

    def sheet_total(self):
        return self.find('[data-testid="sheet-total"]').get_attribute("data-amount")

    def screenshot(self, name):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        suffix = "phone" if self.viewport["mobile"] else "desktop"
        path = SCREENSHOTS / f"{name}-{suffix}.png"
        self.driver.save_screenshot(str(path))
        return path

    def problems(self, allowed=()):
        """Console errors and CSP violations, less the `allowed` regular expressions."""
        self.console.extend(self.driver.get_log("browser"))
        errors = [entry["message"] for entry in self.console if entry["level"] == "SEVERE"]
        errors += [entry["message"] for entry in self.console if "Content Security Policy" in entry["message"]]
        errors += [f"CSP violation: {v}" for v in (self.driver.execute_script("return window.__cspViolations || []") or [])]
        return [e for e in errors if not any(re.search(pattern, e) for pattern in allowed)]


class WebKitBrowser(Browser):
    """WebKitGTK, Safari's engine (Debian's webkit2gtk-driver), under Xvfb: scripts/browser-test
    runs its suite through xvfb-run. WebKitWebDriver has no way to run a script before the page's
    own, so this browser collects no CSP violations or console errors; Chromium's suites do."""

    def __init__(self, viewport=DESKTOP):
        from selenium.webdriver.webkitgtk.options import Options as WebKitOptions
        from selenium.webdriver.webkitgtk.service import Service as WebKitService
        self.driver = webdriver.WebKitGTK(options=WebKitOptions(), service=WebKitService(executable_path=WEBKIT_DRIVER))
        self.driver.set_window_size(viewport["width"], viewport["height"])
        self.viewport = viewport
        self.console = []

    def problems(self, allowed=()):
        return []


class FakeAppleSDK:
    """Serves a stand-in for Apple's SDK on loopback, answering after `delay` seconds. It defines
    <apple-pay-button>; with `session`, it is the demo's stand-in (`STAND_IN`, our own code:
    Apple's SDK cannot run offline and is not copied), which first defines ApplePaySession as
    Apple's SDK does in browsers without Apple Pay of their own."""

    BUTTON = b"""
customElements.define('apple-pay-button', class extends HTMLElement {
  connectedCallback() { this.textContent = 'Apple Pay (stand-in SDK)'; }
});
"""
    STAND_IN = ROOT / "Sources" / "OrchardTesting" / "SimulatedSheet" / "stand-in-sdk.js"

    def __init__(self, delay=0.0, session=False):
        sdk = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                sdk.requests += 1
                time.sleep(sdk.delay)
                self.send_response(200)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(sdk.source)))
                self.end_headers()
                self.wfile.write(sdk.source)

            def log_message(self, *args):
                pass

        self.delay = delay
        self.source = FakeAppleSDK.STAND_IN.read_bytes() if session else FakeAppleSDK.BUTTON
        self.requests = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jsapi/apple-pay-sdk.js"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def closed_loopback_port():
    """A loopback port nothing listens on (bound, then released)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
