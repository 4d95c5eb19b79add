"""A shop's own checkout page pays through Orchard: the example shop's backend creates a payment
request with its API key, its page embeds Orchard's button module behind real nginx, headless
Chromium pays on the simulated sheet, and the shop verifies the signed webhook."""

import json
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from example_shop import Nginx, ShopBackend, standard_webhook, verify_standard, verify_webhook  # noqa: E402
from harness import BUTTON, DESKTOP, RESULT, ROOT, START_RECORDER, Browser, Demo  # noqa: E402

ORCHARD = Path(__file__).resolve().parents[2] / ".build" / "debug" / "orchard"


class ShopTests(unittest.TestCase):
    DEMO_ARGS = ()

    def setUp(self):
        self.shop = ShopBackend(orchard_url=None, api_key=None, webhook_secret=None)
        self.addCleanup(self.shop.stop)
        self.demo = Demo("--webhook-url", self.shop.webhook_url, *self.DEMO_ARGS)
        self.addCleanup(self.demo.stop)
        self.shop.orchard_url = self.demo.url
        # The shop developer's first step: a secret API key for the merchant, shown once.
        created = subprocess.run(
            [str(ORCHARD), "keys", "create", "--config", str(self.demo.state_dir / "orchard.json"),
             "--merchant", "merchant.dev.orchard.demo"],
            check=True, capture_output=True, text=True, timeout=60).stdout
        self.shop.api_key = next(line for line in created.splitlines() if line.startswith("osk_"))
        self.shop.webhook_secret = (self.demo.state_dir / "webhook-secret").read_text().strip()
        self.nginx = Nginx(shop_port=self.shop.port, orchard_port=self.demo.port)
        self.addCleanup(self.nginx.stop)

    def browser(self):
        browser = Browser(DESKTOP, START_RECORDER)
        self.addCleanup(browser.quit)
        return browser

    def wait_webhook(self, event_type, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [hook for hook in self.shop.webhooks if hook[1] == event_type]
            if found:
                return found[0]
            time.sleep(0.05)
        self.fail(f"no {event_type} webhook within {timeout} s (got {[hook[1] for hook in self.shop.webhooks]})")

    def test_the_shop_page_pays_and_the_shop_verifies_the_webhook(self):
        browser = self.browser()
        browser.open(self.nginx.url + "/")
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        self.assertEqual(browser.sheet_total(), "17.24")  # the shop's 12.34 and its 4.90 post
        browser.screenshot("10-shop-sheet")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait(lambda: browser.find(RESULT).get_attribute("data-status") == "success", 20, "success on the shop's page")
        payment_id = browser.find(RESULT).get_attribute("data-payment-id")
        browser.screenshot("11-shop-paid")
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])  # the shop has no icon
        # Every call the page made went through nginx to Orchard, under /orchard/.
        log = self.nginx.access_log()
        for path in ["/orchard/orchard.js", "/orchard/api/payment-requests/open", "/orchard/api/apple-pay/session",
                     "/orchard/api/apple-pay/authorize"]:
            self.assertIn(path, log)

        event_id, _, verified, body, signature = self.wait_webhook("payment.authorized")
        self.assertTrue(verified, "the Standard Webhooks library accepts Orchard's signature")
        delivery = self.shop.deliveries[event_id]
        self.assertTrue(delivery["orchard_signature"], "the deprecated Orchard-Signature still holds for an existing secret")
        headers = delivery["headers"]
        self.assertEqual(headers["webhook-id"], event_id)
        self.assertEqual(standard_webhook(self.shop.webhook_secret).verify(body, headers)["id"], event_id)
        event = json.loads(body)
        self.assertEqual(event["id"], event_id)
        self.assertEqual(event["data"]["payment"]["id"], payment_id)
        self.assertEqual(event["data"]["payment"]["amount"], 1724)
        self.assertEqual(event["data"]["paymentRequest"]["reference"], self.shop.created[0]["reference"])
        self.assertEqual(event["data"]["paymentRequest"]["metadata"], {"customer": "c-42"})

        # A tampered body, a replay after the tolerance, another secret: each fails the shop's check.
        tampered = body.replace(b'"amount":1724', b'"amount":1')
        self.assertNotEqual(tampered, body)
        self.assertFalse(verify_webhook(self.shop.webhook_secret, signature, tampered))
        timestamp = int(signature.split(",")[0].split("=")[1])
        self.assertTrue(verify_webhook(self.shop.webhook_secret, signature, body, now=timestamp + 60))
        self.assertFalse(verify_webhook(self.shop.webhook_secret, signature, body, now=timestamp + 301))
        self.assertFalse(verify_webhook("another-secret", signature, body))
        self.assertFalse(verify_standard(self.shop.webhook_secret, tampered, headers))
        self.assertFalse(verify_standard("another-secret-of-at-least-32-characters", body, headers))
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.shop.port}/webhooks/orchard", data=tampered, method="POST",
            headers={"Orchard-Signature": signature, "Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        self.assertEqual(refused.exception.code, 400)

        # The shop's backend sees the request paid through the API.
        status = urllib.request.Request(
            f"{self.demo.url}/v1/payment-requests/{self.shop.created[0]['id']}",
            headers={"Authorization": f"Bearer {self.shop.api_key}"})
        with urllib.request.urlopen(status, timeout=5) as response:
            self.assertEqual(json.load(response)["status"], "paid")

    def test_the_embedded_button_pays_through_the_payment_request_api(self):
        browser = self.browser()
        browser.open(self.nginx.url + "/?mode=paymentrequest")
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        self.assertEqual(browser.sheet_total(), "17.24")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait(lambda: browser.find(RESULT).get_attribute("data-status") == "success", 20, "success on the shop's page")
        self.assertEqual(browser.driver.execute_script("return window.__starts"), ["paymentrequest"])
        _, _, verified, body, _ = self.wait_webhook("payment.authorized")
        self.assertTrue(verified)
        self.assertEqual(json.loads(body)["data"]["payment"]["id"], browser.find(RESULT).get_attribute("data-payment-id"))
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])

    def test_the_payments_api_is_not_reachable_through_the_shop_and_the_association_file_is(self):
        for path in ["/orchard/v1/payment-requests", "/orchard/admin/merchants"]:
            with self.assertRaises(urllib.error.HTTPError) as blocked:
                urllib.request.urlopen(self.nginx.url + path, timeout=5)
            self.assertEqual(blocked.exception.code, 404, path)
        association = "/.well-known/apple-developer-merchantid-domain-association"
        with urllib.request.urlopen(self.nginx.url + association, timeout=5) as proxied:
            through_nginx = proxied.read()
        direct = urllib.request.Request(self.demo.url + association, headers={"Host": "localhost"})
        with urllib.request.urlopen(direct, timeout=5) as response:
            self.assertEqual(through_nginx, response.read())
        self.assertGreater(len(through_nginx), 0)


class GooglePayShopTests(unittest.TestCase):
    """The same shop with the demo taking Google Pay: the embedded Google Pay button, mounted with
    the payment request's client secret, pays it through the stand-in sheet at the request's price
    version, and the shop gets the signed webhook."""
    DEMO_ARGS = ("--google-pay", "--processor", "worldpay")
    setUp = ShopTests.setUp
    browser = ShopTests.browser
    wait_webhook = ShopTests.wait_webhook

    def test_the_embedded_google_pay_button_pays_the_payment_request(self):
        browser = self.browser()
        browser.open(self.nginx.url + "/?google=1")
        button = browser.wait(
            lambda: next((b for b in browser.find_all('[data-testid="google-pay-button"]') if b.is_displayed()
                          and b.get_attribute("aria-disabled") == "false"), None),
            message="an enabled Google Pay button on the shop's page")
        button.find_element("css selector", "button").click()
        browser.wait(lambda: browser.find_all('[data-testid="google-pay-sheet"]'), message="Google Pay's sheet")
        browser.screenshot("12-shop-google-pay-sheet")
        browser.find('[data-testid="google-pay-pay"]').click()
        result = '[data-testid="google-pay-result"]'
        browser.wait(lambda: browser.find(result).get_attribute("data-status") == "success", 20, "Google Pay's success")
        payment_id = browser.find(result).get_attribute("data-payment-id")
        self.assertIn("/orchard/api/google-pay/authorize", self.nginx.access_log())
        _, _, verified, body, _ = self.wait_webhook("payment.authorized")
        self.assertTrue(verified)
        self.assertEqual(json.loads(body)["data"]["payment"]["id"], payment_id)
        status = urllib.request.Request(
            f"{self.demo.url}/v1/payment-requests/{self.shop.created[0]['id']}",
            headers={"Authorization": f"Bearer {self.shop.api_key}"})
        with urllib.request.urlopen(status, timeout=5) as response:
            self.assertEqual(json.load(response)["status"], "paid")



# Counts the page's calls that open a payment request, before any of its scripts run.
COUNT_OPENS = START_RECORDER + """
window.__opens = 0;
const pageFetch = window.fetch;
window.fetch = function (input, init) {
  if (String(input instanceof Request ? input.url : input).includes('/api/payment-requests/open')) window.__opens += 1;
  return pageFetch.call(this, input, init);
};
"""
# The messages of English each shipped set lacks, by language.
SET_GAPS = """
const done = arguments[0];
import('/orchard/orchard.js').then(({ shippedStrings }) => done(Object.fromEntries(Object.entries(shippedStrings).map(
  ([language, set]) => [language, Object.keys(shippedStrings.en).filter((key) => typeof set[key] !== 'string'
    && key !== 'authorizeFailed')]))));
"""
GOOGLE_BUTTON = '[data-testid="google-pay-button"]'
GOOGLE_SHEET = '[data-testid="google-pay-sheet"]'


class WalletsShopTests(unittest.TestCase):
    """Both wallets from one call (`mountWallets`) on the shop's page: the payment request opened
    once, Google's button below Apple's, one sheet at a time, one outcome saying which wallet paid,
    Google Pay's total labelled as the request's totalLabel, and the shipped German strings."""
    DEMO_ARGS = ("--google-pay", "--processor", "worldpay")
    setUp = ShopTests.setUp
    wait_webhook = ShopTests.wait_webhook

    def browser(self):
        browser = Browser(DESKTOP, COUNT_OPENS)
        self.addCleanup(browser.quit)
        return browser

    @staticmethod
    def google_button(browser, enabled=True):
        return browser.wait(
            lambda: next((b for b in browser.find_all(GOOGLE_BUTTON) if b.is_displayed()
                          and b.get_attribute("aria-disabled") == ("false" if enabled else "true")), None),
            message=f"a{'n enabled' if enabled else ' waiting'} Google Pay button")

    def opens(self, browser):
        """The request's opens, as the page made them and as nginx passed them to Orchard."""
        return (browser.driver.execute_script("return window.__opens"),
                self.nginx.access_log().count("/orchard/api/payment-requests/open"))

    def test_one_call_shows_both_wallets_for_one_opened_request_and_google_pay_shows_the_total_label(self):
        browser = self.browser()
        browser.open(self.nginx.url + "/?wallets=1&label=Tea%20Shop%20order%201001")
        apple = browser.wait_button_enabled()
        google = self.google_button(browser)
        self.assertGreater(google.location["y"], apple.location["y"], "Google's button below Apple's")
        self.assertEqual(browser.driver.execute_script("return window.__mounted.wallets"), ["applePay", "googlePay"])
        self.assertEqual(self.opens(browser), (1, 1), "the request is opened once for both wallets")
        browser.screenshot("13-shop-both-wallets-one-call")

        # Google's sheet: its total carries the request's totalLabel, and Apple Pay waits while it is open.
        google.find_element("css selector", "button").click()
        browser.wait(lambda: browser.find_all(GOOGLE_SHEET) and browser.find(GOOGLE_SHEET).get_attribute("data-state") == "ready",
                     message="the Google Pay sheet")
        total = browser.find('[data-testid="google-pay-total"]')
        self.assertEqual(total.get_attribute("data-amount"), "17.24")
        self.assertTrue(total.text.startswith("Tea Shop order 1001: "), total.text)
        browser.wait(lambda: browser.find(BUTTON).get_attribute("aria-disabled") == "true", message="Apple Pay waiting")
        browser.screenshot("14-shop-google-pay-total-label")
        browser.find('[data-testid="google-pay-cancel"]').click()
        result = browser.wait_status("cancelled")
        self.assertEqual(result.get_attribute("data-wallet"), "googlePay")
        browser.wait_button_enabled()

        # Apple's sheet: Google's button waits; cancelled, then paid with Google Pay.
        browser.find(BUTTON).click()
        browser.wait_sheet("ready")
        self.google_button(browser, enabled=False)
        browser.find('[data-testid="sheet-cancel"]').click()
        self.assertEqual(browser.wait_status("cancelled").get_attribute("data-wallet"), "applePay")
        self.google_button(browser).find_element("css selector", "button").click()
        browser.wait(lambda: browser.find_all(GOOGLE_SHEET) and browser.find(GOOGLE_SHEET).get_attribute("data-state") == "ready",
                     message="the Google Pay sheet again")
        browser.find('[data-testid="google-pay-pay"]').click()
        result = browser.wait_status("success")
        self.assertEqual(result.get_attribute("data-wallet"), "googlePay", "the outcome says which wallet paid")
        payment_id = result.get_attribute("data-payment-id")
        browser.wait(lambda: not browser.find(BUTTON).is_displayed(), message="no Apple Pay button once paid")
        self.assertEqual(browser.driver.execute_script("return window.__starts"), ["googlepay", "session", "googlepay"])
        self.assertEqual(self.opens(browser), (1, 1))
        _, _, verified, body, _ = self.wait_webhook("payment.authorized")
        self.assertTrue(verified)
        self.assertEqual(json.loads(body)["data"]["payment"]["id"], payment_id)
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])

    def test_the_page_language_chooses_the_shipped_strings_and_google_pay_goes_in_the_pages_place(self):
        browser = self.browser()
        browser.open(self.nginx.url + "/?wallets=1&place=1&lang=de")
        apple = browser.wait_button_enabled()
        google = self.google_button(browser)
        self.assertEqual(apple.get_attribute("aria-label"), "Mit Apple Pay kaufen")
        self.assertEqual(google.get_attribute("aria-label"), "Mit Google Pay kaufen")
        self.assertEqual(google.find_element("xpath", "..").get_attribute("id"), "google-pay", "in the page's place for it")
        apple.click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-cancel"]').click()
        result = browser.wait_status("cancelled")
        self.assertEqual(result.text, "Es wurde nichts abgebucht.")
        browser.screenshot("15-shop-wallets-in-german")
        self.assertEqual(self.opens(browser), (1, 1))
        # Every shipped set says every message English has (a refusal's by code only where it translates them).
        gaps = browser.driver.execute_async_script(SET_GAPS)
        self.assertEqual(gaps, {"en": [], "de": [], "fr": [], "es": [], "it": [], "nl": []})
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
