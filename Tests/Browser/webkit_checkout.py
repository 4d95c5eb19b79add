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
        button.click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        result = browser.wait_status("success")
        order_id = result.text.split("Order ", 1)[1].split(":", 1)[0]
        self.assertEqual([p["state"] for p in demo.payments(order_id)], ["authorized"])
        return button.tag_name, browser

    def test_the_page_pays_in_safaris_engine(self):
        tag, browser = self.pay()
        self.assertEqual(tag, "button", "the page's own button")
        browser.screenshot("webkit-paid")

    def test_with_an_sdk_configured_it_still_pays(self):
        tag, _ = self.pay("--stand-in-sdk")
        self.assertEqual(tag, "apple-pay-button", "the SDK's button")


if __name__ == "__main__":
    unittest.main(verbosity=2)
