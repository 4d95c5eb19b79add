"""Standard Webhooks, checked with PyPI's `standardwebhooks` library on real deliveries from
`orchard-sandbox demo`: a merchant mid-rotation (a `whsec_` secret and the older one it replaces)
signs each delivery with both, so a shop that knows only the old secret and one that knows only
the new one both accept it. `orchard webhooks send-test` sends the delivery through the demo's
admin API. No browser; loopback only."""

import subprocess
import sys
import time
import unittest
from pathlib import Path

from standardwebhooks import Webhook, WebhookVerificationError

sys.path.insert(0, str(Path(__file__).parent))
from example_shop import ShopBackend, standard_webhook  # noqa: E402
from harness import Demo  # noqa: E402

ORCHARD = Path(__file__).resolve().parents[2] / ".build" / "debug" / "orchard"
MERCHANT = "merchant.dev.orchard.demo"


class RotationTests(unittest.TestCase):
    def setUp(self):
        self.shop = ShopBackend(orchard_url=None, api_key=None, webhook_secret=None)
        self.addCleanup(self.shop.stop)
        self.demo = Demo("--webhook-url", self.shop.webhook_url, "--webhook-rotation")
        self.addCleanup(self.demo.stop)
        self.new_secret = (self.demo.state_dir / "webhook-secret").read_text().strip()
        self.old_secret = (self.demo.state_dir / "webhook-previous-secret").read_text().strip()
        # The shop has not moved yet: its receiver knows only the old secret.
        self.shop.webhook_secret = self.old_secret

    def send_test(self, event_type):
        return subprocess.run(
            [str(ORCHARD), "webhooks", "send-test", "--server", self.demo.url,
             "--token-file", str(self.demo.state_dir / "admin-token"), "--merchant", MERCHANT, "--type", event_type],
            capture_output=True, text=True, timeout=60)

    def wait_webhook(self, event_type, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [hook for hook in self.shop.webhooks if hook[1] == event_type]
            if found:
                return found[0]
            time.sleep(0.05)
        self.fail(f"no {event_type} webhook within {timeout} s")

    def test_a_receiver_with_either_secret_verifies_a_delivery_during_a_rotation(self):
        self.assertTrue(self.new_secret.startswith("whsec_"))
        self.assertFalse(self.old_secret.startswith("whsec_"))
        sent = self.send_test("payment.authorized")
        self.assertEqual(sent.returncode, 0, sent.stderr)
        self.assertIn("HTTP 204", sent.stdout)
        event_id, _, verified, body, _ = self.wait_webhook("payment.authorized")
        self.assertTrue(verified, "the shop that knows only the old secret accepts it")
        headers = self.shop.deliveries[event_id]["headers"]
        self.assertEqual(len(headers["webhook-signature"].split(" ")), 2)
        # The shop that knows only the new secret, as the library takes a whsec_ secret.
        event = Webhook(self.new_secret).verify(body, headers)
        self.assertEqual((event["id"], event["type"], event["test"]), (event_id, "payment.authorized", True))
        self.assertEqual(standard_webhook(self.old_secret).verify(body, headers)["id"], event_id)
        # Neither a third secret nor a changed body passes.
        with self.assertRaises(WebhookVerificationError):
            Webhook("whsec_" + "A" * 43).verify(body, headers)
        with self.assertRaises(WebhookVerificationError):
            Webhook(self.new_secret).verify(body.replace(b'"amount":1234', b'"amount":1'), headers)

    def test_an_unknown_type_is_refused_and_nothing_is_sent(self):
        refused = self.send_test("payment.teleported")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("not an event type", refused.stderr)
        self.assertIn("payment.authorized", refused.stderr)
        self.assertEqual(self.shop.webhooks, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
