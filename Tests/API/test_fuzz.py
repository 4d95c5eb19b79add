"""API fuzzing: schemathesis (PyPI) runs every operation of Orchard's OpenAPI document against a live
`orchard serve` (a real process, SQLite, the record-only processor, the catalogue from Config/, an API
key made with `orchard keys create`, the admin token, a platform integrator) whose Apple gateway is
`orchard-sandbox mock-gateway` on loopback. It needs no server error and no answer that differs from
the document; afterwards the server must still be up and its log must hold no card data.

Loopback only; bounded in time (ORCHARD_FUZZ_SECONDS, default 170, under CI's 3 minutes).
ORCHARD_FUZZ_SEED changes the seed (default fixed, so a run can be repeated; any failure prints the
request that reproduces it)."""

import base64
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / ".build" / "debug"
ORCHARD = Path(os.environ.get("ORCHARD_BINARY", BUILD / "orchard"))
SANDBOX = Path(os.environ.get("ORCHARD_SANDBOX_BINARY", BUILD / "orchard-sandbox"))
REPORTS = Path(os.environ.get("ORCHARD_FUZZ_REPORTS", ROOT / ".ci" / "artifacts" / "schemathesis"))
MERCHANT = "merchant.dev.orchard.demo"
# The minter's device account number (TokenMinter.samplePayload): it must never reach the log.
DPAN = "4111111111111111"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def luhn(digits):
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def card_data(log, secrets_seen):
    """Lines of `log` holding a known card secret or a Luhn-valid run of 13–19 digits (a PAN or DPAN)."""
    found = []
    for line in log.splitlines():
        if any(secret in line for secret in secrets_seen):
            found.append(line)
        elif any(luhn(run) for run in re.findall(r"(?<!\d)\d{13,19}(?!\d)", line)):
            found.append(line)
    return found


# Where each dictionary of seeded identifiers is offered (half of the generated values come from it).
BINDINGS = {"path.id": "ids", "path.event": "events", "path.key": "keys", "body.clientSecret": "secrets",
            "body.orderId": "orders"}


def with_dictionaries(config, dictionaries):
    """The committed settings plus this run's seeded identifiers as schemathesis dictionaries."""
    lines = [config.rstrip("\n"), ""]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", "values = " + json.dumps(values), ""]
    lines.append("[parameters]")
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in BINDINGS.items()]
    return "\n".join(lines) + "\n"


class Process:
    """A child process in its own session, its output in a file, stopped by its process group."""

    def __init__(self, arguments, log, cwd, environment=None):
        self.log = log
        self.output = open(log, "w")
        self.process = subprocess.Popen(
            arguments, cwd=cwd, stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(environment or {})})

    def alive(self):
        return self.process.poll() is None

    def text(self):
        return Path(self.log).read_text(errors="replace")

    def stop(self, signal_number=signal.SIGTERM):
        if self.alive():
            os.killpg(self.process.pid, signal_number)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.output.close()
        return self.process.returncode


class FuzzedServer:
    """The mock gateway, then `orchard serve` on its test PKI with everything the API can reach."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="orchard-fuzz-"))
        self.gateway_dir = self.folder / "gateway"
        self.port = free_port()
        self.gateway = Process(
            [str(SANDBOX), "mock-gateway", "--port", "0", "--server-port", str(self.port), "--state-dir",
             str(self.gateway_dir)], self.folder / "gateway.log", ROOT)
        self.server = None
        self.wait_for(lambda: "mock Apple gateway:" in self.gateway.text(), "the mock gateway", self.gateway)
        # The test token chain and processing keys, made in the same folder (tokens for the seed payment).
        subprocess.run([str(SANDBOX), "token", "mint", "--state-dir", str(self.gateway_dir), "--amount", "1"],
                       check=True, capture_output=True, timeout=120)
        self.config = self.gateway_dir / "orchard.json"
        self.admin_token = secrets.token_hex(32)
        self.write_configuration()
        created = subprocess.run([str(ORCHARD), "keys", "create", "--config", str(self.config), "--merchant", MERCHANT],
                                 check=True, capture_output=True, text=True, timeout=120).stdout
        self.api_key = next(line for line in created.splitlines() if line.startswith("osk_"))
        self.server = Process([str(ORCHARD), "serve", "--config", str(self.config)], self.folder / "server.log", ROOT)
        self.url = f"http://127.0.0.1:{self.port}"
        self.wait_for(lambda: self.status("/health") == 200, "orchard serve", self.server)

    def write_configuration(self):
        config = json.loads(self.config.read_text())

        def secret(name, value):
            path = self.gateway_dir / name
            path.write_text(value)
            path.chmod(0o600)
            return name

        merchant = config["merchants"][0]
        merchant["catalogue"] = str(ROOT / "Config" / "catalogue.json")
        merchant["processingKeys"] = [{"privateKey": "test-processing-ec.key"}, {"privateKey": "test-processing-rsa.key"}]
        config["payments"] = {"testTokenRootCertificate": "test-apple-root.pem"}
        config["admin"] = {"token": secret("admin-token", self.admin_token)}
        # The mock gateway knows one merchant ID, so the platform integrator is that merchant with the same
        # identity and keys: /admin/merchants registers partners at the mock instead of answering 501.
        config["platformIntegrator"] = {
            "merchantIdentifier": MERCHANT, "identityCertificate": "test-merchant-identity.pem",
            "identityKey": "test-merchant-identity.key", "processingKeys": merchant["processingKeys"],
            "settingsKey": secret("settings-key", secrets.token_hex(32)),
            "domainAssociationFile": "apple-developer-merchantid-domain-association"}
        # Limits stay on (the fuzzer goes through the limiter) but far above the fuzzer's pace, so a 429
        # never hides what an operation would have answered; RateLimiterTests and LimitsServerTests test them.
        rate = {"perMinute": 60000, "burst": 10000}
        generous = {"perClientIP": rate, "perMerchant": rate}
        config["limits"] = {name: generous for name in (
            "merchantSessions", "orders", "paymentRequests", "orderUpdates", "authorizations", "tokenEvents")}
        self.config.write_text(json.dumps(config, indent=2))

    def wait_for(self, condition, what, process, seconds=90):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if condition():
                return
            if not process.alive():
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{what} did not start:\n{process.text()}")

    def request(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {**({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except OSError:
            return None, b""

    def status(self, path):
        return self.request("GET", path)[0]

    def call(self, method, path, body=None, admin=False, api=False, expect=(200, 201)):
        headers = {}
        if admin:
            headers["Authorization"] = f"Bearer {self.admin_token}"
        if api:
            headers.update({"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": secrets.token_hex(8)})
        status, answer = self.request(method, path, body, headers)
        assert status in expect, (method, path, status, answer)
        return json.loads(answer) if answer else None

    def seed(self):
        """Objects the fuzzer could not make itself, so it reaches more than 404s: a paid order, an open one, a
        payment request, a registered partner with an API key, and a webhook event. Returns the card secrets of
        the paid order and the schemathesis dictionaries of their identifiers."""
        card_secrets, payment_id = self.seed_payment()
        open_order = self.call("POST", "/api/orders", {"items": [{"productId": "pear-box", "quantity": 2}]})["orderId"]
        request = self.call("POST", "/v1/payment-requests", {
            "amount": 1234, "currency": "EUR", "countryCode": "FR", "reference": "fuzz-1",
            "shippingMethods": [{"identifier": "post", "label": "Post", "amount": 490}]}, api=True)
        partner = self.call("POST", "/admin/merchants", {
            "partnerInternalMerchantIdentifier": "fuzz-partner", "partnerMerchantName": "Fuzz Partner",
            "domainNames": ["fuzz-partner.example"]}, admin=True)["partnerIdentifier"]
        partner_key = self.call("POST", f"/admin/merchants/{partner}/api-keys", admin=True)["id"]
        events = self.call("GET", "/admin/webhooks", admin=True)["events"]
        dictionaries = {
            "ids": [payment_id, open_order, request["id"], partner],
            "events": [event["event"]["id"] for event in events] or ["evt_none"],
            "keys": [partner_key],
            "secrets": [request["clientSecret"]],
            "orders": [open_order, request["id"]],
        }
        return card_secrets, dictionaries

    def seed_payment(self):
        """A real order paid with a minted token (DPAN 4111…), so the store and the log have card flows to leak."""
        order = self.call("POST", "/api/orders", {"items": [{"productId": "apple-box", "quantity": 1}]})
        request = order["paymentRequest"]
        amount = int(request["total"]["amount"].replace(".", ""))
        application_data = base64.b64decode(request["applicationData"]).decode()
        token = subprocess.run(
            [str(SANDBOX), "token", "mint", "--state-dir", str(self.gateway_dir), "--amount", str(amount),
             "--application-data", application_data], check=True, capture_output=True, text=True, timeout=60).stdout
        token_file = self.folder / "token.json"
        token_file.write_text(token)
        clear = subprocess.run(
            [str(ORCHARD), "token", "decrypt", "--token", str(token_file),
             "--key", str(self.gateway_dir / "test-processing-ec.key"), "--merchant-id", MERCHANT,
             "--trust-root", str(self.gateway_dir / "test-apple-root.pem")],
            check=True, capture_output=True, text=True, timeout=60).stdout
        token_file.unlink()
        cryptogram = json.loads(clear)["paymentData"]["onlinePaymentCryptogram"]
        paid = self.call("POST", "/api/apple-pay/authorize",
                         {"orderId": order["orderId"], "payment": {"token": json.loads(token)}})
        return [DPAN, cryptogram, "applicationPrimaryAccountNumber", "onlinePaymentCryptogram"], paid["paymentId"]

    def stop(self):
        exit_code = self.server.stop() if self.server else None
        self.gateway.stop()
        return exit_code

    def remove(self):
        shutil.rmtree(self.folder, ignore_errors=True)


class APIFuzzTests(unittest.TestCase):
    def test_the_card_data_check_finds_card_data(self):
        secrets_seen = [DPAN, "AOEBAgME"]
        self.assertEqual(card_data("payment authorized lastFour=1111\nid=12345678901234567890", secrets_seen), [])
        leaked = "dpan=4111111111111111\ncryptogram AOEBAgME\npan 5555555555554444 x"
        self.assertEqual(len(card_data(leaked, secrets_seen)), 3)
        self.assertEqual(card_data("order 4111111111111112 (not Luhn)", []), [])

    def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(self):
        server = FuzzedServer()
        self.addCleanup(server.remove)
        self.addCleanup(server.stop)
        card_secrets, dictionaries = server.seed()
        budget = int(os.environ.get("ORCHARD_FUZZ_SECONDS", "170"))
        REPORTS.mkdir(parents=True, exist_ok=True)
        config = server.folder / "schemathesis.toml"
        config.write_text(with_dictionaries((Path(__file__).parent / "schemathesis.toml").read_text(), dictionaries))
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(config),
            "run", server.url + "/openapi.json",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--max-examples", "30", "--seed", os.environ.get("ORCHARD_FUZZ_SEED", "22"),
            "--report", "junit", "--report-dir", str(REPORTS), "--no-color",
        ]
        environment = {**os.environ, "ORCHARD_FUZZ_API_KEY": server.api_key, "ORCHARD_FUZZ_ADMIN_TOKEN": server.admin_token}
        started = time.monotonic()
        run = subprocess.run(command, cwd=server.folder, env=environment, capture_output=True, text=True,
                             timeout=budget + 10)
        elapsed = time.monotonic() - started
        print(run.stdout[-20000:], run.stderr[-5000:], sep="\n", file=sys.stderr)
        self.assertEqual(run.returncode, 0, "schemathesis found failures (see its report above)")
        self.assertLess(elapsed, budget, "the fuzzing run took longer than its budget")
        self.assertRegex(run.stdout, r"\b\d+ passed\b")
        # Still up and answering after every operation was fuzzed.
        self.assertTrue(server.server.alive(), server.server.text()[-5000:])
        self.assertEqual(server.status("/health"), 200)
        self.assertEqual(server.stop(), 0, "orchard serve exits 0 on SIGTERM")
        log = server.server.text()
        self.assertIn("merchant configured", log)
        self.assertEqual(card_data(log, card_secrets), [], "card data in the server's log")


if __name__ == "__main__":
    unittest.main()
