"""Browser tests of the checkout page's Payment Request path (`checkout.applePayMode`
"paymentrequest", the demo's --payment-request) in headless Chromium: `new PaymentRequest(…)`
with Apple Pay's method, run by the demo's stand-in for Apple's SDK as Apple's SDK runs it in
Chrome and Edge, against a real `orchard-sandbox demo` (merchant validation over mTLS to the mock
gateway, minted tokens, the authorize endpoint, SQLite). Run: python3 Tests/Browser/test_payment_request.py"""

import statistics
import sys
import unittest
from decimal import Decimal
from pathlib import Path

from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).parent))
from harness import (BUTTON, DESKTOP, RESULT, SHEET, START_RECORDER, Browser, Demo, FakeAppleSDK,  # noqa: E402
                     closed_loopback_port)
from test_checkout import APPLES, EXPRESS, HTTP_FAILURE, STANDARD, VALIDATION_TIMER, amount  # noqa: E402

NO_PAYMENT_REQUEST = "delete window.PaymentRequest;"  # as in Firefox
SDK_BLOCKED = r"apple-pay-sdk\.js - Failed to load resource: net::ERR_CONNECTION_REFUSED"


class PaymentRequestTestCase(unittest.TestCase):
    def page(self, *flags, init_script=START_RECORDER):
        demo = Demo("--payment-request", *flags)
        self.addCleanup(demo.stop)
        browser = Browser(DESKTOP, init_script)
        self.addCleanup(browser.quit)
        browser.open(demo.url + "/")
        return demo, browser

    def apis(self, browser):
        return browser.driver.execute_script("return window.__starts")

    def order_id(self, browser):
        return browser.find(RESULT).text.split("Order ", 1)[1].split(":", 1)[0]

    def sheet_errors(self, browser):
        return browser.find('[data-testid="sheet-errors"]').text


class PaymentRequestTests(PaymentRequestTestCase):
    def test_scan_a_code_through_the_payment_request_api_pays(self):
        """Chrome and Edge: Apple's SDK arrives after the page, defines ApplePaySession and maps a
        PaymentRequest whose only method is Apple Pay onto it. On main before this change the page
        never made a PaymentRequest (it has no mode), so `apis` below was ['session']."""
        sdk = FakeAppleSDK(delay=1, session=True)
        self.addCleanup(sdk.stop)
        demo, browser = self.page("--apple-pay-sdk", sdk.url)
        button = browser.wait_button_enabled(timeout=10)
        self.assertEqual(button.tag_name, "apple-pay-button")
        self.assertTrue(browser.driver.execute_script("return window.__standInSession === true"))
        browser.driver.execute_script(VALIDATION_TIMER)
        button.click()
        browser.wait_sheet("ready")
        elapsed = browser.driver.execute_script("return window.__validated - window.__clicked")
        print(f"\n  Payment Request path: click to merchant session {elapsed:.0f} ms (real server, mock gateway over mTLS)")
        self.assertEqual(self.apis(browser), ["paymentrequest"])
        self.assertEqual(browser.sheet_total(), amount(APPLES + STANDARD))

        # shippingoptionchange: the server reprices, the sheet and the page follow.
        Select(browser.find('[data-testid="sheet-shipping-method"]')).select_by_value("express")
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(APPLES + EXPRESS),
                     message="express on the sheet")
        self.assertEqual(browser.page_total(), amount(APPLES + EXPRESS))

        # paymentmethodchange with a coupon code: Apple Pay's error reaches the sheet as an ApplePayError.
        browser.find('[data-testid="sheet-coupon"]').send_keys("NOPE")
        browser.find('[data-testid="sheet-coupon-apply"]').click()
        browser.wait(lambda: "couponCodeInvalid" in browser.driver.execute_script(
            "return [...document.querySelectorAll('[data-testid=sheet-errors] li')].map(li => li.dataset.code)"),
            message="couponCodeInvalid on the sheet")
        coupon = browser.find('[data-testid="sheet-coupon"]')
        coupon.clear()
        coupon.send_keys("HARVEST10")
        browser.find('[data-testid="sheet-coupon-apply"]').click()
        discount = (APPLES / 10).quantize(Decimal("0.01"))
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(APPLES - discount + EXPRESS),
                     message="the coupon applied, express kept")

        # shippingaddresschange: an address the shop does not serve blocks paying; Germany reprices delivery.
        contact = Select(browser.find('[data-testid="sheet-shipping-contact"]'))
        contact.select_by_index(2)
        browser.wait(lambda: "addressUnserviceable" in browser.driver.execute_script(
            "return [...document.querySelectorAll('[data-testid=sheet-errors] li')].map(li => li.dataset.code)"),
            message="addressUnserviceable on the sheet")
        contact.select_by_index(1)
        expected = APPLES - discount + STANDARD
        browser.wait(lambda: browser.sheet_state() == "ready" and browser.sheet_total() == amount(expected), message="DE")
        self.assertEqual(browser.page_total(), amount(expected))

        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        browser.wait(lambda: not browser.find_all(SHEET), message="complete('success') closes the sheet")
        payments = demo.payments(self.order_id(browser))
        self.assertEqual([(p["state"], p["amount"]) for p in payments], [("authorized", int(expected * 100))])
        self.assertEqual(demo.order(self.order_id(browser))["state"], "paid")
        self.assertEqual(browser.problems(), [])

    def test_the_demos_stand_in_sdk_pays_through_the_payment_request_api(self):
        demo, browser = self.page("--stand-in-sdk")
        button = browser.wait_button_enabled(timeout=10)
        self.assertEqual(button.tag_name, "apple-pay-button")
        button.click()
        sheet = browser.wait_sheet("ready")
        self.assertEqual(sheet.get_attribute("data-api"), "paymentrequest", "the sheet opened by new PaymentRequest(…).show()")
        browser.screenshot("payment-request-sheet")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(self.apis(browser), ["paymentrequest"])
        self.assertEqual(demo.order(self.order_id(browser))["state"], "paid")
        self.assertEqual(browser.problems(), [])

    def test_a_refused_token_is_retried_on_the_open_sheet_and_charged_once(self):
        demo, browser = self.page("--stand-in-sdk")
        browser.wait_button_enabled(timeout=10).click()
        browser.wait_sheet("ready")
        tamper = browser.find('[data-testid="sheet-tamper"]')
        tamper.click()
        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("failure")
        self.assertIn("does not match", result.text)
        # retry(): the sheet stays open with the server's error, and the shopper pays again.
        browser.wait_sheet("ready")
        self.assertIn("does not match", self.sheet_errors(browser))
        browser.screenshot("payment-request-retry")
        tamper.click()
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        payments = demo.payments(self.order_id(browser))
        self.assertEqual([p["state"] for p in payments], ["authorized"])
        self.assertEqual(self.apis(browser), ["paymentrequest"], "one request, retried")
        self.assertEqual(browser.problems(allowed=[HTTP_FAILURE.format(422)]), [])

    def test_closing_the_sheet_after_a_refusal_ends_in_failure_and_charges_nothing(self):
        demo, browser = self.page("--stand-in-sdk")
        browser.wait_button_enabled(timeout=10).click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-tamper"]').click()
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("failure")
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-cancel"]').click()
        browser.wait(lambda: not browser.find_all(SHEET), message="the sheet closes")
        self.assertEqual(browser.find(RESULT).get_attribute("data-status"), "failure")
        with demo.database() as db:
            self.assertEqual(db.execute("SELECT count(*) FROM payments").fetchone()[0], 0)
        self.assertEqual(self.apis(browser), ["paymentrequest"])
        self.assertEqual(browser.problems(allowed=[HTTP_FAILURE.format(422)]), [])

    def test_cancel_ends_cancelled_and_the_shopper_can_pay_again(self):
        _, browser = self.page("--stand-in-sdk")
        browser.wait_button_enabled(timeout=10).click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-cancel"]').click()
        result = browser.wait_status("cancelled")
        self.assertIn("cancelled", result.text)
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(self.apis(browser), ["paymentrequest", "paymentrequest"])
        self.assertEqual(browser.problems(), [])

    def test_a_gateway_error_ends_in_failure_with_the_reason(self):
        _, browser = self.page("--stand-in-sdk", "--fail-status", "500")
        browser.wait_button_enabled(timeout=10).click()
        result = browser.wait_status("failure")
        self.assertIn("Apple Pay could not be started", result.text)
        browser.wait(lambda: not browser.find_all(SHEET), message="the request is aborted")
        self.assertEqual(self.apis(browser), ["paymentrequest"])
        self.assertIsNotNone(browser.wait_button_enabled(), "the shopper can try again")
        self.assertEqual(browser.problems(allowed=[HTTP_FAILURE.format(502)]), [])

    def test_without_payment_request_as_in_firefox_it_pays_through_the_session(self):
        demo, browser = self.page("--stand-in-sdk", init_script=NO_PAYMENT_REQUEST + START_RECORDER)
        browser.wait_button_enabled(timeout=10).click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(self.apis(browser), ["session"])
        self.assertEqual(demo.order(self.order_id(browser))["state"], "paid")
        self.assertEqual(browser.problems(), [])

    def test_an_sdk_that_fails_to_load_ends_unavailable_with_its_reason(self):
        blocked = f"http://127.0.0.1:{closed_loopback_port()}/jsapi/apple-pay-sdk.js"
        _, browser = self.page("--apple-pay-sdk", blocked, "--no-simulated-sheet")
        result = browser.wait_status("unavailable")
        self.assertIn("Apple's script could not be loaded", result.text)
        self.assertEqual(browser.find_all(BUTTON), [], "no dead button")
        self.assertEqual(browser.problems(allowed=[SDK_BLOCKED]), [])


class ClickToValidationTests(unittest.TestCase):
    ROUNDS = 7

    def median_ms(self, *flags):
        """Opens the sheet ROUNDS times (cancelling in between) and returns the median time from the
        click to the server's merchant session, through the stand-in SDK."""
        demo = Demo("--stand-in-sdk", *flags)
        self.addCleanup(demo.stop)
        browser = Browser(DESKTOP, START_RECORDER)
        self.addCleanup(browser.quit)
        browser.open(demo.url + "/")
        times = []
        for _ in range(self.ROUNDS):
            browser.wait_button_enabled(timeout=10)
            browser.driver.execute_script(VALIDATION_TIMER)
            browser.find(BUTTON).click()
            browser.wait_sheet("ready")
            times.append(browser.driver.execute_script("return window.__validated - window.__clicked"))
            browser.find('[data-testid="sheet-cancel"]').click()
            browser.wait_status("cancelled")
        return statistics.median(times), set(browser.driver.execute_script("return window.__starts"))

    def test_click_to_merchant_validation_on_both_paths(self):
        session, session_apis = self.median_ms()
        request, request_apis = self.median_ms("--payment-request")
        self.assertEqual((session_apis, request_apis), ({"session"}, {"paymentrequest"}))
        print(f"\n  click to merchant session, median of {self.ROUNDS}: ApplePaySession {session:.0f} ms, "
              f"Payment Request {request:.0f} ms (ratio {request / max(session, 0.1):.2f})")


if __name__ == "__main__":
    unittest.main(verbosity=2)
