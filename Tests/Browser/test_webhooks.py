"""Standard Webhooks, checked with PyPI's `standardwebhooks` library on real deliveries from
`orchard-sandbox demo`: a merchant mid-rotation (a `whsec_` secret and the older one it replaces)
signs each delivery with both, so a shop that knows only the old secret and one that knows only
the new one both accept it. `orchard webhooks send-test` sends the delivery through the demo's
admin API. No browser; loopback only."""

import http.server
import subprocess
import sys
import threading
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


class RefusingReceiver:
    """A webhook endpoint that answers 500 with a long body holding terminal escapes."""

    BODY = b"\x1b[2J\x1b]0;owned\x07refused " + b"x" * 5000

    def __init__(self):
        receiver = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.requests.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                self.send_response(500)
                self.send_header("Content-Length", str(len(RefusingReceiver.BODY)))
                self.end_headers()
                self.wfile.write(RefusingReceiver.BODY)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class SendTestAnswerTests(unittest.TestCase):
    def test_a_refusing_endpoint_is_shown_bounded_and_escaped_and_the_command_fails(self):
        receiver = RefusingReceiver()
        self.addCleanup(receiver.stop)
        demo = Demo("--webhook-url", receiver.url)
        self.addCleanup(demo.stop)
        sent = subprocess.run(
            [str(ORCHARD), "webhooks", "send-test", "--server", demo.url, "--token-file", str(demo.state_dir / "admin-token"),
             "--merchant", MERCHANT, "--type", "mandate.ended"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(sent.returncode, 1, sent.stdout + sent.stderr)
        self.assertEqual(len(receiver.requests), 1)
        self.assertIn("HTTP 500", sent.stdout)
        self.assertIn("answered HTTP 500, not 2xx", sent.stderr)
        self.assertIn("\\u{1B}[2J\\u{1B}]0;owned\\u{7}refused xxx", sent.stdout)
        self.assertNotIn("\x1b", sent.stdout + sent.stderr)
        self.assertNotIn("\x07", sent.stdout + sent.stderr)
        self.assertLess(len(sent.stdout), 1500, "the answer is shown bounded")


if __name__ == "__main__":
    unittest.main(verbosity=2)
