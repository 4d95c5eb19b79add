"""A small shop, as a developer would write one around Orchard: its own page and backend, which
creates payment requests through Orchard's payments API and verifies Orchard's webhooks; and real
nginx in front, serving the shop and proxying Orchard under /orchard/ with the snippet Orchard
ships (Config/nginx/orchard-locations.conf, included unchanged). Loopback only."""

import base64
import hashlib
import hmac
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from standardwebhooks import Webhook, WebhookVerificationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "PythonSupport"))
from nginx_front import write_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NGINX = os.environ.get("NGINX", shutil.which("nginx") or "/usr/sbin/nginx")

PAGE = b"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Tea Shop checkout</title>
<script type="module" src="/shop.js"></script></head>
<body>
  <h1>Tea Shop</h1>
  <p>Order <span data-testid="shop-reference"></span>: 12.34 EUR plus delivery</p>
  <div id="apple-pay"></div>
  <div id="google-pay"></div>
  <p data-testid="payment-result" role="status"></p>
  <p data-testid="google-pay-result" role="status"></p>
</body>
</html>
"""

SCRIPT = b"""import { mount, mountGooglePay, mountWallets } from '/orchard/orchard.js';

const result = document.querySelector('[data-testid="payment-result"]');
// `?plan=recurring`: the shop's subscription page, `?plan=deferred` its pre-order page (the
// backend adds an agreement); `?label=...`: the request's totalLabel; `?mode=paymentrequest`: the
// button pays through the Payment Request API; `?lang=de`: the page in German.
const query = new URLSearchParams(window.location.search);
if (query.get('lang')) document.documentElement.lang = query.get('lang');
const asked = new URLSearchParams();
for (const name of ['plan', 'label']) if (query.get(name)) asked.set(name, query.get(name));
const answer = await fetch(asked.toString() ? `/checkout?${asked}` : '/checkout', { method: 'POST' });
const { clientSecret, reference } = await answer.json();
document.querySelector('[data-testid="shop-reference"]').textContent = reference;
const onOutcome = ({ status, detail, paymentId, wallet }) => {
  result.dataset.status = status;
  result.dataset.paymentId = paymentId ?? '';
  result.dataset.wallet = wallet ?? '';
  result.textContent = status === 'success' ? 'Thank you!' : detail;
};
// `?wallets=1`: both wallets from one call, the request opened once (`?place=1`: Google's button
// in the page's own place for it, else where the module appends it).
if (query.get('wallets')) {
  window.__mounted = await mountWallets(document.getElementById('apple-pay'), {
    clientSecret,
    googlePayContainer: query.get('place') ? document.getElementById('google-pay') : undefined,
    mode: query.get('mode') ?? undefined,
    onOutcome,
  });
} else {
  mount(document.getElementById('apple-pay'), { clientSecret, mode: query.get('mode') ?? undefined, onOutcome });
}
// `?google=1`: Google Pay beside Apple Pay, for the same payment request (its settings come with it).
if (query.get('google') && !query.get('wallets')) {
  const googleResult = document.querySelector('[data-testid="google-pay-result"]');
  mountGooglePay(document.getElementById('google-pay'), {
    clientSecret,
    onOutcome: ({ status, detail, paymentId }) => {
      googleResult.dataset.status = status;
      googleResult.dataset.paymentId = paymentId ?? '';
      googleResult.textContent = status === 'success' ? 'Thank you!' : detail;
    },
  });
}
"""


def webhook_key(secret):
    # A whsec_ secret's key is its base64 decoded; an older secret's (no prefix) its UTF-8 bytes.
    if secret.startswith("whsec_"):
        encoded = secret[len("whsec_"):]
        return base64.b64decode(encoded + "=" * (-len(encoded) % 4))
    return secret.encode()


def verify_webhook(secret, signature_header, body, tolerance=300, now=None):
    """The check a shop runs on each webhook (the Python example in docs/shop-integration.md): recompute the HMAC over
    "<t>.<raw body>", compare in constant time, refuse an old timestamp (a replay)."""
    try:
        parts = dict(item.split("=", 1) for item in signature_header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((now or time.time()) - timestamp) > tolerance:
        return False
    expected = hmac.new(webhook_key(secret), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


def standard_webhook(secret):
    """The Standard Webhooks verifier for an Orchard secret: a `whsec_` secret as given, an older
    one (no prefix) as its UTF-8 bytes, which is how Orchard keys it (docs/shop-integration.md)."""
    return Webhook(secret if secret.startswith("whsec_") else secret.encode())


def verify_standard(secret, body, headers):
    """Whether the Standard Webhooks library accepts the delivery with `secret`."""
    try:
        standard_webhook(secret).verify(body, headers)
        return True
    except WebhookVerificationError:
        return False


class ShopBackend:
    """The shop's backend: its page, `POST /checkout` (a payment request for the basket, made with
    the secret API key, server to server) and `POST /webhooks/orchard` (verified with the Standard
    Webhooks library, recorded; the deprecated Orchard-Signature check is recorded beside it)."""

    def __init__(self, orchard_url, api_key, webhook_secret):
        shop = self
        self.orchard_url = orchard_url
        self.api_key = api_key
        self.webhook_secret = webhook_secret
        self.webhooks = []  # (event id, type, verified, body, signature)
        self.deliveries = {}  # event id: {"headers": the request's headers, "orchard_signature": whether it held}
        self.created = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if urllib.parse.urlsplit(self.path).path == "/":
                    self.reply(200, PAGE, "text/html; charset=utf-8")
                elif self.path == "/shop.js":
                    self.reply(200, SCRIPT, "text/javascript")
                else:
                    self.reply(404, b"", "text/plain")

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if urllib.parse.urlsplit(self.path).path == "/checkout":
                    asked = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                    created = shop.create_payment_request(
                        plan=asked.get("plan", [None])[0], total_label=asked.get("label", [None])[0])
                    self.reply(200, json.dumps({"clientSecret": created["clientSecret"],
                                                "reference": created["reference"]}).encode(), "application/json")
                elif self.path == "/webhooks/orchard":
                    signature = self.headers.get("Orchard-Signature", "")
                    headers = dict(self.headers.items())
                    verified = verify_standard(shop.webhook_secret, body, headers)
                    event_id = self.headers.get("Orchard-Event-Id")
                    shop.deliveries[event_id] = {
                        "headers": headers, "orchard_signature": verify_webhook(shop.webhook_secret, signature, body)}
                    shop.webhooks.append((event_id, self.headers.get("Orchard-Event-Type"), verified, body, signature))
                    self.reply(204 if verified else 400, b"", "text/plain")
                else:
                    self.reply(404, b"", "text/plain")

            def reply(self, status, body, content_type):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def webhook_url(self):
        return f"http://127.0.0.1:{self.port}/webhooks/orchard"

    def create_payment_request(self, plan=None, total_label=None):
        reference = f"tea-{len(self.created) + 1001}"
        body = {
            "amount": 1234, "currency": "EUR", "reference": reference, "metadata": {"customer": "c-42"},
            "lineItems": [{"label": "Sencha 100 g", "amount": 1034}, {"label": "Gift wrap", "amount": 200}],
            "shippingMethods": [{"identifier": "post", "label": "Post", "detail": "3 days", "amount": 490}],
            "requiredShippingContactFields": ["postalAddress", "email"],
        }
        if total_label:
            body["totalLabel"] = total_label
        if plan == "recurring":
            # A tea subscription: this month's box now, the same box every month from the next.
            start = time.strftime("%Y-%m-%dT09:00:00Z", time.gmtime(time.time() + 30 * 86400))
            body["agreement"] = {
                "type": "recurring", "paymentDescription": "Tea club", "billingAgreement": "Cancel any time.",
                "managementURL": "https://shop.example/account/tea-club",
                "regularBilling": {"label": "Monthly tea box", "amount": 1234, "startDate": start, "intervalUnit": "month"},
            }
        elif plan == "deferred":
            # A pre-order: a deposit now, the harvest box when it ships in 60 days, free to cancel until a week before.
            ships = time.strftime("%Y-%m-%dT09:00:00Z", time.gmtime(time.time() + 60 * 86400))
            cancel_by = time.strftime("%Y-%m-%dT09:00:00Z", time.gmtime(time.time() + 53 * 86400))
            body["agreement"] = {
                "type": "deferred", "paymentDescription": "Harvest pre-order", "billingAgreement": "Charged when it ships.",
                "managementURL": "https://shop.example/account/pre-orders",
                "deferredBilling": {"label": "Harvest box", "amount": 2468, "paymentDate": ships},
                "freeCancellationDate": cancel_by, "freeCancellationDateTimeZone": "Europe/Paris",
            }
        request = urllib.request.Request(
            self.orchard_url + "/v1/payment-requests", data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json",
                     "Idempotency-Key": str(uuid.uuid4())})
        with urllib.request.urlopen(request, timeout=10) as response:
            created = json.load(response)
        self.created.append(created)
        return created

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Nginx:
    """Real nginx on a free loopback port: `/` to the shop, Orchard through the shipped snippet."""

    def __init__(self, shop_port, orchard_port):
        self.folder = tempfile.TemporaryDirectory(prefix="orchard-nginx-")
        prefix = Path(self.folder.name)
        import socket
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        write_config(prefix, self.port, orchard_port, "shop", shop_port, "proxy_pass http://shop; proxy_set_header Host $host;")
        self.prefix = prefix
        check = subprocess.run([NGINX, "-t", "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("nginx refused the configuration:\n" + check.stderr)
        self.process = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("nginx did not start")
        self.url = f"http://localhost:{self.port}"

    def access_log(self):
        return (self.prefix / "access.log").read_text()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.folder.cleanup()
