"""Browser tests of the checkout page (Public/) in headless Chromium against real `orchard-sandbox demo`
processes: real merchant validation over mTLS to the mock gateway, real tokens, the real
authorize endpoint and the SQLite store. Run: python3 Tests/Browser/test_checkout.py"""

import json
import sys
import unittest
import urllib.request
from decimal import Decimal
from pathlib import Path

from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).parent))
from harness import (BUTTON, DESKTOP, PHONE, RESULT, SHEET, Browser, Demo, FakeAppleSDK,  # noqa: E402
                     closed_loopback_port)

# Config/catalogue.json, which the demo uses.
APPLES, PEARS, CIDER = Decimal("12.90"), Decimal("14.90"), Decimal("6.50")
STANDARD, EXPRESS = Decimal("4.90"), Decimal("9.90")

# A failed HTTP call is logged by Chromium as a console error; these are the expected ones.
HTTP_FAILURE = r"Failed to load resource: the server responded with a status of {}"


def amount(value):
    return f"{value:.2f}"


def reviewer_double(can_make_payments=True, max_version=10):
    """An ApplePaySession double written only from Apple's documentation: not Orchard's simulator.
    It records every call the page makes; the test drives it through window.__double."""
    return f"""
(() => {{
  const calls = [];
  class ReviewerApplePaySession {{
    static STATUS_SUCCESS = 0;
    static STATUS_FAILURE = 1;
    static canMakePayments() {{ return {str(can_make_payments).lower()}; }}
    static supportsVersion(version) {{ return version >= 1 && version <= {max_version}; }}
    constructor(version, request) {{
      calls.push({{ call: 'new', version, request: JSON.parse(JSON.stringify(request)) }});
      window.__double.session = this;
    }}
    begin() {{
      calls.push({{ call: 'begin' }});
      setTimeout(() => this.onvalidatemerchant({{
        validationURL: 'https://apple-pay-gateway.apple.com/paymentservices/paymentSession' }}));
    }}
    abort() {{ calls.push({{ call: 'abort' }}); }}
    completeMerchantValidation(session) {{ calls.push({{ call: 'completeMerchantValidation', session }}); }}
    completeShippingContactSelection(update) {{ calls.push({{ call: 'completeShippingContactSelection', update }}); }}
    completeShippingMethodSelection(update) {{ calls.push({{ call: 'completeShippingMethodSelection', update }}); }}
    completePaymentMethodSelection(update) {{ calls.push({{ call: 'completePaymentMethodSelection', update }}); }}
    completePayment(result) {{ calls.push({{ call: 'completePayment', result: JSON.parse(JSON.stringify(result)) }}); }}
  }}
  window.ApplePaySession = ReviewerApplePaySession;
  window.__double = {{
    calls,
    session: null,
    shippingContact(countryCode) {{
      this.session.onshippingcontactselected({{ shippingContact: {{ countryCode, locality: 'Berlin', postalCode: '10115' }} }});
    }},
    authorize(token) {{ this.session.onpaymentauthorized({{ payment: {{ token }} }}); }},
    cancel() {{ this.session.oncancel({{}}); }},
  }};
}})();
"""


# Times a click on the button to the server's merchant session, for the tests that print it.
VALIDATION_TIMER = """
const button = document.querySelector('[data-testid="apple-pay-button"]');
button.addEventListener('click', () => { window.__clicked = performance.now(); }, { capture: true });
const fetchBefore = window.fetch;
window.fetch = (...args) => fetchBefore(...args).then((response) => {
  if (String(args[0]).includes('apple-pay/session')) window.__validated = performance.now();
  return response;
});
"""


class CheckoutTestCase(unittest.TestCase):
    demo_flags = ()

    def setUp(self):
        self.demo = Demo(*self.demo_flags)
        self.addCleanup(self.demo.stop)

    def browser(self, viewport=DESKTOP, init_script=None):
        browser = Browser(viewport, init_script)
        self.addCleanup(browser.quit)
        return browser

    def assertClean(self, browser, allowed=()):
        self.assertEqual(browser.problems(allowed), [], "console errors or CSP violations")

    def last_order_id(self, browser):
        text = browser.find(RESULT).text
        return text.split("Order ", 1)[1].split(":", 1)[0]

    def pay_flow_to_sheet(self, browser):
        browser.open(self.demo.url + "/")
        browser.wait_button_enabled().click()
        return browser.wait_sheet("ready")


class HappyPathTests(CheckoutTestCase):
    def test_validation_shipping_coupon_and_authorize_on_desktop(self):
        browser = self.browser(DESKTOP)
        browser.open(self.demo.url + "/")
        browser.wait_button_enabled()
        self.assertEqual(browser.page_total(), amount(APPLES + STANDARD))
        browser.find('[data-product="cider"] button[aria-label^="Add"]').click()
        browser.wait(lambda: browser.page_total() == amount(APPLES + CIDER + STANDARD), message="repriced basket")
        browser.screenshot("01-basket")

        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        self.assertEqual(browser.sheet_total(), amount(APPLES + CIDER + STANDARD))
        browser.screenshot("02-sheet")

        # A shipping change that changes the total, on the sheet and on the page.
        Select(browser.find('[data-testid="sheet-shipping-method"]')).select_by_value("express")
        expected = APPLES + CIDER + EXPRESS
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(expected), message="express")
        self.assertEqual(browser.page_total(), amount(expected))

        # An unknown coupon: Apple Pay error on the sheet, total unchanged.
        browser.find('[data-testid="sheet-coupon"]').send_keys("NOPE")
        browser.find('[data-testid="sheet-coupon-apply"]').click()
        browser.wait(lambda: "couponCodeInvalid" in browser.driver.execute_script(
            "return [...document.querySelectorAll('[data-testid=sheet-errors] li')].map(li => li.dataset.code)"),
            message="couponCodeInvalid on the sheet")
        self.assertEqual(browser.sheet_total(), amount(expected))

        # A real coupon: 10 % off the goods.
        coupon = browser.find('[data-testid="sheet-coupon"]')
        coupon.clear()
        coupon.send_keys("HARVEST10")
        browser.find('[data-testid="sheet-coupon-apply"]').click()
        discount = ((APPLES + CIDER) / 10).quantize(Decimal("0.01"))
        expected = APPLES + CIDER - discount + EXPRESS
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(expected), message="coupon")

        # An address the shop does not serve blocks payment; another country reprices delivery.
        contact = Select(browser.find('[data-testid="sheet-shipping-contact"]'))
        contact.select_by_index(2)
        browser.wait(lambda: browser.driver.execute_script(
            "return document.querySelector('[data-testid=sheet-pay]').disabled && "
            "[...document.querySelectorAll('[data-testid=sheet-errors] li')].some(li => li.dataset.code === 'addressUnserviceable')"),
            message="addressUnserviceable")
        contact.select_by_index(1)
        expected = APPLES + CIDER - discount + STANDARD
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(expected), message="DE")
        self.assertEqual(browser.page_total(), amount(expected))

        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("success")
        self.assertIn("Thank you", result.text)
        browser.wait(lambda: not browser.find_all(SHEET), message="the sheet closes")
        self.assertFalse(browser.find(BUTTON).is_displayed(), "no second payment for a paid order")
        browser.screenshot("03-success")

        order_id = self.last_order_id(browser)
        order = self.demo.order(order_id)
        self.assertEqual(order["state"], "paid")
        payments = self.demo.payments(order_id)
        self.assertEqual(len(payments), 1)
        self.assertEqual(payments[0]["state"], "authorized")
        self.assertEqual(payments[0]["amount"], int(expected * 100))
        self.assertEqual(payments[0]["currency"], "EUR")
        self.assertEqual(payments[0]["last_four"], "1111")
        self.assertClean(browser)

    def test_keyboard_only_payment_on_a_phone(self):
        browser = self.browser(PHONE)
        browser.open(self.demo.url + "/")
        button = browser.wait_button_enabled()
        browser.screenshot("01-basket")
        self.assertEqual(button.get_attribute("aria-label"), "Buy with Apple Pay")
        width = button.size["width"]
        self.assertGreater(width, 300, "full-width button on a 390 px screen")
        button.send_keys(Keys.ENTER)
        browser.wait_sheet("ready")
        browser.screenshot("02-sheet")
        browser.find('[data-testid="sheet-pay"]').send_keys(Keys.ENTER)
        browser.wait_status("success")
        browser.screenshot("03-success")
        self.assertEqual(browser.driver.switch_to.active_element, browser.find(RESULT), "focus moves to the outcome")
        self.assertEqual(self.demo.order(self.last_order_id(browser))["state"], "paid")
        self.assertClean(browser)

    def test_cancel_then_pay(self):
        browser = self.browser(DESKTOP)
        self.pay_flow_to_sheet(browser)
        browser.find('[data-testid="sheet-cancel"]').click()
        result = browser.wait_status("cancelled")
        self.assertIn("cancelled", result.text)
        browser.screenshot("04-cancelled")
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertClean(browser)


class ProcessorTests(CheckoutTestCase):
    demo_flags = ("--processor", "worldpay")

    def test_payment_through_the_mock_worldpay(self):
        browser = self.browser(DESKTOP)
        self.pay_flow_to_sheet(browser)
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        payment = self.demo.payments(self.last_order_id(browser))[0]
        self.assertEqual(payment["processor"], "worldpay")
        self.assertEqual(payment["state"], "authorized")
        self.assertIn("settle", json.loads(payment["links"]))
        self.assertClean(browser)


class ProcessorHoldsKeyTests(CheckoutTestCase):
    """The merchant as Worldline sets it up by default: Worldline holds the processing key."""

    demo_flags = ("--processor", "worldline", "--processor-holds-key")

    def test_the_processor_decrypts_what_orchard_forwards(self):
        config = json.loads((self.demo.state_dir / "orchard.json").read_text())
        self.assertEqual(config["merchants"][0]["processingKeys"], [{"certificate": "test-processor-held.pem"}],
                         "Orchard is given the certificate alone")
        browser = self.browser(DESKTOP)
        self.pay_flow_to_sheet(browser)
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        payment = self.demo.payments(self.last_order_id(browser))[0]
        self.assertEqual(payment["processor"], "worldline")
        self.assertEqual(payment["state"], "authorized")
        self.assertClean(browser)

    def test_a_token_for_another_amount_is_declined_by_the_processor(self):
        browser = self.browser(DESKTOP)
        self.pay_flow_to_sheet(browser)
        browser.find('[data-testid="sheet-tamper"]').click()
        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("failure")
        self.assertIn("declined", result.text)
        with self.demo.database() as db:
            self.assertEqual([row[0] for row in db.execute("SELECT state FROM payments")], ["refused"])
            self.assertEqual(db.execute("SELECT count(*) FROM orders WHERE state != 'open'").fetchone()[0], 0)
        self.assertClean(browser, allowed=[HTTP_FAILURE.format(402)])


class GatewayFailureTests(CheckoutTestCase):
    demo_flags = ("--fail-status", "500")

    def test_gateway_error_aborts_the_session_and_says_why(self):
        browser = self.browser(DESKTOP)
        browser.open(self.demo.url + "/")
        browser.wait_button_enabled().click()
        result = browser.wait_status("failure")
        self.assertIn("Apple Pay could not be started", result.text)
        browser.wait(lambda: not browser.find_all(SHEET), message="the sheet is aborted")
        browser.screenshot("05-validation-failed")
        self.assertIsNotNone(browser.wait_button_enabled(), "the shopper can try again")
        self.assertClean(browser, allowed=[HTTP_FAILURE.format(502)])


class TamperedTokenTests(CheckoutTestCase):
    def test_a_token_for_another_amount_fails_and_nothing_is_paid(self):
        browser = self.browser(DESKTOP)
        self.pay_flow_to_sheet(browser)
        order_total = browser.sheet_total()
        browser.find('[data-testid="sheet-tamper"]').click()
        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("failure")
        self.assertIn("does not match", result.text)
        # STATUS_FAILURE keeps the sheet open with Apple Pay's error for another try.
        browser.wait_sheet("ready")
        self.assertIn("does not match", browser.find('[data-testid="sheet-errors"]').text)
        browser.screenshot("06-payment-failed")
        browser.find('[data-testid="sheet-cancel"]').click()
        browser.wait(lambda: not browser.find_all(SHEET), message="the sheet closes")
        self.assertEqual(browser.find(RESULT).get_attribute("data-status"), "failure")
        self.assertEqual(browser.page_total(), order_total)
        with self.demo.database() as db:
            self.assertEqual(db.execute("SELECT count(*) FROM orders WHERE state != 'open'").fetchone()[0], 0)
            self.assertEqual(db.execute("SELECT count(*) FROM payments").fetchone()[0], 0)
        self.assertClean(browser, allowed=[HTTP_FAILURE.format(422)])


class UnavailableTests(CheckoutTestCase):
    demo_flags = ("--no-simulated-sheet",)

    def test_no_apple_pay_session(self):
        for viewport, name in [(DESKTOP, "desktop"), (PHONE, "phone")]:
            with self.subTest(viewport=name):
                browser = self.browser(viewport)
                browser.open(self.demo.url + "/")
                result = browser.wait_status("unavailable")
                self.assertIn("not available on this device", result.text)
                browser.wait(lambda: browser.page_total() is not None, message="the basket still shows")
                self.assertEqual(browser.find_all(BUTTON), [])
                self.assertTrue(browser.driver.execute_script("return !('ApplePaySession' in window)"))
                browser.screenshot("07-unavailable")
                self.assertClean(browser)

    def test_can_make_payments_false(self):
        browser = self.browser(DESKTOP, reviewer_double(can_make_payments=False))
        browser.open(self.demo.url + "/")
        browser.wait_status("unavailable")
        self.assertEqual(browser.find_all(BUTTON), [])
        self.assertClean(browser)


class ReviewerDoubleTests(CheckoutTestCase):
    """Drives the page with a double that is not Orchard's, through Apple's documented API and
    the two data-testid hooks only; the token comes from `orchard-sandbox token mint`."""

    def calls(self, browser, name):
        return [c for c in browser.driver.execute_script("return window.__double.calls") if c["call"] == name]

    def test_validation_and_authorization_with_an_independent_double(self):
        browser = self.browser(DESKTOP, reviewer_double(max_version=10))
        browser.open(self.demo.url + "/")
        self.assertFalse(browser.driver.execute_script("return document.documentElement.dataset.simulatedApplePay === 'true'"),
                         "the demo's simulator stays out when an ApplePaySession exists")
        browser.wait_button_enabled().click()

        created = self.calls(browser, "new")[0]
        self.assertEqual(created["version"], 10, "highest version the browser supports")
        request = created["request"]
        self.assertNotIn("supportsCouponCode", request, "coupons need version 12")
        self.assertIn("supports3DS", request["merchantCapabilities"])
        self.assertEqual(request["total"]["amount"], amount(APPLES + STANDARD))

        browser.wait(lambda: self.calls(browser, "completeMerchantValidation"), message="completeMerchantValidation")
        session = self.calls(browser, "completeMerchantValidation")[0]["session"]
        for key in ["merchantSessionIdentifier", "signature", "nonce", "expiresAt", "domainName"]:
            self.assertIn(key, session)
        self.assertEqual(session["domainName"], "127.0.0.1")

        browser.driver.execute_script("window.__double.shippingContact('DE')")
        browser.wait(lambda: self.calls(browser, "completeShippingContactSelection"), message="shipping update")
        update = self.calls(browser, "completeShippingContactSelection")[0]["update"]
        self.assertEqual(update["newTotal"]["amount"], amount(APPLES + STANDARD))
        self.assertEqual([m["identifier"] for m in update["newShippingMethods"]], ["standard"], "express is France only")

        token = self.demo.mint_token(int((APPLES + STANDARD) * 100), request["applicationData"])
        browser.driver.execute_script("window.__double.authorize(arguments[0])", token)
        browser.wait(lambda: self.calls(browser, "completePayment"), message="completePayment")
        self.assertEqual(self.calls(browser, "completePayment")[0]["result"]["status"], 0)
        browser.wait_status("success")
        self.assertEqual(self.demo.order(self.last_order_id(browser))["state"], "paid")
        self.assertEqual(self.calls(browser, "abort"), [])
        self.assertClean(browser)

    def test_a_token_for_another_order_gets_status_failure(self):
        browser = self.browser(DESKTOP, reviewer_double())
        browser.open(self.demo.url + "/")
        browser.wait_button_enabled().click()
        browser.wait(lambda: self.calls(browser, "completeMerchantValidation"), message="validation")
        other = json.dumps({"items": [{"productId": "cider", "quantity": 1}]}).encode()
        with urllib.request.urlopen(urllib.request.Request(
                self.demo.url + "/api/orders", data=other, headers={"Content-Type": "application/json"})) as response:
            other_order = json.load(response)
        token = self.demo.mint_token(int((APPLES + STANDARD) * 100), other_order["paymentRequest"]["applicationData"])
        browser.driver.execute_script("window.__double.authorize(arguments[0])", token)
        browser.wait(lambda: self.calls(browser, "completePayment"), message="completePayment")
        result = self.calls(browser, "completePayment")[0]["result"]
        self.assertEqual(result["status"], 1)
        self.assertTrue(result["errors"] and result["errors"][0]["message"])
        browser.wait_status("failure")
        browser.driver.execute_script("window.__double.cancel()")
        self.assertEqual(browser.find(RESULT).get_attribute("data-status"), "failure")
        self.assertClean(browser, allowed=[HTTP_FAILURE.format(422)])


class AppleSDKTests(unittest.TestCase):
    def page(self, *flags):
        demo = Demo(*flags)
        self.addCleanup(demo.stop)
        browser = Browser(DESKTOP)
        self.addCleanup(browser.quit)
        browser.open(demo.url + "/")
        return demo, browser

    def test_scan_a_code_outside_safari_pays_through_the_sdks_session(self):
        """Chrome, Edge, Firefox: no ApplePaySession until Apple's SDK has run, so the page loads
        it first and asks for Apple Pay after. On today's main the page said unavailable here."""
        sdk = FakeAppleSDK(delay=1, session=True)
        self.addCleanup(sdk.stop)
        demo, browser = self.page("--apple-pay-sdk", sdk.url)
        button = browser.wait_button_enabled(timeout=10)
        self.assertEqual(button.tag_name, "apple-pay-button", "the SDK's button, never a dead one of the page's")
        self.assertTrue(browser.driver.execute_script("return window.__standInSession === true"),
                        "the session is the SDK's, not the page's own import of the sheet")
        browser.driver.execute_script(VALIDATION_TIMER)
        button.click()
        browser.wait_sheet("ready")
        elapsed = browser.driver.execute_script("return window.__validated - window.__clicked")
        print(f"\n  scan-a-code path: click to merchant session {elapsed:.0f} ms (real server, mock gateway over mTLS)")
        browser.screenshot("sdk-scan-a-code-sheet")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        payment = demo.payments(browser.find(RESULT).text.split("Order ", 1)[1].split(":", 1)[0])[0]
        self.assertEqual(payment["state"], "authorized")
        self.assertEqual(browser.problems(), [])

    def test_the_demos_stand_in_sdk_pays_as_outside_safari(self):
        demo, browser = self.page("--stand-in-sdk")
        button = browser.wait_button_enabled(timeout=10)
        self.assertEqual(button.tag_name, "apple-pay-button")
        self.assertTrue(browser.driver.execute_script("return window.__standInSession === true"))
        browser.screenshot("sdk-stand-in-button")
        button.click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(browser.problems(), [])

    def test_a_script_that_fails_to_load_ends_unavailable_with_its_reason(self):
        blocked = f"http://127.0.0.1:{closed_loopback_port()}/jsapi/apple-pay-sdk.js"
        _, browser = self.page("--apple-pay-sdk", blocked, "--no-simulated-sheet")
        result = browser.wait_status("unavailable")
        self.assertIn("Apple's script could not be loaded", result.text)
        self.assertEqual(browser.find_all(BUTTON), [], "no dead button")
        self.assertEqual(browser.problems(allowed=[r"apple-pay-sdk\.js - Failed to load resource: net::ERR_CONNECTION_REFUSED"]), [])

    def test_slow_sdk_is_waited_for_then_provides_apple_pay_button(self):
        sdk = FakeAppleSDK(delay=2)
        self.addCleanup(sdk.stop)
        _, browser = self.page("--apple-pay-sdk", sdk.url)
        browser.wait(lambda: browser.find_all(BUTTON), timeout=15, message="a button")
        self.assertEqual(browser.find(BUTTON).tag_name, "apple-pay-button", "Apple's button, not the page's first")
        self.assertEqual(sdk.requests, 1)
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(browser.problems(), [])

    def test_blocked_sdk_keeps_the_demos_sheet_working(self):
        blocked = f"http://127.0.0.1:{closed_loopback_port()}/jsapi/apple-pay-sdk.js"
        _, browser = self.page("--apple-pay-sdk", blocked)
        browser.wait_button_enabled(timeout=5).click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(browser.find(BUTTON).tag_name, "button")
        self.assertEqual(browser.problems(allowed=[r"apple-pay-sdk\.js - Failed to load resource: net::ERR_CONNECTION_REFUSED"]), [])


class HeaderTests(CheckoutTestCase):
    def test_strict_content_security_policy(self):
        with urllib.request.urlopen(self.demo.url + "/") as response:
            policy = response.headers["Content-Security-Policy"]
            self.assertEqual(response.headers["X-Frame-Options"], "DENY")
        self.assertIn("default-src 'none'", policy)
        self.assertIn("script-src 'self'", policy)
        self.assertNotIn("unsafe-inline", policy)
        self.assertNotIn("unsafe-eval", policy)
        self.assertIn("frame-ancestors 'none'", policy)


if __name__ == "__main__":
    unittest.main(verbosity=2)


# Records the Wallet orders the simulated sheet was handed by completePayment.
WALLET_ORDER_RECORDER = """
window.__walletOrders = [];
window.addEventListener('simulatedsheet:walletorder', (event) => window.__walletOrders.push(event.detail));
"""


class WalletOrdersTests(CheckoutTestCase):
    """The demo with --wallet-orders: the page hands the authorize answer's orderDetails to completePayment."""

    demo_flags = ("--wallet-orders",)

    def pay_and_read_order(self):
        browser = self.browser(DESKTOP, WALLET_ORDER_RECORDER)
        self.pay_flow_to_sheet(browser)
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        orders = browser.driver.execute_script("return window.__walletOrders")
        self.assertEqual(len(orders), 1, orders)
        order = orders[0]
        self.assertEqual(order["orderTypeIdentifier"], "order.dev.orchard.demo")
        self.assertEqual(order["webServiceURL"], f"http://127.0.0.1:{self.demo.port}/wallet-orders")
        self.assertEqual(len(order["orderIdentifier"]), 32)
        self.assertGreaterEqual(order["tokenLength"], 16)
        self.assertClean(browser)
        return order

    def test_the_sheet_receives_order_details(self):
        self.pay_and_read_order()


class WalletOrdersPaymentRequestTests(WalletOrdersTests):
    """The same through the Payment Request API: complete('success', {orderDetails})."""

    demo_flags = ("--wallet-orders", "--payment-request")

