"""Google Pay beside Apple Pay on the checkout page (issue 49), in headless Chromium against real
`orchard-sandbox demo --google-pay` processes: the demo's stand-in for Google's pay.js and its sheet,
tokens minted for the gateway's recipient ID and encrypted to the key the mock processor holds as
Google Pay gateway, the real authorize endpoint, the SQLite store, and the mock Worldpay or Worldline,
which opens each token and keeps it as it arrived (its `GET /_mock/charges` test route).
Run: python3 Tests/Browser/test_google_pay.py"""

import json
import ssl
import sys
import unittest
import urllib.request
from decimal import Decimal
from pathlib import Path

from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).parent))
from harness import BUTTON, DESKTOP, PHONE, RESULT, SHEET, START_RECORDER, Browser, Demo  # noqa: E402

# Config/catalogue.json, which the demo uses.
APPLES, STANDARD, EXPRESS = Decimal("12.90"), Decimal("4.90"), Decimal("9.90")

GOOGLE_BUTTON = '[data-testid="google-pay-button"]'
GOOGLE_SHEET = '[data-testid="google-pay-sheet"]'
GOOGLE_UNAVAILABLE = '[data-testid="google-pay-unavailable"]'
HTTP_FAILURE = r"Failed to load resource: the server responded with a status of {}"

# Posts a PaymentData to the authorize route from the page, as a second submission of the same token
# would arrive: resolves [status, body].
POST_AUTHORIZE = """
const [body, done] = arguments;
fetch('/api/google-pay/authorize', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
  .then(async (response) => done([response.status, await response.json()]), (error) => done([0, String(error)]));
"""

NEW_ORDER = """
const done = arguments[0];
fetch('/api/orders', { method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ items: [{ productId: 'apple-box', quantity: 1 }] }) }).then((r) => r.json()).then(done);
"""


def amount(value):
    return f"{value:.2f}"


class GooglePayDemo(Demo):
    """The demo with its mock processor's port read from the banner, for its test route."""

    banner = {**Demo.banner, "processor_port": (r"mock (?:worldpay|worldline) at https://127\.0\.0\.1:(\d+)", int)}
    required = Demo.required + ("processor_port",)

    def processor_records(self):
        """What the mock processor took: `GET /_mock/charges` over TLS, trusting the demo's test CA."""
        context = ssl.create_default_context(cafile=str(self.state_dir / "test-ca.pem"))
        url = f"https://127.0.0.1:{self.processor_port}/_mock/charges"
        with urllib.request.urlopen(url, context=context, timeout=30) as response:
            return json.load(response)


class GooglePayCase(unittest.TestCase):
    processor = "worldpay"
    #: How the processor receives a gateway-mode token: Worldpay's paymentInstrument.type, Worldline's product 320 input.
    form = "card/wallet+googlepay"

    def setUp(self):
        self.demo = GooglePayDemo("--google-pay", "--processor", self.processor)
        self.addCleanup(self.demo.stop)

    def browser(self, viewport=DESKTOP, init_script=START_RECORDER):
        browser = Browser(viewport, init_script)
        self.addCleanup(browser.quit)
        return browser

    def assertClean(self, browser, allowed=()):
        self.assertEqual(browser.problems(allowed), [], "console errors or CSP violations")

    @staticmethod
    def google_state(browser):
        sheets = browser.find_all(GOOGLE_SHEET)
        return sheets[0].get_attribute("data-state") if sheets else None

    def wait_google_sheet(self, browser, updates):
        """The stand-in sheet ready after `updates` calls of onPaymentDataChanged."""
        browser.wait(lambda: self.google_state(browser) == "ready"
                     and browser.find(GOOGLE_SHEET).get_attribute("data-updates") == str(updates),
                     message=f"Google Pay sheet ready after {updates} updates (now {self.google_state(browser)})")
        return browser.find(GOOGLE_SHEET)

    @staticmethod
    def google_total(browser):
        return browser.find('[data-testid="google-pay-total"]').get_attribute("data-amount")

    @staticmethod
    def wait_google_button(browser):
        return browser.wait(
            lambda: next((b for b in browser.find_all(GOOGLE_BUTTON) if b.is_displayed()
                          and b.get_attribute("aria-disabled") == "false"), None),
            message="an enabled Google Pay button")

    @staticmethod
    def order_id(browser):
        return browser.find(RESULT).text.split("Order ", 1)[1].split(":", 1)[0]

    def pays_with_both_wallets(self):
        browser = self.browser(DESKTOP)
        browser.open(self.demo.url + "/")
        apple = browser.wait_button_enabled()
        google = self.wait_google_button(browser)
        self.assertEqual(apple.get_attribute("aria-label"), "Buy with Apple Pay")
        self.assertEqual(google.get_attribute("aria-label"), "Buy with Google Pay")
        self.assertGreater(google.location["y"], apple.location["y"], "Google's button below Apple's")
        self.assertEqual(browser.page_total(), amount(APPLES + STANDARD))
        browser.screenshot("google-pay-01-both-buttons")

        # Apple Pay first, as before: the simulated sheet pays, and neither button stays for the paid order.
        apple.click()
        browser.wait_sheet("ready")
        self.assertFalse(google.find_element("css selector", "button").is_enabled(), "Google Pay waits while Apple's sheet is open")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        browser.wait(lambda: not browser.find_all(SHEET), message="the Apple Pay sheet closes")
        apple_order = self.order_id(browser)
        self.assertEqual(self.demo.order(apple_order)["state"], "paid")
        self.assertFalse(browser.find(GOOGLE_BUTTON).is_displayed(), "no Google Pay for a paid order")

        # A new order, paid with Google Pay through the stand-in sheet: the delivery changed on the sheet is repriced by the server.
        browser.find('[data-role="restart"]').click()
        self.wait_google_button(browser).find_element("css selector", "button").click()
        self.wait_google_sheet(browser, updates=1)
        self.assertEqual(browser.find(GOOGLE_SHEET).get_attribute("data-last-trigger"), "INITIALIZE")
        self.assertEqual(self.google_total(browser), amount(APPLES + STANDARD))
        self.assertEqual(browser.find(BUTTON).get_attribute("aria-disabled"), "true", "Apple Pay waits while Google's sheet is open")
        browser.screenshot("google-pay-02-sheet")
        Select(browser.find('[data-testid="google-pay-shipping-option"]')).select_by_value("express")
        self.wait_google_sheet(browser, updates=2)
        self.assertEqual(browser.find(GOOGLE_SHEET).get_attribute("data-last-trigger"), "SHIPPING_OPTION")
        self.assertEqual(self.google_total(browser), amount(APPLES + EXPRESS))
        self.assertEqual(browser.page_total(), amount(APPLES + EXPRESS), "the page shows the server's new total")
        items = browser.driver.execute_script(
            "return [...document.querySelectorAll('[data-testid=google-pay-items] li')].map(li => li.dataset.type)")
        self.assertEqual(items, ["LINE_ITEM", "SHIPPING_OPTION"])
        browser.find('[data-testid="google-pay-pay"]').click()
        browser.wait_status("success")
        browser.wait(lambda: not browser.find_all(GOOGLE_SHEET), message="the Google Pay sheet closes")
        browser.screenshot("google-pay-03-paid")
        self.assertEqual(browser.driver.execute_script("return window.__starts"), ["session", "googlepay"])

        order_id = self.order_id(browser)
        self.assertNotEqual(order_id, apple_order)
        self.assertEqual(self.demo.order(order_id)["state"], "paid")
        payments = self.demo.payments(order_id)
        self.assertEqual([(p["state"], p["amount"], p["currency"], p["processor"]) for p in payments],
                         [("authorized", int((APPLES + EXPRESS) * 100), "EUR", self.processor)])

        # The processor got the token exactly as the sheet was given it, and opened it as gateway.
        paid = browser.driver.execute_script("return google.payments.api.standIn.paid")
        self.assertEqual(len(paid), 1)
        minted = paid[0]["paymentMethodData"]["tokenizationData"]
        self.assertEqual(minted["type"], "PAYMENT_GATEWAY")
        records = self.demo.processor_records()
        self.assertEqual(len(records["googlePay"]), 1, records["googlePay"])
        received = records["googlePay"][0]
        self.assertEqual((received["processor"], received["form"]), (self.processor, self.form))
        self.assertEqual(received["token"], minted["token"], "the token string arrived unchanged")
        self.assertEqual(received["authMethod"], "CRYPTOGRAM_3DS", "the gateway opened it")
        charge = next(c for c in records["charges"] if c["reference"] == received["reference"])
        self.assertEqual((charge["state"], charge["amount"], charge["currency"]), ("authorized", int((APPLES + EXPRESS) * 100), "EUR"))
        self.assertEqual(len(records["charges"]), 2, "one charge for each wallet's order")

        # The same PaymentData again, for the paid order and for a new one: refused, and nothing reaches the processor.
        authorizations = len(records["authorizations"])
        version = self.demo.order(order_id)["price_version"]
        self.assertGreater(version, 1, "repriced on the sheet")
        again = browser.driver.execute_async_script(
            POST_AUTHORIZE, {"orderId": order_id, "priceVersion": version, "paymentData": paid[0]})
        self.assertEqual(again[0], 409, again)
        fresh = browser.driver.execute_async_script(NEW_ORDER)
        replay = browser.driver.execute_async_script(
            POST_AUTHORIZE, {"orderId": fresh["orderId"], "priceVersion": fresh["priceVersion"], "paymentData": paid[0]})
        self.assertEqual((replay[0], replay[1]["error"]["code"]), (409, "replayed_payment"), replay)
        self.assertEqual(self.demo.order(fresh["orderId"])["state"], "open")
        after = self.demo.processor_records()
        self.assertEqual(len(after["authorizations"]), authorizations, "no request reached the processor")
        self.assertEqual(len(after["googlePay"]), 1)
        self.assertEqual(len(after["charges"]), 2)
        self.assertClean(browser, allowed=[HTTP_FAILURE.format(409)])


class GooglePayWorldpayTests(GooglePayCase):
    def test_both_wallets_pay_and_the_token_reaches_worldpay_unchanged_once(self):
        self.pays_with_both_wallets()

    def test_cancelled_then_paid_on_a_phone(self):
        browser = self.browser(PHONE)
        browser.open(self.demo.url + "/")
        button = self.wait_google_button(browser)
        self.assertGreater(button.size["width"], 300, "full-width button on a 390 px screen")
        browser.wait_button_enabled()
        browser.screenshot("google-pay-04-buttons")
        button.find_element("css selector", "button").click()
        self.wait_google_sheet(browser, updates=1)
        browser.screenshot("google-pay-05-sheet")
        browser.find('[data-testid="google-pay-cancel"]').click()
        result = browser.wait_status("cancelled")
        self.assertIn("Nothing was charged", result.text)
        self.assertEqual(self.demo.processor_records()["googlePay"], [])
        # An address the shop does not ship to is Google's SHIPPING_ADDRESS_UNSERVICEABLE, Pay blocked until another.
        self.wait_google_button(browser).find_element("css selector", "button").click()
        self.wait_google_sheet(browser, updates=1)
        Select(browser.find('[data-testid="google-pay-address"]')).select_by_index(2)
        browser.wait(lambda: self.google_state(browser) == "error", message="the sheet shows the address error")
        error = browser.find('[data-testid="google-pay-error"]')
        self.assertEqual(error.get_attribute("data-reason"), "SHIPPING_ADDRESS_UNSERVICEABLE")
        self.assertFalse(browser.find('[data-testid="google-pay-pay"]').is_enabled())
        Select(browser.find('[data-testid="google-pay-address"]')).select_by_index(1)
        self.wait_google_sheet(browser, updates=3)
        options = [o.get_attribute("value") for o in Select(browser.find('[data-testid="google-pay-shipping-option"]')).options]
        self.assertEqual(options, ["standard"], "express is France only: the server's options replace the sheet's")
        browser.find('[data-testid="google-pay-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(self.demo.order(self.order_id(browser))["state"], "paid")
        self.assertClean(browser)

    def test_a_script_that_fails_to_load_leaves_google_pay_unavailable_and_apple_pay_working(self):
        browser = self.browser(DESKTOP)
        browser.driver.execute_cdp_cmd("Network.enable", {})
        browser.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/demo/google-pay.js"]})
        browser.open(self.demo.url + "/")
        note = browser.wait_for(GOOGLE_UNAVAILABLE)
        self.assertIn("Google's script could not be loaded", note.text)
        self.assertEqual(browser.find_all(GOOGLE_BUTTON), [], "no dead button")
        self.assertIsNone(browser.find(RESULT).get_attribute("data-status"), "Apple Pay's outcome is not Google's")
        browser.wait_button_enabled()
        browser.screenshot("google-pay-06-unavailable")
        browser.find(BUTTON).click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertClean(browser, allowed=[r"google-pay\.js - Failed to load resource: net::ERR_BLOCKED_BY_CLIENT"])


class GooglePayWorldlineTests(GooglePayCase):
    processor = "worldline"
    form = "encryptedPaymentData"

    def test_both_wallets_pay_and_the_token_reaches_worldline_unchanged_once(self):
        self.pays_with_both_wallets()


if __name__ == "__main__":
    unittest.main()
