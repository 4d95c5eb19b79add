"""A subscription from the sheet to its renewal and to Apple ending it, through each mock
processor: the example shop behind real nginx asks for a recurring payment, headless Chromium
pays it on the simulated sheet with a merchant token, the shop charges the mandate later, and the
mock Apple gateway's notification (through nginx, as Apple's would arrive) ends it. The shop's
webhook receiver sees every step, each signature checked. Real sockets only, loopback only."""

import json
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from example_shop import Nginx, ShopBackend  # noqa: E402
from harness import DESKTOP, RESULT, START_RECORDER, Browser, Demo  # noqa: E402

ORCHARD = Path(__file__).resolve().parents[2] / ".build" / "debug" / "orchard"
MERCHANT = "merchant.dev.orchard.demo"


class ShopWithOrchard:
    """For a TestCase: the example shop's backend, an `orchard-sandbox demo` with `processor` that
    sends it webhooks, an API key, real nginx in front of both, and headless Chromium."""

    def start(self, processor):
        self.shop = ShopBackend(orchard_url=None, api_key=None, webhook_secret=None)
        self.addCleanup(self.shop.stop)
        self.demo = Demo("--webhook-url", self.shop.webhook_url, "--processor", processor)
        self.addCleanup(self.demo.stop)
        self.shop.orchard_url = self.demo.url
        created = subprocess.run(
            [str(ORCHARD), "keys", "create", "--config", str(self.demo.state_dir / "orchard.json"), "--merchant", MERCHANT],
            check=True, capture_output=True, text=True, timeout=60).stdout
        self.shop.api_key = next(line for line in created.splitlines() if line.startswith("osk_"))
        self.shop.webhook_secret = (self.demo.state_dir / "webhook-secret").read_text().strip()
        self.nginx = Nginx(shop_port=self.shop.port, orchard_port=self.demo.port)
        self.addCleanup(self.nginx.stop)
        self.browser = Browser(DESKTOP, START_RECORDER)
        self.addCleanup(self.browser.quit)

    def api(self, method, path, body=None, key=None):
        request = urllib.request.Request(
            self.demo.url + path, data=None if body is None else json.dumps(body).encode(), method=method,
            headers={"Authorization": f"Bearer {self.shop.api_key}", "Content-Type": "application/json",
                     **({"Idempotency-Key": key} if key else {})})
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    def webhooks(self, count, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.shop.webhooks) < count:
            time.sleep(0.05)
        return [(kind, verified, json.loads(body)) for _, kind, verified, body, _ in self.shop.webhooks]


class SubscriptionTests(ShopWithOrchard, unittest.TestCase):
    def subscribe_charge_and_unlink(self, processor, mode="session"):
        self.start(processor)
        browser = self.browser
        browser.open(self.nginx.url + f"/?plan=recurring&mode={mode}")
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        terms = browser.find('[data-testid="sheet-agreement"]')
        self.assertEqual(terms.get_attribute("data-kind"), "recurringPaymentRequest")
        self.assertIn("Tea club: Monthly tea box 12.34 EUR every 1 month", terms.text)
        notification_url = terms.get_attribute("data-token-notification-url")
        self.assertEqual(notification_url, f"{self.nginx.url}/orchard/apple-pay/token-events/{MERCHANT}")
        browser.screenshot(f"20-subscription-sheet-{processor}")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait(lambda: browser.find(RESULT).get_attribute("data-status") == "success", 20, "the first payment")
        # An agreement goes through the API the button's mode asks for: Payment Request carries it in a modifier.
        self.assertEqual(browser.driver.execute_script("return window.__starts"), [mode])
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])

        events = self.webhooks(2)
        self.assertEqual([kind for kind, _, _ in events[:2]], ["payment.authorized", "mandate.created"])
        first, mandate = events[0][2]["data"]["payment"], events[1][2]["data"]["mandate"]
        self.assertEqual(first["mandateId"], mandate["id"])
        self.assertEqual(first["processor"], processor)
        token = mandate["merchantTokenIdentifier"]
        self.assertTrue(token.startswith("DNITHE"), "paid with a merchant token")
        self.assertEqual((mandate["state"], mandate["type"], mandate["description"]), ("active", "recurring", "Tea club"))
        self.assertNotIn("credential", mandate)

        # A month later, the shop's scheduler charges the mandate; a retry with the same key charges nothing more.
        key = str(uuid.uuid4())
        status, charge = self.api("POST", f"/v1/mandates/{mandate['id']}/charges", {"amount": 1234, "reference": "tea-renewal-1"}, key)
        self.assertEqual(status, 201, charge)
        self.assertEqual((charge["payment"]["state"], charge["payment"]["processor"]), ("authorized", processor))
        self.assertEqual(charge["payment"]["mandateId"], mandate["id"])
        status, again = self.api("POST", f"/v1/mandates/{mandate['id']}/charges", {"amount": 1234, "reference": "tea-renewal-1"}, key)
        self.assertEqual((status, again["payment"]["id"]), (200, charge["payment"]["id"]))

        # The shopper removes the card from Wallet: Apple notifies through the shop's nginx.
        answer = self.demo.token_event("UNLINK", token, notification_url, reason="user")
        self.assertEqual(answer["status"], 200)
        self.assertIn("/orchard/apple-pay/token-events/", self.nginx.access_log())
        # Orchard records the notification and fetches the event in the background, within a poll or two.
        deadline = time.time() + 20
        status, ended = self.api("GET", f"/v1/mandates/{mandate['id']}")
        while ended["state"] != "ended" and time.time() < deadline:
            time.sleep(0.05)
            status, ended = self.api("GET", f"/v1/mandates/{mandate['id']}")
        self.assertEqual((ended["state"], ended["endedReason"]), ("ended", "apple:user"))
        status, refused = self.api("POST", f"/v1/mandates/{mandate['id']}/charges", {"amount": 1234, "reference": "tea-renewal-2"},
                                   str(uuid.uuid4()))
        self.assertEqual(status, 409, refused)
        # An event Apple does not know (sent here as Apple sends one: a GET, no body): 200, and nothing changes.
        with urllib.request.urlopen(notification_url + "/notification/merchantToken/no-such-event", timeout=20) as unknown:
            self.assertEqual(unknown.status, 200)

        events = self.webhooks(4)
        self.assertEqual([kind for kind, _, _ in events],
                         ["payment.authorized", "mandate.created", "payment.authorized", "mandate.ended"])
        self.assertTrue(all(verified for _, verified, _ in events), "the shop's check accepts every signature")
        self.assertEqual(events[2][2]["data"]["payment"]["id"], charge["payment"]["id"])
        self.assertEqual(events[3][2]["data"]["mandate"]["endedReason"], "apple:user")

    def test_worldpay_subscription_from_sheet_to_renewal_to_apple_unlink(self):
        self.subscribe_charge_and_unlink("worldpay")

    def test_worldline_subscription_from_sheet_to_renewal_to_apple_unlink(self):
        # With the button in Payment Request mode.
        self.subscribe_charge_and_unlink("worldline", mode="paymentrequest")


if __name__ == "__main__":
    unittest.main(verbosity=2)
