"""What a shopper sees while the shop's database is away: every call that needs it answers 503
`store_unavailable` (the server side is tested in Swift, over real PostgreSQL and SQLite); here
the page's own fetch is answered so, in headless Chromium, to check the words the shopper gets.
Run: python3 Tests/Browser/test_outage.py"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import DESKTOP, SHEET, Browser, Demo  # noqa: E402
from test_checkout import HTTP_FAILURE  # noqa: E402

# Answers the page's calls whose path contains `window.__outage` with the server's 503, as
# Orchard sends it while its database cannot be reached.
OUTAGE = """
window.__outage = null;
const fetchBefore = window.fetch;
window.fetch = (resource, init) => {
  if (window.__outage && String(resource).includes(window.__outage)) {
    const body = JSON.stringify({ error: { code: 'store_unavailable',
      message: 'the service cannot reach its database right now; nothing was changed, try again shortly' } });
    return Promise.resolve(new Response(body, { status: 503, headers: { 'Content-Type': 'application/json', 'Retry-After': '5' } }));
  }
  return fetchBefore(resource, init);
};
"""


class OutageTests(unittest.TestCase):
    def setUp(self):
        self.demo = Demo()
        self.addCleanup(self.demo.stop)
        self.browser = Browser(DESKTOP, OUTAGE)
        self.addCleanup(self.browser.quit)
        self.browser.open(self.demo.url + "/")

    def test_a_basket_the_shop_cannot_price_asks_to_try_again(self):
        browser = self.browser
        browser.wait_button_enabled()
        browser.driver.execute_script("window.__outage = '/api/orders'")
        browser.find('[data-product="cider"] button[aria-label^="Add"]').click()
        result = browser.wait_status("failure")
        self.assertIn("briefly unavailable", result.text)
        self.assertIn("try again", result.text)
        # Back: the next change prices the basket again.
        browser.driver.execute_script("window.__outage = null")
        browser.find('[data-product="cider"] button[aria-label^="Add"]').click()
        browser.wait_button_enabled()

    def test_the_sheet_closes_with_try_again_when_the_session_call_gets_503(self):
        browser = self.browser
        browser.driver.execute_script("window.__outage = '/api/apple-pay/session'")
        browser.wait_button_enabled().click()
        result = browser.wait_status("failure")
        self.assertIn("briefly unavailable, please try again in a moment", result.text)
        browser.wait(lambda: not browser.find_all(SHEET), message="the sheet is aborted")
        browser.driver.execute_script("window.__outage = null")
        browser.wait_button_enabled().click()
        browser.wait_sheet("ready")
        browser.find('[data-testid="sheet-pay"]').click()
        browser.wait_status("success")
        self.assertEqual(browser.problems(allowed=[HTTP_FAILURE.format(503)]), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
