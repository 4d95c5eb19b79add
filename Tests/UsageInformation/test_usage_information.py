"""Merchant token usage information end to end, against a real `orchard-sandbox demo` (mock Worldpay, mock Apple
gateway over mutual TLS): Orchard seals with swift-crypto, and this test plays Apple and the shopper's device with
PyPI's pyhpke, a second HPKE implementation (usage_device.py). Loopback only.

Run by scripts/test after the Swift tests: `python3 -m unittest discover -s Tests/UsageInformation -v`.
ORCHARD_BUILD=release uses the release binaries."""

import datetime
import json
import os
import ssl
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "PythonSupport"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from sandbox_demo import SandboxDemo  # noqa: E402
import usage_device  # noqa: E402

BUILD = ROOT / ".build" / os.environ.get("ORCHARD_BUILD", "debug")
MERCHANT = "merchant.dev.orchard.demo"
NEXT_YEAR = datetime.date.today().year + 1


class Demo(SandboxDemo):
    banner = {**SandboxDemo.banner, "gateway_port": (r"mock Apple gateway: https://127\.0\.0\.1:(\d+)", int)}
    required = ("port", "gateway_port")


def wait_for(condition, what, timeout=30):
    """Polls `condition` until it answers something truthy: the announcement loop runs every second. Fails naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = condition()
        if answer:
            return answer
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout} s")


class UsageInformationTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.demo = Demo(BUILD / "orchard-sandbox", ROOT, ["--processor", "worldpay"], "orchard-usage-", 120, 20)
        cls.gateway = f"https://127.0.0.1:{cls.demo.gateway_port}"
        created = subprocess.run(
            [str(BUILD / "orchard"), "keys", "create", "--config", str(cls.demo.state_dir / "orchard.json"), "--merchant", MERCHANT],
            capture_output=True, text=True, check=True)
        cls.key = created.stdout.strip().splitlines()[-1]

    @classmethod
    def tearDownClass(cls):
        cls.demo.end()

    def api(self, method, path, body=None):
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4())}
        request = urllib.request.Request(self.demo.url + path, data=None if body is None else json.dumps(body).encode(),
                                         method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def control(self, token, body=None):
        context = ssl.create_default_context(cafile=str(self.demo.state_dir / "test-ca.pem"))
        context.load_cert_chain(str(self.demo.state_dir / "test-merchant-identity.pem"),
                                str(self.demo.state_dir / "test-merchant-identity.key"))
        request = urllib.request.Request(f"{self.gateway}/_mock/merchant-tokens/{token}", method="GET" if body is None else "POST",
                                         data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return json.load(response)

    def mandate(self, token):
        """A recurring payment request paid with a merchant token: the mandate's ID."""
        request = self.api("POST", "/v1/payment-requests", {
            "amount": 490, "currency": "EUR", "reference": f"sub-{token}",
            "agreement": {"type": "recurring", "paymentDescription": "Coffee club", "managementURL": "https://shop.example/account",
                          "regularBilling": {"label": "Monthly beans", "amount": 990, "startDate": f"{NEXT_YEAR}-01-01T09:00:00Z",
                                             "intervalUnit": "month", "intervalCount": 1}}})
        minted = subprocess.run(
            [str(BUILD / "orchard-sandbox"), "token", "mint", "--state-dir", str(self.demo.state_dir), "--amount", "490",
             "--payment-request", request["id"], "--merchant-token-id", token], capture_output=True, text=True, check=True)
        paid = self.api("POST", f"/v1/payment-requests/{request['id']}/authorize", json.loads(minted.stdout))
        self.assertEqual(paid["payment"]["merchantTokenIdentifier"], token)
        return paid["payment"]["mandateId"]

    def announced(self, token):
        """The newest metadata Orchard announced for `token`, once there is one, opened with the token's key."""
        control = wait_for(lambda: (lambda c: c if c["notifications"] else None)(self.control(token)), f"an announcement for {token}")
        opened, merchant_public = usage_device.open_metadata(control["notifications"][-1], token, control["privateKey"])
        return opened, merchant_public, control

    def test_both_charges_and_the_next_one_reach_the_device(self):
        token = "DNITHEPY" + uuid.uuid4().hex[:12].upper()
        mandate = self.mandate(token)
        for number in (1, 2):
            charged = self.api("POST", f"/v1/mandates/{mandate}/charges", {"amount": 990, "reference": f"inv-{number}"})
            self.assertEqual(charged["payment"]["state"], "authorized")
        opened, merchant_public, control = self.announced(token)
        self.assertEqual(opened["webServiceURL"], f"http://127.0.0.1:{self.demo.port}/apple-pay/merchant-token-usage")
        self.assertEqual(control["publicKeyAnswers"][-1], 200)

        status, body = usage_device.fetch(usage_device.package_url(opened["webServiceURL"], token), opened["authenticationToken"])
        self.assertEqual(status, 200, body[:300])
        files = usage_device.open_package(json.loads(body), token, control["privateKey"], merchant_public)
        self.assertEqual(sorted(files), ["usageInformation.json"], "no image unless configured")
        self.assertLessEqual(len(json.loads(body)["data"]), 4000)
        information = json.loads(files["usageInformation.json"])
        self.assertEqual((information["schemaVersion"], information["merchantTokenIdentifier"]), (1, token))
        past = information["pastPayments"]
        self.assertEqual([p["totalAmount"] for p in past],
                         [{"amount": "9.90", "currency": "EUR"}] * 2 + [{"amount": "4.90", "currency": "EUR"}])
        self.assertEqual(past[0]["lineItems"], [{"label": "Monthly beans", "amount": {"amount": "9.90", "currency": "EUR"}}])
        upcoming = information["upcomingPayments"][0]
        self.assertEqual((upcoming["paymentType"], upcoming["label"]), ("recurring", "Monthly beans"))
        scheduled = upcoming["recurringPaymentDetails"]["scheduledPayments"]
        self.assertEqual(scheduled[0], {"paymentDate": f"{NEXT_YEAR}-01-01", "amount": {"amount": "9.90", "currency": "EUR"}})

    def test_a_wrong_token_and_another_tokens_identifier_are_refused_alike(self):
        first, second = ("DNITHEPY" + uuid.uuid4().hex[:12].upper() for _ in range(2))
        self.mandate(first)
        self.mandate(second)
        opened, _, _ = self.announced(first)
        self.announced(second)
        url = opened["webServiceURL"]
        answers = {
            "the right one": usage_device.fetch(usage_device.package_url(url, first), opened["authenticationToken"]),
            "a wrong token": usage_device.fetch(usage_device.package_url(url, first), "not-" + opened["authenticationToken"]),
            "another token's identifier": usage_device.fetch(usage_device.package_url(url, second), opened["authenticationToken"]),
        }
        self.assertEqual(answers["the right one"][0], 200)
        self.assertEqual(answers["a wrong token"], answers["another token's identifier"], "the same 404, the same body")
        self.assertEqual(answers["a wrong token"][0], 404)

    def test_a_conflict_is_repaired_and_a_key_not_ready_waits_for_apples_event(self):
        conflict, later = ("DNITHEPY" + uuid.uuid4().hex[:12].upper() for _ in range(2))
        self.control(conflict, {"keyMode": "conflict"})
        self.mandate(conflict)
        _, _, control = self.announced(conflict)
        self.assertEqual(control["publicKeyAnswers"][:2], [409, 200])
        self.assertEqual(control["tokenNotificationURL"], f"http://127.0.0.1:{self.demo.port}/apple-pay/token-events/{MERCHANT}")

        self.control(later, {"keyMode": "notReady"})
        self.mandate(later)
        wait_for(lambda: 202 in self.control(later)["publicKeyAnswers"], "Apple's 202")
        self.assertEqual(self.control(later)["notifications"], [])
        # Apple tells of the token's new key; Orchard fetches the event and announces.
        self.control(later, {"keyMode": "ready"})
        self.token_event(later)
        _, _, control = self.announced(later)
        self.assertEqual(control["publicKeyAnswers"][-1], 200)

    def token_event(self, token):
        context = ssl.create_default_context(cafile=str(self.demo.state_dir / "test-ca.pem"))
        context.load_cert_chain(str(self.demo.state_dir / "test-merchant-identity.pem"),
                                str(self.demo.state_dir / "test-merchant-identity.key"))
        body = json.dumps({"eventType": "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY", "merchantTokenIdentifier": token,
                           "tokenNotificationURL": f"http://127.0.0.1:{self.demo.port}/apple-pay/token-events/{MERCHANT}"})
        request = urllib.request.Request(f"{self.gateway}/_mock/token-events", data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            self.assertEqual(json.load(response)["status"], 200)


if __name__ == "__main__":
    unittest.main()
