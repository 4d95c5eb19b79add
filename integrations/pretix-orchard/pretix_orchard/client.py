"""Orchard's payments API (`/v1/`), as the plugin calls it: server to server, with the merchant's
secret key. No Django in here, so it is tested on its own.

Every call has a deadline. An answer the plugin cannot read as a definite outcome (no answer, a
5xx, a 504 `payment_unknown`) raises `OrchardUnavailable`: nothing is assumed, and the same call,
with the same Idempotency-Key where it takes one, is safe to make again."""

import http.client
import ipaddress
import json
import re
import urllib.error
import urllib.request
from decimal import Decimal
from urllib.parse import quote, urlencode, urlsplit

import requests
import urllib3

#: A secret API key as `orchard keys create` prints it: `osk_key_`, 16 lowercase hex digits, `_`,
#: 43 base64url characters (APIKeyRecord.keyId(ofSecret:) in Orchard).
API_KEY = re.compile(r"^osk_key_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$")

#: The webhook secret's shortest forms Orchard accepts (WebhooksConfiguration.swift): `whsec_` and
#: the base64 of at least 24 bytes, or an older, unprefixed secret of at least 32 characters.
MINIMUM_WHSEC_BYTES = 24
MINIMUM_LEGACY_SECRET = 32

#: Orchard's own bounds (docs/shop-integration.md, "Bounds of the payments API").
MAXIMUM_AMOUNT = 99_999_999_999
MAXIMUM_LINE_ITEMS = 50
MAXIMUM_LABEL = 100
MAXIMUM_REFERENCE = 128


class OrchardError(Exception):
    """A definite answer that is not a success: `status` and Orchard's `code` and `message`."""

    def __init__(self, status, code, message, body=None):
        super().__init__(f"Orchard answered {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class OrchardUnavailable(OrchardError):
    """No definite answer: a network failure, a timeout, a 5xx, or `payment_unknown`."""


def is_loopback_host(host):
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(url):
    """The problem with an Orchard base URL, or None: https anywhere, http to loopback only (the
    rule Orchard applies to its own webhook URLs), no query, fragment or credentials."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # raises on a port that is not a number
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not host:
        return "must start with https:// (or http:// for a server on this machine's loopback)"
    if parts.scheme == "http" and not is_loopback_host(host):
        return "must use https:// unless Orchard runs on this machine (http://127.0.0.1:…)"
    if parts.username or parts.password or parts.query or parts.fragment:
        return "must not carry credentials, a query or a fragment"
    return None


def check_api_key(key):
    if not API_KEY.match(key or ""):
        return "is not an Orchard secret API key (osk_key_… as `orchard keys create` prints it)"
    return None


def check_webhook_secret(secret):
    """The problem with a webhook signing secret, or None (the shapes Orchard itself accepts)."""
    import base64
    import binascii

    secret = (secret or "").strip()
    if secret.startswith("whsec_"):
        encoded = secret[len("whsec_"):]
        try:
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            return "must be whsec_ followed by base64"
        if len(key) < MINIMUM_WHSEC_BYTES:
            return f"must be whsec_ followed by the base64 of at least {MINIMUM_WHSEC_BYTES} bytes"
        return None
    if len(secret.encode()) < MINIMUM_LEGACY_SECRET:
        return f"must be whsec_… (the Standard Webhooks form), or an older secret of at least {MINIMUM_LEGACY_SECRET} characters"
    return None


def webhook_key(secret):
    """What the Standard Webhooks library takes for an Orchard secret: a `whsec_` secret as it is,
    an older one (no prefix) as its UTF-8 bytes, which is how Orchard keys its HMAC."""
    secret = secret.strip()
    return secret if secret.startswith("whsec_") else secret.encode()


def minor_units(amount: Decimal, places: int) -> int:
    """A decimal amount in the currency's minor units; refuses one that does not fit exactly."""
    scaled = Decimal(amount) * (Decimal(10) ** places)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{amount} has more than {places} decimal places")
    return int(scaled)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Orchard's API never redirects; a redirect is answered as it is, never followed with the key."""

    def redirect_request(self, *args, **kwargs):
        return None


class OrchardClient:
    """`trusted`: the base URL is the one pretix's operator named in pretix.cfg ([orchard] url), so
    the call goes out through the standard library, outside pretix's guard against requests to
    private networks (which would refuse an Orchard on loopback). Any other URL goes through
    `requests`, under that guard: an event's settings cannot point pretix at an internal service."""

    def __init__(self, base_url, api_key, timeout=15, trusted=False, session=None):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.trusted = trusted
        self.session = session

    def _send(self, method, url, data, headers):
        """`(status, reason, body bytes)`; raises OSError or requests' errors when nothing came back."""
        if self.trusted:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with opener.open(request, timeout=self.timeout) as response:
                    return response.status, response.reason, response.read()
            except urllib.error.HTTPError as error:
                with error:
                    return error.code, error.reason, error.read()
        session = self.session or requests.Session()
        response = session.request(method, url, data=data, headers=headers, timeout=self.timeout, allow_redirects=False)
        return response.status_code, response.reason, response.content

    def call(self, method, path, body=None, idempotency_key=None, accept=(200, 201)):
        """`(status, json)` for a status in `accept`; raises OrchardError or OrchardUnavailable."""
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        try:
            status, reason, content = self._send(method, self.base_url + path, data, headers)
        except (OSError, requests.RequestException, http.client.HTTPException, urllib3.exceptions.HTTPError) as error:
            raise OrchardUnavailable(0, "network", f"{method} {path}: {error.__class__.__name__}: {error}") from error
        try:
            answer = json.loads(content) if content else None
        except ValueError:
            answer = None
        if status in accept:
            if not isinstance(answer, dict):
                raise OrchardUnavailable(status, "unreadable", f"{method} {path}: the answer is not JSON")
            return status, answer
        error = answer.get("error") if isinstance(answer, dict) else None
        code = (error or {}).get("code", "http_%d" % status)
        message = (error or {}).get("message", reason or "")
        if status >= 500 or code == "payment_unknown":
            raise OrchardUnavailable(status, code, message, answer)
        raise OrchardError(status, code, message, answer)

    # Payment requests

    def create_payment_request(self, body, idempotency_key):
        return self.call("POST", "/v1/payment-requests", body, idempotency_key)[1]

    def payment_request(self, request_id):
        return self.call("GET", f"/v1/payment-requests/{quote(request_id, safe='')}")[1]

    # Payments

    def payment(self, payment_id):
        return self.call("GET", f"/v1/payments/{quote(payment_id, safe='')}")[1]

    def capture(self, payment_id):
        return self.call("POST", f"/v1/payments/{quote(payment_id, safe='')}/capture")[1]

    def cancel(self, payment_id):
        return self.call("POST", f"/v1/payments/{quote(payment_id, safe='')}/cancel")[1]

    def refund(self, payment_id, amount, idempotency_key):
        """`(status, refund)`: 201 refunded, 202 pending or unknown, 402 refused (nothing refunded)."""
        return self.call("POST", f"/v1/payments/{quote(payment_id, safe='')}/refunds", {"amount": amount},
                         idempotency_key, accept=(201, 202, 402))

    def refunds(self, payment_id):
        return self.call("GET", f"/v1/payments/{quote(payment_id, safe='')}/refunds")[1]["refunds"]

    def cancel_payment_request(self, request_id):
        """Withdraws an unpaid payment request (`POST /v1/payment-requests/{id}/cancel`): the request,
        `cancelled`. Withdrawing a cancelled one again answers it as it is. Orchard refuses with 409
        `order_not_open` once it is paid or expired, and while a payment of it is at the processor
        with 409 `invalid_state` (the first Orchard that had the route answered 504 `payment_unknown`:
        `OrchardUnavailable`); see `payment_in_progress`."""
        return self.call("POST", f"/v1/payment-requests/{quote(request_id, safe='')}/cancel")[1]

    # The key

    def extend_payment_request(self, request_id, seconds):
        """Keeps an unpaid payment request payable `seconds` from now (`POST /v1/payment-requests/{id}/extend`,
        60–2592000): the request, with its `expiresAt` (unchanged when it was open for longer already).
        409 `order_not_open` once it is paid, cancelled or expired."""
        return self.call("POST", f"/v1/payment-requests/{quote(request_id, safe='')}/extend",
                         {"expiresInSeconds": int(seconds)})[1]

    def events(self, after=None, limit=100):
        """A page of the key's merchant's events, oldest first (`GET /v1/events`): `{"events", "next"}`,
        `next` null once there is nothing newer. 404 when `after` is not (or no longer) one of its events."""
        query = urlencode({key: value for key, value in (("after", after), ("limit", int(limit))) if value})
        return self.call("GET", f"/v1/events?{query}")[1]

    def merchant(self):
        """`GET /v1/merchant`: which merchant the key is for, and what it takes (`merchantIdentifier`,
        `displayName`, `domains`, `processor`, `wallets`, `currencies` with their exponents). Changes
        nothing; a key Orchard does not take is a 401 (OrchardError)."""
        return self.call("GET", "/v1/merchant")[1]


def payment_in_progress(error):
    """Whether Orchard refused to withdraw a payment request because a payment of it is at the
    processor (its outcome follows by webhook): 409 `invalid_state`, or 504 `payment_unknown` with
    which the first Orchard that had the route answered it."""
    return (error.status == 409 and error.code == "invalid_state") or error.code == "payment_unknown"


def exponents(merchant):
    """`{code: exponent}` from `GET /v1/merchant`'s `currencies`."""
    listed = {}
    for currency in (merchant or {}).get("currencies") or []:
        if isinstance(currency, dict) and isinstance(currency.get("code"), str) and isinstance(currency.get("exponent"), int):
            listed[currency["code"].upper()] = currency["exponent"]
    return listed


def currency_problem(currency, places, listed):
    """Why an event in `currency` (`places` decimals in pretix) cannot be paid through an Orchard that
    lists `listed` ({code: exponent}), or None."""
    if currency not in listed:
        return f"Orchard does not take {currency}"
    if listed[currency] != places:
        return (f"Orchard counts {currency} in units of 10^-{listed[currency]}, pretix with {places} decimal places: "
                f"amounts would be off by a factor of {10 ** abs(listed[currency] - places)}")
    return None
