"""A deferred payment's agreement survives the shopper's change of card, on the ApplePaySession
path and on the Payment Request path. Safari drops an agreement from the sheet when an update
leaves it out (WebKit/WebKit#70430): the terms go, and the shopper pays with a device token. The
simulated sheet does the same, so the agreement is still there after the change only because the
page sent it again with the update; then the first payment carries a merchant token and sets up a
deferred mandate. The example shop behind real nginx, headless Chromium, loopback only."""

import sys
import unittest
from pathlib import Path

from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).parent))
from harness import SHEET  # noqa: E402
from test_subscriptions import MERCHANT, ShopWithOrchard  # noqa: E402


class AgreementUpdateTests(ShopWithOrchard, unittest.TestCase):
    def terms(self):
        """The agreement the sheet holds: its kind, what it shows, and where Apple would notify."""
        sheet = self.browser.find(SHEET)
        shown = self.browser.find_all('[data-testid="sheet-agreement"]')
        if not shown:
            return sheet.get_attribute("data-agreement"), None, None
        return (sheet.get_attribute("data-agreement"), shown[0].text,
                shown[0].get_attribute("data-token-notification-url"))

    def pay_deferred_after_changing_card(self, processor, mode):
        self.start(processor)
        browser = self.browser
        browser.open(self.nginx.url + f"/?plan=deferred&mode={mode}")
        browser.wait_button_enabled().click()
        sheet = browser.wait_sheet("ready")
        agreement = self.shop.created[-1]["paymentRequest"]["deferredPaymentRequest"]
        ships = agreement["deferredBilling"]["deferredPaymentDate"][:10]
        expected = ("deferredPaymentRequest", f"Harvest pre-order: Harvest box 24.68 EUR on {ships}",
                    f"{self.nginx.url}/orchard/apple-pay/token-events/{MERCHANT}")
        # The sheet already took the updates for the first card and the address.
        self.assertEqual(self.terms(), expected)

        updates = int(sheet.get_attribute("data-updates"))
        Select(browser.find('[data-testid="sheet-card"]')).select_by_index(1)
        browser.wait(lambda: int(sheet.get_attribute("data-updates")) > updates and browser.sheet_state() == "ready",
                     message="the sheet's update for the other card")
        self.assertEqual(self.terms(), expected, "the agreement is still on the sheet after the change of card")
        browser.screenshot(f"21-deferred-after-card-change-{mode}")

        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(browser.driver.execute_script("return window.__starts"), [mode])
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])

        events = self.webhooks(2)
        self.assertEqual([kind for kind, _, _ in events[:2]], ["payment.authorized", "mandate.created"])
        payment, mandate = events[0][2]["data"]["payment"], events[1][2]["data"]["mandate"]
        self.assertEqual(payment["network"], "MasterCard", "paid with the card chosen on the sheet")
        self.assertEqual(payment["mandateId"], mandate["id"])
        self.assertEqual((mandate["state"], mandate["type"], mandate["description"]), ("active", "deferred", "Harvest pre-order"))
        # A sheet that lost the agreement pays with a device token: no merchant token on either.
        token = mandate.get("merchantTokenIdentifier")
        self.assertTrue(token and token.startswith("DNITHE"), f"paid with a merchant token, not {token!r}")
        self.assertEqual(payment.get("merchantTokenIdentifier"), token)

    def test_session_path_keeps_a_deferred_agreement_through_a_change_of_card(self):
        self.pay_deferred_after_changing_card("worldpay", "session")

    def test_payment_request_path_keeps_a_deferred_agreement_through_a_change_of_card(self):
        self.pay_deferred_after_changing_card("worldline", "paymentrequest")


if __name__ == "__main__":
    unittest.main(verbosity=2)
