"""A live `orchard serve` for the API tests in this folder (test_fuzz.py, test_type_swap.py): the mock Apple
gateway (`orchard-sandbox mock-gateway`) on loopback, a test PKI, SQLite, the record-only processor, the catalogue
from Config/, an API key from `orchard keys create`, the admin token and a platform integrator; seeded objects
(a paid order, an open order, a payment request, a partner with an API key, a webhook event); and the check
that a log holds no card data. Loopback only."""

import base64
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / ".build" / "debug"
ORCHARD = Path(os.environ.get("ORCHARD_BINARY", BUILD / "orchard"))
SANDBOX = Path(os.environ.get("ORCHARD_SANDBOX_BINARY", BUILD / "orchard-sandbox"))
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

    def __init__(self, server_settings=None):
        # Added to the configuration's `server` section (test_type_swap.py raises maxBodyBytes).
        self.server_settings = server_settings or {}
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
        self.url = f"http://127.0.0.1:{self.port}"
        self.logs = []
        self.start_server()

    def start_server(self):
        """Starts `orchard serve` on the same port, store and configuration; each start logs to a new file."""
        self.logs.append(self.folder / f"server-{len(self.logs) + 1}.log")
        self.server = Process([str(ORCHARD), "serve", "--config", str(self.config)], self.logs[-1], ROOT)
        self.wait_for(lambda: self.status("/health") == 200, "orchard serve", self.server)

    def restart(self):
        """After a crash: the same server again, so a fuzzer can go on. Returns the crashed one's exit status."""
        exit_code = self.server.stop()
        self.start_server()
        return exit_code

    def log_text(self):
        """Everything every start of the server wrote (stdout and stderr), in order."""
        return "".join(path.read_text(errors="replace") for path in self.logs)

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
        config["server"] = {**config.get("server", {}), **self.server_settings}
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
            "merchantSessions", "orders", "paymentRequests", "orderUpdates", "authorizations", "tokenEvents", "walletOrders")}
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
        self.objects = {"payment": payment_id, "order": open_order, "paymentRequest": request, "partner": partner,
                        "partnerKey": partner_key, "events": [event["event"]["id"] for event in events]}
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
        token = self.mint(amount, request["applicationData"])
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

    def mint(self, amount, application_data_base64):
        """A token's JSON text from `orchard-sandbox token mint`, as a device signs it for this total and request."""
        application_data = base64.b64decode(application_data_base64).decode()
        return subprocess.run(
            [str(SANDBOX), "token", "mint", "--state-dir", str(self.gateway_dir), "--amount", str(amount),
             "--application-data", application_data], check=True, capture_output=True, text=True, timeout=60).stdout

    def stop(self):
        exit_code = self.server.stop() if self.server else None
        self.gateway.stop()
        return exit_code

    def remove(self):
        shutil.rmtree(self.folder, ignore_errors=True)


class DemoServer:
    """`orchard-sandbox demo` (the server, its mock gateway and the simulated sheet's `POST /demo/token`) on a free
    loopback port, with an API key from `orchard keys create` and the admin token the demo made."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="orchard-demo-fuzz-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logs = []
        self.start_server()
        created = subprocess.run(
            [str(ORCHARD), "keys", "create", "--config", str(self.folder / "orchard.json"), "--merchant", MERCHANT],
            check=True, capture_output=True, text=True, timeout=120).stdout
        self.api_key = next(line for line in created.splitlines() if line.startswith("osk_"))
        self.admin_token = (self.folder / "admin-token").read_text().strip()

    def start_server(self):
        self.logs.append(self.folder / f"demo-{len(self.logs) + 1}.log")
        # With Google Pay (the demo's stand-in, `POST /demo/google-pay-token`), so its routes are fuzzed from valid tokens.
        self.server = Process([str(SANDBOX), "demo", "--port", str(self.port), "--state-dir", str(self.folder), "--google-pay"],
                              self.logs[-1], ROOT)
        deadline = time.monotonic() + 90
        while "Press Ctrl-C to stop" not in self.server.text():
            if not self.server.alive() or time.monotonic() > deadline:
                self.server.stop()
                raise RuntimeError("orchard-sandbox demo did not start:\n" + self.server.text())
            time.sleep(0.1)

    def restart(self):
        exit_code = self.server.stop(signal.SIGINT)
        self.start_server()
        return exit_code

    def log_text(self):
        return "".join(path.read_text(errors="replace") for path in self.logs)

    def call(self, method, path, body=None, api=False):
        """Decoded JSON of a request that must succeed; the demo's merchant is the one `localhost` names."""
        headers = {"Host": f"localhost:{self.port}", "Content-Type": "application/json"}
        if api:
            headers.update({"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": secrets.token_hex(8)})
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def stop(self):
        return self.server.stop(signal.SIGINT)

    def remove(self):
        shutil.rmtree(self.folder, ignore_errors=True)
