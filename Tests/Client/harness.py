"""What the generated client's tests share: the client, generated once per run from the OpenAPI document with
openapi-generator-cli (PyPI, its JAR bundled in the wheel, run on the local Java; nothing is downloaded), an
`orchard-sandbox demo` on loopback with its mock processors, and the check that an answer decodes whole into the
client's models. Not a test module itself (unittest discovers test_*.py)."""

import atexit
import base64
import datetime
import enum
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

# The launcher Tests/Browser's harness shares (Tests/PythonSupport): unittest puts only Tests/Client on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "PythonSupport"))
from sandbox_demo import SandboxDemo, exit_status  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# ORCHARD_BUILD=release runs the tests on the release build (scripts/test does): what ships is what is tested.
BUILD = ROOT / ".build" / os.environ.get("ORCHARD_BUILD", "debug")
ORCHARD = Path(os.environ.get("ORCHARD_BINARY", BUILD / "orchard"))
SANDBOX = Path(os.environ.get("ORCHARD_SANDBOX_BINARY", BUILD / "orchard-sandbox"))
DOCUMENT = ROOT / "Sources" / "OrchardServer" / "OpenAPI" / "openapi.json"
MERCHANT = "merchant.dev.orchard.demo"
PACKAGE = "orchard_client"

_generated = {}


def generated_client():
    """The generated package, imported; generated on the first call of the run (the JAR takes a while), removed at exit."""
    if "package" not in _generated:
        folder = tempfile.TemporaryDirectory(prefix="orchard-generated-client-")
        atexit.register(folder.cleanup)
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-c", "import sys, openapi_generator_cli; openapi_generator_cli.cli(sys.argv)",
             "generate", "--input-spec", str(DOCUMENT),
             "--generator-name", "python", "--output", folder.name, "--package-name", PACKAGE,
             "--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false"],
            capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(f"openapi-generator-cli failed:\n{run.stdout[-5000:]}\n{run.stderr[-5000:]}")
        sys.path.insert(0, folder.name)
        import orchard_client  # the generated package
        _generated["package"] = orchard_client
        print(f"client generated in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return _generated["package"]


def wait_until(predicate, what, timeout=60):
    """Polls `predicate` until it holds, for at most `timeout` seconds: a wait for an event, bounded, never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.1)


class Demo(SandboxDemo):
    """`orchard-sandbox demo --processor PROCESSOR OPTIONS…` on a free loopback port with its own state folder: the
    mock Apple gateway, a mock Worldpay and Worldline (which capture and refund) and the demo's token minter."""

    banner = {**SandboxDemo.banner, "admin_token_file": (r"--token-file (\S+)", Path),
              "processor_url": (r"a mock \w+ at (https://127\.0\.0\.1:\d+)", str)}
    required = ("port", "admin_token_file")

    def __init__(self, processor="worldpay", *options):
        super().__init__(SANDBOX, ROOT, ("--processor", processor, *options), prefix="orchard-client-",
                         start_timeout=120, stop_timeout=30)

    def stop(self, check=True):
        """Stops the demo with SIGINT; with `check`, fails if it had died already or did not stop cleanly (its signal
        and output shown: a crash of the release build is the failure this test exists for)."""
        died = self.end()
        if check and (died is not None or self.process.returncode not in (0, -signal.SIGINT)):
            when = "during the test" if died is not None else "when stopped"
            raise AssertionError(f"orchard-sandbox demo ended {when} ({exit_status(self.process.returncode)}):\n"
                                 + "".join(self.output[-80:]))

    def api_key(self):
        """The shop developer's first step: a secret API key for the merchant, shown once."""
        created = subprocess.run(
            [str(ORCHARD), "keys", "create", "--config", str(self.state_dir / "orchard.json"), "--merchant", MERCHANT],
            check=True, capture_output=True, text=True, timeout=120).stdout
        return next(line for line in created.splitlines() if line.startswith("osk_"))

    def admin_token(self):
        """The admin token the demo made, from the file its banner names."""
        return self.admin_token_file.read_text().strip()

    def configuration(self):
        """The orchard.json the demo wrote and serves with."""
        return json.loads((self.state_dir / "orchard.json").read_text())

    def mint_token(self, amount, application_data_base64, *options):
        """A token from `orchard-sandbox token mint OPTIONS…` (EC_v1, or RSA_v1 with --rsa), as the shopper's iPhone
        would sign it for this request."""
        application_data = base64.b64decode(application_data_base64).decode()
        output = subprocess.run(
            [str(SANDBOX), "token", "mint", "--state-dir", str(self.state_dir), "--amount", str(amount),
             "--application-data", application_data, *options], check=True, capture_output=True, text=True,
            timeout=120).stdout
        return json.loads(output)

    def sheet_token(self, amount, currency, application_data_base64, merchant_token=False):
        """A token from the demo's own minter, `POST /demo/token` (encrypted to the key the simulated sheet uses: the
        processor's when it holds the key; with `merchant_token`, an MPAN, as Apple gives for an agreement): a stand-in
        for the device, outside the API and its document. It acts for the merchant the Host names."""
        body = json.dumps({"amount": f"{amount // 100}.{amount % 100:02d}", "currencyCode": currency,
                           "applicationData": application_data_base64, "merchantToken": merchant_token}).encode()
        request = urllib.request.Request(
            self.url + "/demo/token", data=body, method="POST",
            headers={"Content-Type": "application/json", "Host": f"localhost:{self.port}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def mock_processor(self):
        """What the mock processor took, from its test route (`GET /_mock/charges`, over TLS with the demo's test CA):
        `charges`, `authorizations` (each request's processor and reference), `refunds` and `decrypted`."""
        if self.processor_url is None:
            raise AssertionError("the demo named no mock processor:\n" + "".join(self.output))
        context = ssl.create_default_context(cafile=str(self.state_dir / "test-ca.pem"))
        with urllib.request.urlopen(self.processor_url + "/_mock/charges", context=context, timeout=30) as response:
            return json.load(response)


def undecoded(raw, decoded, path="$"):
    """Where the client's model of an answer differs from the JSON the server sent: a field the model dropped
    (one the document does not describe), one it added, or a value it changed. [] when the model holds it all."""
    if hasattr(decoded, "to_dict"):
        decoded = decoded.to_dict()
    if isinstance(decoded, enum.Enum):
        decoded = decoded.value
    if isinstance(decoded, datetime.datetime) and isinstance(raw, str):
        same = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")) == decoded
        return [] if same else [f"{path}: sent {raw!r}, decoded {decoded!r}"]
    if isinstance(raw, dict) and isinstance(decoded, dict):
        found = [f"{path}.{key}: sent {json.dumps(raw[key])[:80]}, dropped by the model" for key in raw if key not in decoded]
        found += [f"{path}.{key}: not sent, added by the model as {decoded[key]!r}" for key in decoded if key not in raw]
        for key in raw.keys() & decoded.keys():
            found += undecoded(raw[key], decoded[key], f"{path}.{key}")
        return found
    if isinstance(raw, list) and isinstance(decoded, list) and len(raw) == len(decoded):
        return [difference for index, (sent, model) in enumerate(zip(raw, decoded))
                for difference in undecoded(sent, model, f"{path}[{index}]")]
    if raw != decoded or type(raw) is not type(decoded):
        return [f"{path}: sent {raw!r}, decoded {decoded!r}"]
    return []


class ClientTestCase(unittest.TestCase):
    """A test against a live demo through the generated client: `start` one, then `call` and `refused` check each
    answer's status and that it decodes whole."""

    def start(self, processor="worldpay", *options):
        """Starts a demo (stopped at the test's end) and the clients for its payments, admin and operations APIs."""
        client = generated_client()
        self.client, self.models = client, client.models
        self.demo = Demo(processor, *options)
        self.addCleanup(self.demo.stop)
        self.payments = client.PaymentsAPIApi(
            client.ApiClient(client.Configuration(host=self.demo.url, access_token=self.demo.api_key())))
        # The admin token is another bearer scheme: the generated Configuration has one access token, so another client.
        self.admin = client.AdminApi(
            client.ApiClient(client.Configuration(host=self.demo.url, access_token=self.demo.admin_token())))
        self.operations = client.OperationsApi(client.ApiClient(client.Configuration(host=self.demo.url)))

    def call(self, operation, *arguments, status=200, model=None, **options):
        """`operation` (a generated `…_with_http_info` method) answers `status` with a `model` that holds the whole answer."""
        answer = operation(*arguments, **options)
        self.assertEqual(answer.status_code, status, operation.__name__)
        if model is not None:
            self.assertIsInstance(answer.data, model, operation.__name__)
        self.assertEqual(undecoded(json.loads(answer.raw_data), answer.data), [],
                         f"{operation.__name__}: the model differs from the answer")
        return answer.data

    def refused(self, operation, *arguments, status, code):
        """`operation` raises the client's ApiException for `status`, its body decoded into Error with `code`."""
        with self.assertRaises(self.client.ApiException) as raised:
            operation(*arguments)
        error = raised.exception
        self.assertEqual(error.status, status, error.body)
        self.assertIsInstance(error.data, self.models.Error)
        self.assertEqual(error.data.error.code, code)
        self.assertEqual(undecoded(json.loads(error.body), error.data), [])
        return error.data
