"""pretix-orchard's Orchard client on its own (no pretix, no Django): the shapes it accepts for
Orchard's URL, key and webhook secret, minor units, and how it reads Orchard's answers, against a
small stand-in server on loopback. Run by scripts/pretix-test."""

import http.server
import json
import sys
import threading
import unittest
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integrations" / "pretix-orchard"))
from pretix_orchard.client import (  # noqa: E402
    OrchardClient, OrchardError, OrchardUnavailable, check_api_key, check_base_url, check_webhook_secret,
    currency_problem, exponents, minor_units, payment_in_progress, webhook_key,
)

KEY = "osk_key_0123456789abcdef_" + "Ab-_" * 10 + "xyz"


class ShapeTests(unittest.TestCase):
    def test_base_url(self):
        for good in ["https://orchard.example", "https://orchard.example:8443/orchard", "http://127.0.0.1:8080",
                     "http://localhost:8080", "http://[::1]:8080", "http://127.0.0.9"]:
            self.assertIsNone(check_base_url(good), good)
        for bad in ["http://orchard.example", "http://10.0.0.5:8080", "ftp://127.0.0.1", "orchard.example",
                    "https://user:secret@orchard.example", "https://orchard.example/?x=1", "https://", "http://127.0.0.1:port"]:
            self.assertIsNotNone(check_base_url(bad), bad)

    def test_api_key(self):
        self.assertEqual(len(KEY), len("osk_key_") + 16 + 1 + 43)
        self.assertIsNone(check_api_key(KEY))
        for bad in ["", "osk_key_0123456789ABCDEF_" + "A" * 43, "osk_key_0123456789abcdef_" + "A" * 42,
                    "osk_key_0123456789abcdef_" + "A" * 42 + "=", "sk_live_" + "a" * 40, KEY + " "]:
            self.assertIsNotNone(check_api_key(bad), bad)

    def test_webhook_secret(self):
        self.assertIsNone(check_webhook_secret("whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="))  # 32 bytes
        self.assertIsNone(check_webhook_secret("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"))  # 24 bytes, unpadded
        self.assertIsNotNone(check_webhook_secret("whsec_MDEyMzQ1Njc4OWFi"))  # 12 bytes
        self.assertIsNotNone(check_webhook_secret("whsec_not base64!"))
        self.assertIsNone(check_webhook_secret("e5413bf73afd24484bd9490602c29d5e"))  # an older secret of 32 characters
        self.assertIsNotNone(check_webhook_secret("short-legacy-secret"))
        self.assertEqual(webhook_key("whsec_abc"), "whsec_abc")
        self.assertEqual(webhook_key("e5413bf73afd24484bd9490602c29d5e"), b"e5413bf73afd24484bd9490602c29d5e")

    def test_currencies_as_orchard_lists_them(self):
        listed = exponents({"currencies": [{"code": "EUR", "exponent": 2}, {"code": "jpy", "exponent": 0},
                                           {"code": "KWD", "exponent": 3}, {"code": "XXX"}, "junk"]})
        self.assertEqual(listed, {"EUR": 2, "JPY": 0, "KWD": 3})
        self.assertIsNone(currency_problem("EUR", 2, listed))
        self.assertIsNone(currency_problem("JPY", 0, listed))
        # pretix counts KWD with 2 decimals (its default), Orchard with ISO 4217's 3: refused.
        self.assertIn("10^-3", currency_problem("KWD", 2, listed))
        self.assertIn("does not take XOF", currency_problem("XOF", 0, listed))

    def test_minor_units(self):
        self.assertEqual(minor_units(Decimal("25.00"), 2), 2500)
        self.assertEqual(minor_units(Decimal("0.01"), 2), 1)
        self.assertEqual(minor_units(Decimal("1500"), 0), 1500)
        self.assertEqual(minor_units(Decimal("1.234"), 3), 1234)
        with self.assertRaises(ValueError):
            minor_units(Decimal("0.001"), 2)


class StandIn:
    """Answers each request with the next (status, body, headers) queued, and keeps what came."""

    def __init__(self):
        stand_in = self
        self.answers = []
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length", 0))
                stand_in.requests.append((self.command, self.path, dict(self.headers.items()), self.rfile.read(length)))
                status, body, headers = stand_in.answers.pop(0)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class ClientTests(unittest.TestCase):
    def setUp(self):
        self.orchard = StandIn()
        self.addCleanup(self.orchard.stop)

    def clients(self):
        # Both transports: the standard library (the operator's URL) and requests (any other).
        return [OrchardClient(self.orchard.url + "/", KEY, timeout=5, trusted=True),
                OrchardClient(self.orchard.url, KEY, timeout=5, trusted=False)]

    def test_a_payment_request_is_created_with_its_key_and_idempotency_key(self):
        for client in self.clients():
            self.orchard.answers.append((201, {"id": "pr_1", "amount": 2500}, {}))
            created = client.create_payment_request({"amount": 2500, "currency": "EUR", "reference": "ABC12"}, "pretix:o:e:ABC12-P-1:7")
            self.assertEqual(created["id"], "pr_1")
            method, path, headers, body = self.orchard.requests[-1]
            self.assertEqual((method, path), ("POST", "/v1/payment-requests"))
            self.assertEqual(headers["Authorization"], f"Bearer {KEY}")
            self.assertEqual(headers["Idempotency-Key"], "pretix:o:e:ABC12-P-1:7")
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertEqual(json.loads(body)["reference"], "ABC12")

    def test_answers_are_read_as_definite_or_not(self):
        for client in self.clients():
            self.orchard.answers.append((401, {"error": {"code": "unauthorized", "message": "no key"}}, {}))
            with self.assertRaises(OrchardError) as refused:
                client.payment("pay_1")
            self.assertNotIsInstance(refused.exception, OrchardUnavailable)
            self.assertEqual((refused.exception.status, refused.exception.code), (401, "unauthorized"))
            for status, code in [(503, "store_unavailable"), (504, "payment_unknown"), (500, "internal_error")]:
                self.orchard.answers.append((status, {"error": {"code": code, "message": "later"}}, {}))
                with self.assertRaises(OrchardUnavailable):
                    client.capture("pay_1")
            self.orchard.answers.append((200, b"<html>not json</html>", {}))
            with self.assertRaises(OrchardUnavailable):
                client.payment_request("pr_1")
            # A redirect is never followed with the key.
            self.orchard.answers.append((302, b"", {"Location": "http://127.0.0.1:9/elsewhere"}))
            with self.assertRaises(OrchardError) as moved:
                client.payment("pay_1")
            self.assertEqual(moved.exception.status, 302)

    def test_a_refund_answers_its_state(self):
        for client in self.clients():
            for status, state in [(201, "refunded"), (202, "unknown"), (402, "refused")]:
                self.orchard.answers.append((status, {"id": "ref_1", "state": state}, {}))
                self.assertEqual(client.refund("pay_1", 1000, "k"), (status, {"id": "ref_1", "state": state}))
            self.orchard.answers.append((422, {"error": {"code": "refund_too_large", "message": "too much"}}, {}))
            with self.assertRaises(OrchardError) as refused:
                client.refund("pay_1", 99999, "k2")
            self.assertEqual(refused.exception.code, "refund_too_large")

    def test_the_key_is_checked_with_get_v1_merchant(self):
        merchant = {"merchantIdentifier": "merchant.example", "displayName": "Example", "domains": ["tickets.example"],
                    "processor": "worldpay", "wallets": ["applePay"], "walletOrders": False,
                    "currencies": [{"code": "EUR", "exponent": 2}]}
        for client in self.clients():
            self.orchard.answers.append((200, merchant, {}))
            self.assertEqual(client.merchant(), merchant)
            self.assertEqual(self.orchard.requests[-1][:2], ("GET", "/v1/merchant"))
            self.orchard.answers.append((401, {"error": {"code": "unauthorized", "message": "no"}}, {}))
            with self.assertRaises(OrchardError) as refused:
                client.merchant()
            self.assertEqual(refused.exception.status, 401)

    def test_a_payment_request_is_withdrawn_and_a_payment_at_the_processor_is_said_so(self):
        for client in self.clients():
            self.orchard.answers.append((200, {"id": "pr/1", "status": "cancelled"}, {}))
            self.assertEqual(client.cancel_payment_request("pr/1")["status"], "cancelled")
            method, path, _, body = self.orchard.requests[-1]
            self.assertEqual((method, path, body), ("POST", "/v1/payment-requests/pr%2F1/cancel", b""))
            # Orchard's two ways of saying a payment of it is at the processor: both leave it to the webhook.
            for status, code in [(409, "invalid_state"), (504, "payment_unknown")]:
                self.orchard.answers.append((status, {"error": {"code": code, "message": "at the processor"}}, {}))
                with self.assertRaises(OrchardError) as refused:
                    client.cancel_payment_request("pr_1")
                self.assertTrue(payment_in_progress(refused.exception), code)
            self.orchard.answers.append((409, {"error": {"code": "order_not_open", "message": "paid"}}, {}))
            with self.assertRaises(OrchardError) as refused:
                client.cancel_payment_request("pr_1")
            self.assertFalse(payment_in_progress(refused.exception))
            self.assertNotIsInstance(refused.exception, OrchardUnavailable)

    def test_no_answer_is_unavailable(self):
        self.orchard.stop()
        for client in self.clients():
            with self.assertRaises(OrchardUnavailable) as unavailable:
                client.payment("pay_1")
            self.assertEqual(unavailable.exception.status, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
