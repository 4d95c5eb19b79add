"""The checkout page in WebKitGTK, Safari's engine (Debian's webkit2gtk-driver), under Xvfb:
scripts/browser-test runs it through xvfb-run. WebKitGTK has no Apple Pay of its own, so the
demo's simulated sheet or the stand-in SDK provides ApplePaySession, as on the Chromium suites."""

import sys
import unittest
import warnings
from pathlib import Path

# Selenium's own WebKitGTK driver sets an address its RemoteConnection deprecates; not ours to fix.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"selenium\..*")

sys.path.insert(0, str(Path(__file__).parent))
from harness import RESULT, Demo, WebKitBrowser  # noqa: E402


class WebKitCheckoutTests(unittest.TestCase):
    def pay(self, *flags):
        demo = Demo(*flags)
        self.addCleanup(demo.stop)
        browser = WebKitBrowser()
        self.addCleanup(browser.quit)
        browser.open(demo.url + "/")
        button = browser.wait_button_enabled(timeout=15)
        browser.driver.execute_script(
            "window.__starts = []; document.addEventListener('orchard:start', (e) => window.__starts.push(e.detail.api));")
        button.click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("success")
        order_id = result.text.split("Order ", 1)[1].split(":", 1)[0]
        self.assertEqual([p["state"] for p in demo.payments(order_id)], ["authorized"])
        self.api = browser.driver.execute_script("return window.__starts[0]")
        return button.tag_name, browser

    def test_the_page_pays_in_safaris_engine(self):
        tag, browser = self.pay()
        self.assertEqual(tag, "button", "the page's own button")
        browser.screenshot("webkit-paid")

    def test_with_an_sdk_configured_it_still_pays(self):
        tag, _ = self.pay("--stand-in-sdk")
        self.assertEqual(tag, "apple-pay-button", "the SDK's button")

    def test_payment_request_mode_pays_in_safaris_engine(self):
        tag, browser = self.pay("--stand-in-sdk", "--payment-request")
        self.assertEqual(tag, "apple-pay-button")
        # WebKitGTK builds the Payment Request API only where its platform has a payment coordinator.
        has_api = browser.driver.execute_script("return typeof PaymentRequest === 'function'")
        self.assertEqual(self.api, "paymentrequest" if has_api else "session")
        print(f"\n  WebKitGTK {'has' if has_api else 'has no'} PaymentRequest: the page paid through {self.api}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
