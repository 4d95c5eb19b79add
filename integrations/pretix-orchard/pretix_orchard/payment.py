"""The payment provider: settings, the Orchard payment request made for each pretix payment, the
button on the order's page, refunds and captures. What Orchard reports moves the payment only
through `processing` (the signed webhook, or the reconciliation asking Orchard)."""

import hashlib
import logging
from collections import OrderedDict
from datetime import timedelta
from decimal import Decimal

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest
from django.template.loader import get_template
from django.utils.timezone import now
from django.utils.translation import gettext_lazy as _
from pretix.base.forms import SECRET_REDACTED, SecretKeySettingsField
from pretix.base.i18n import language
from pretix.base.models import Order, OrderPayment, OrderRefund
from pretix.base.payment import BasePaymentProvider, PaymentException
from pretix.helpers.countries import CachedCountries
from pretix.multidomain.urlreverse import eventreverse

from .client import (
    MAXIMUM_LABEL, MAXIMUM_LINE_ITEMS, OrchardClient, OrchardError, OrchardUnavailable, check_api_key,
    check_base_url, check_webhook_secret, currency_problem, exponents, minor_units,
)

logger = logging.getLogger(__name__)

IDENTIFIER = "orchard"
#: Orchard keeps a payment request open for at most this long (expiresInSeconds, 60–2592000: 30 days).
LONGEST_REQUEST = 2_592_000
SHORTEST_REQUEST = 60


def currency_places(currency):
    return settings.CURRENCY_PLACES.get(currency, 2)


def to_minor(amount, currency):
    return minor_units(Decimal(amount), currency_places(currency))


def from_minor(amount, currency):
    return Decimal(amount) / (Decimal(10) ** currency_places(currency))


def operator_urls():
    """The Orchards pretix's operator names in pretix.cfg ([orchard] url, several separated by spaces):
    the only addresses on a private network or loopback that an event's settings may use (see
    OrchardClient's `trusted`). The first is the settings' default."""
    return [url.rstrip("/") for url in settings.CONFIG_FILE.get("orchard", "url", fallback="").split()]


def make_client(url, api_key, timeout=15):
    url = (url or "").strip().rstrip("/")
    trusted = bool(url) and url in operator_urls()
    return OrchardClient(url, api_key, timeout=timeout, trusted=trusted)


def key_fingerprint(url, api_key):
    """Names an Orchard address and key without holding the key: what the stored merchant (below)
    was read with, so that it is used only while the settings still name that Orchard and key."""
    return hashlib.sha256(f"{(url or '').strip().rstrip('/')}\n{(api_key or '').strip()}".encode()).hexdigest()[:32]


def merchant_record(merchant, url, api_key):
    """What the settings keep of `GET /v1/merchant` (as `payment_orchard_merchant`)."""
    return {
        "for": key_fingerprint(url, api_key),
        "merchantIdentifier": str(merchant.get("merchantIdentifier", "")),
        "displayName": str(merchant.get("displayName", "")),
        "processor": str(merchant.get("processor", "")),
        # None from an Orchard older than `livemode`: then nothing is said either way.
        "livemode": merchant.get("livemode") if isinstance(merchant.get("livemode"), bool) else None,
        "wallets": [str(wallet) for wallet in merchant.get("wallets") or []],
        "currencies": exponents(merchant),
        "checked": now().isoformat(),
    }


def idempotency_key(payment: OrderPayment):
    """One key per pretix payment, the same on every retry: Orchard answers a repeat with the request
    it made the first time, so a retried checkout never makes a second one."""
    event = payment.order.event
    return f"pretix:{event.organizer.slug}:{event.slug}:{payment.full_id}:{payment.pk}"


def refund_key(refund: OrderRefund):
    event = refund.order.event
    return f"pretix-refund:{event.organizer.slug}:{event.slug}:{refund.full_id}:{refund.pk}"


def _label(text):
    text = " ".join(str(text).split()) or "-"
    return text if len(text) <= MAXIMUM_LABEL else text[: MAXIMUM_LABEL - 1] + "…"


def line_items(order: Order, payment: OrderPayment):
    """The order's positions and fees as Orchard line items in minor units, adding up to the payment's
    amount: equal lines are counted together ("2 × Ticket"), and a payment for part of the order
    (another payment already made) gets a line for what was paid before."""
    currency = order.event.currency
    lines = OrderedDict()
    for position in order.positions.select_related("item", "variation").order_by("positionid"):
        name = str(position.item.name)
        if position.variation_id:
            name = f"{name} – {position.variation.value}"
        key = (name, to_minor(position.price, currency))
        lines[key] = lines.get(key, 0) + 1
    for fee in order.fees.all():
        name = fee.description or fee.get_fee_type_display()
        key = (str(name), to_minor(fee.value, currency))
        lines[key] = lines.get(key, 0) + 1
    items = [
        {"label": _label(f"{count} × {name}" if count > 1 else name), "amount": amount * count}
        for (name, amount), count in lines.items() if amount * count != 0
    ]
    total = to_minor(payment.amount, currency)
    if len(items) >= MAXIMUM_LINE_ITEMS:
        items = [{"label": _label(_("Order {code}").format(code=order.code)), "amount": sum(i["amount"] for i in items)}]
    difference = total - sum(item["amount"] for item in items)
    if difference:
        items.append({"label": _label(_("Paid before") if difference < 0 else _("Outstanding")), "amount": difference})
    return items


class OrchardProvider(BasePaymentProvider):
    identifier = IDENTIFIER
    verbose_name = _("Apple Pay and Google Pay (Orchard)")

    @property
    def public_name(self):
        if self.offers_google_pay:
            return _("Apple Pay or Google Pay")
        return _("Apple Pay")

    @property
    def offers_google_pay(self):
        """The setting, unless Orchard said (GET /v1/merchant) that the merchant does not take Google Pay."""
        if not self.settings.get("google_pay", as_type=bool, default=True):
            return False
        merchant = self.merchant()
        return merchant is None or "googlePay" in merchant.get("wallets", [])

    abort_pending_allowed = False
    execute_payment_needs_user = False

    # Settings

    @property
    def settings_form_fields(self):
        fields = [
            ("api_url", forms.CharField(
                label=_("Orchard's address for the payments API"),
                help_text=_("Where pretix's server reaches Orchard: https, or http to loopback. An address on "
                            "loopback or a private network must be the one pretix.cfg names ([orchard] url)."),
                initial=next(iter(operator_urls()), None),
                required=True,
            )),
            ("api_key", SecretKeySettingsField(
                label=_("Secret API key"),
                help_text=_("osk_key_… as `orchard keys create --merchant …` printed it once."),
                required=True,
            )),
            ("webhook_secret", SecretKeySettingsField(
                label=_("Webhook signing secret"),
                help_text=_("The merchant's webhook.secret in Orchard's configuration (whsec_…). Register "
                            "{url} as the merchant's webhook URL.").format(url=self.webhook_url()),
                required=True,
            )),
            ("button_module", forms.CharField(
                label=_("Button module"),
                help_text=_("Orchard's orchard.js as the shopper's browser loads it, on pretix's own domain "
                            "through the reverse proxy (Apple Pay needs the page and Orchard on a verified domain)."),
                initial="/orchard/orchard.js",
                required=True,
            )),
            ("country", forms.ChoiceField(
                label=_("Merchant country"),
                help_text=_("The country of the merchant's acquirer, for Apple Pay's countryCode."),
                choices=CachedCountries(),
                initial=self.event.settings.get("region") or None,
                required=True,
            )),
            ("capture", forms.ChoiceField(
                label=_("Capture"),
                choices=(
                    ("immediate", _("By Orchard, as soon as the payment is authorized (tickets are delivered at once)")),
                    ("manual", _("Manually, from the payment's details in pretix (a refund before it only captures the rest)")),
                ),
                initial="immediate",
                required=True,
            )),
            ("google_pay", forms.BooleanField(
                label=_("Offer Google Pay beside Apple Pay"),
                help_text=_("Where the merchant has Google Pay in Orchard and Orchard's module offers it."),
                initial=True,
                required=False,
            )),
        ]
        return OrderedDict(list(super().settings_form_fields.items()) + fields)

    def settings_form_clean(self, cleaned_data):
        prefix = f"payment_{self.identifier}_"

        def value(name):
            given = cleaned_data.get(prefix + name)
            if given in (None, "", SECRET_REDACTED):
                return self.settings.get(name)
            return given

        errors = {}
        url = (value("api_url") or "").strip()
        for name, check in (("api_url", check_base_url), ("api_key", check_api_key),
                            ("webhook_secret", check_webhook_secret)):
            problem = check((value(name) or "").strip())
            if problem:
                errors[prefix + name] = _("This {what} {problem}.").format(
                    what={"api_url": _("address"), "api_key": _("key"), "webhook_secret": _("secret")}[name],
                    problem=problem)
        module = (value("button_module") or "").strip()
        if not module.startswith("/") or module.startswith("//") or not module.endswith(".js"):
            errors[prefix + "button_module"] = _("Give orchard.js's path on this site, such as /orchard/orchard.js.")
        if not errors and url.rstrip("/") not in operator_urls():
            from urllib.parse import urlsplit

            from .client import is_loopback_host
            if is_loopback_host(urlsplit(url).hostname):
                errors[prefix + "api_url"] = _("An Orchard on this machine must be named in pretix.cfg ([orchard] url) "
                                               "by pretix's administrator.")
        merchant = None
        if not errors:
            key = value("api_key").strip()
            try:
                merchant = make_client(url, key, timeout=10).merchant()
            except OrchardError as error:
                if error.status == 401:
                    errors[prefix + "api_key"] = _("Orchard refused this key (401): check it, and that it is not revoked.")
                elif error.status == 404:
                    errors[prefix + "api_url"] = _("The Orchard at this address has no GET /v1/merchant (404): it is older "
                                                   "than this plugin needs, or the address is not Orchard's.")
                else:
                    errors[prefix + "api_url"] = _("Orchard could not be asked at this address: {error}").format(error=error.message)
        if merchant is not None:
            # The event's currency, as Orchard counts it: one it does not take, or counts with other
            # decimals than pretix, would charge other amounts than pretix's.
            problem = currency_problem(self.event.currency, currency_places(self.event.currency), exponents(merchant))
            if problem:
                errors[NON_FIELD_ERRORS] = _("This event's currency cannot be paid through Orchard: {problem}.").format(
                    problem=problem)
        if errors:
            raise ValidationError(errors)
        cleaned_data[prefix + "api_url"] = url.rstrip("/")
        # Which merchant the key is: shown on the settings page, and the currencies and wallets the
        # checkout checks without asking Orchard each time.
        if merchant is not None:
            self.settings.set("merchant", merchant_record(merchant, url, value("api_key")))
        return cleaned_data

    def merchant(self, fetch=False):
        """What Orchard said of the settings' key (GET /v1/merchant) when they were saved, or None when it
        was said of another address or key (or never). `fetch`: ask Orchard then, and keep its answer
        (raises OrchardError)."""
        url, api_key = self.settings.get("api_url"), self.settings.get("api_key")
        stored = self.settings.get("merchant", as_type=dict)
        if isinstance(stored, dict) and stored.get("for") == key_fingerprint(url, api_key):
            return stored
        if not fetch:
            return None
        record = merchant_record(self.client(timeout=10).merchant(), url, api_key)
        self.settings.set("merchant", record)
        return record

    def currency_refusal(self, fetch=False):
        """Why Orchard cannot take this event's currency (not listed by GET /v1/merchant, or listed with
        another exponent than pretix's decimal places), or None; None as well while Orchard has not
        been asked (without `fetch`)."""
        merchant = self.merchant(fetch=fetch)
        if merchant is None:
            return None
        currency = self.event.currency
        return currency_problem(currency, currency_places(currency), merchant.get("currencies") or {})

    def settings_content_render(self, request):
        merchant = self.merchant()
        currency = self.event.currency
        return get_template("pretix_orchard/settings.html").render({
            "webhook_url": self.webhook_url(),
            "merchant": merchant,
            "currency": currency,
            "exponent": (merchant or {}).get("currencies", {}).get(currency),
            "currency_refusal": self.currency_refusal(),
            "google_pay": "googlePay" in (merchant or {}).get("wallets", []),
        })

    @property
    def test_mode_message(self):
        merchant = self.merchant()
        if merchant and merchant.get("processor") == "record":
            return _("Orchard's merchant {name} records payments without a processor: no money moves.").format(
                name=merchant.get("displayName"))
        if merchant and merchant.get("livemode") is False:
            return _("Orchard's merchant {name} pays through {processor}'s test environment: no money moves.").format(
                name=merchant.get("displayName"), processor=merchant.get("processor"))
        if merchant and merchant.get("livemode") is True:
            return _("Orchard's merchant {name} pays through {processor}'s production environment: payments in test "
                     "mode move real money.").format(name=merchant.get("displayName"), processor=merchant.get("processor"))
        return _("Orchard does not tell pretix whether its processor account is a test one: payments in test mode go "
                 "to the Orchard server and processor configured here.")

    def webhook_url(self):
        from pretix.helpers.urls import build_absolute_uri
        return build_absolute_uri("plugins:pretix_orchard:webhook")

    def client(self, timeout=15):
        return make_client(self.settings.get("api_url"), self.settings.get("api_key"), timeout=timeout)

    @property
    def capture_immediately(self):
        return self.settings.get("capture", default="immediate") != "manual"

    # Checkout

    def usable(self):
        """Configured, and for a currency Orchard takes as pretix counts it (as far as Orchard said when
        the settings were saved; execute_payment asks it where it has not said yet)."""
        configured = all(self.settings.get(name) for name in ("api_url", "api_key", "webhook_secret"))
        return configured and self.currency_refusal() is None

    def is_allowed(self, request: HttpRequest, total: Decimal = None) -> bool:
        return self.usable() and super().is_allowed(request, total)

    def order_change_allowed(self, order, request=None):
        return self.usable() and super().order_change_allowed(order, request)

    def payment_form_render(self, request, total, order=None):
        return get_template("pretix_orchard/checkout_payment_form.html").render({"provider": self})

    def checkout_confirm_render(self, request, order=None, info_data=None):
        return get_template("pretix_orchard/checkout_payment_confirm.html").render({"provider": self})

    def checkout_prepare(self, request, cart):
        return True

    def payment_prepare(self, request, payment):
        return True

    def payment_is_valid_session(self, request):
        return True

    def request_body(self, payment: OrderPayment):
        """What Orchard is asked for: the same for every retry of this payment, so its Idempotency-Key
        always names the same body."""
        order = payment.order
        currency = order.event.currency
        with language(order.locale, order.event.settings.region):
            items = line_items(order, payment)
            # The sheet's total names the event: one merchant often sells for many.
            total_label = _label(order.event.name)
        deadline = min(order.expires, payment.created + timedelta(seconds=LONGEST_REQUEST))
        seconds = int((deadline - payment.created).total_seconds())
        return {
            "amount": to_minor(payment.amount, currency),
            "currency": currency,
            "countryCode": str(self.settings.get("country") or "DE"),
            "reference": order.code,
            "lineItems": items,
            "totalLabel": total_label,
            # Immediate capture is Orchard's own (durable, retried, `payment.settled` when done).
            "capture": "automatic" if self.capture_immediately else "manual",
            "metadata": {
                "pretix_event": f"{order.event.organizer.slug}/{order.event.slug}",
                "pretix_payment": payment.full_id,
            },
            "expiresInSeconds": max(SHORTEST_REQUEST, min(LONGEST_REQUEST, seconds)),
        }

    def execute_payment(self, request, payment: OrderPayment):
        """Makes (or finds again) the Orchard payment request for this payment. Nothing is paid here:
        the order's page shows the button, and only Orchard's webhook confirms."""
        from .models import OrchardPaymentRequest
        from .processing import record_info

        info = payment.info_data
        if info.get("payment_request"):
            return None
        try:
            refusal = self.currency_refusal(fetch=True)
        except OrchardUnavailable as error:
            logger.warning("Orchard did not answer for %s: %s", payment.full_id, error)
            raise PaymentException(_("Apple Pay cannot be started right now. Please try again in a moment."))
        except OrchardError as error:
            logger.error("Orchard refused the key for %s: %s", payment.full_id, error)
            raise PaymentException(_("Apple Pay cannot be used for this order: {reason}").format(reason=error.message))
        if refusal:
            payment.order.log_action("pretix_orchard.request_refused", {
                "local_id": payment.local_id, "status": 0, "code": "currency", "message": refusal})
            raise PaymentException(_("Apple Pay cannot be used for this order: {reason}").format(reason=refusal))
        body = self.request_body(payment)
        key = idempotency_key(payment)
        try:
            created = self.client().create_payment_request(body, key)
        except OrchardUnavailable as error:
            logger.warning("Orchard did not answer for %s: %s", payment.full_id, error)
            raise PaymentException(_("Apple Pay cannot be started right now. Please try again in a moment."))
        except OrchardError as error:
            logger.error("Orchard refused the payment request for %s: %s", payment.full_id, error)
            payment.order.log_action("pretix_orchard.request_refused", {
                "local_id": payment.local_id, "status": error.status, "code": error.code, "message": error.message})
            raise PaymentException(_("Apple Pay cannot be used for this order: {reason}").format(reason=error.message))
        if created.get("amount") != body["amount"] or created.get("currency") != body["currency"] \
                or created.get("reference") != body["reference"] or created.get("idempotencyKey", key) != key:
            # Never show the shopper a sheet for another total than pretix's.
            payment.order.log_action("pretix_orchard.refused", {
                "local_id": payment.local_id, "reason": "created_mismatch", "request": created.get("id"),
                "amount": created.get("amount"), "expected": body["amount"]})
            raise PaymentException(_("Orchard answered with another amount; nothing was charged."))
        OrchardPaymentRequest.objects.get_or_create(
            payment_request_id=created["id"], defaults={"event": payment.order.event, "payment": payment})
        # What Orchard will do: an Orchard older than `capture` answers none and captures nothing itself.
        record_info(payment, payment_request=created["id"], client_secret=created["clientSecret"],
                    expires_at=created.get("expiresAt"), amount=created["amount"], currency=created["currency"],
                    capture=created.get("capture", "manual"))
        return None

    def payment_pending_render(self, request, payment: OrderPayment):
        info = payment.info_data
        order = payment.order
        context = {
            "payment": payment,
            "info": info,
            "expired": False,
            "status_url": eventreverse(order.event, "plugins:pretix_orchard:status", kwargs={
                "order": order.code, "secret": order.secret, "payment": payment.local_id}),
            "module": self.settings.get("button_module", default="/orchard/orchard.js"),
            "google_pay": self.offers_google_pay,
        }
        expires = info.get("expires_at")
        if expires:
            from django.utils.dateparse import parse_datetime
            moment = parse_datetime(expires)
            context["expired"] = moment is not None and moment <= now()
        return get_template("pretix_orchard/pending.html").render(context, request)

    def order_pending_mail_render(self, order, payment):
        return str(_("Pay with Apple Pay on your order's page; your tickets follow as soon as the payment is confirmed."))

    def payment_presale_render(self, payment):
        info = payment.info_data
        if info.get("last_four"):
            return f"{self.public_name} ({info.get('network', '')} …{info['last_four']})"
        return str(self.public_name)

    # Back office

    def payment_control_render(self, request, payment):
        info = payment.info_data
        capture_url = None
        if info.get("orchard_state") == "authorized" and payment.state == OrderPayment.PAYMENT_STATE_CONFIRMED:
            from django.urls import reverse
            capture_url = reverse("plugins:pretix_orchard:capture", kwargs={
                "organizer": payment.order.event.organizer.slug, "event": payment.order.event.slug,
                "code": payment.order.code, "payment": payment.local_id})
        return get_template("pretix_orchard/control.html").render(
            {"info": info, "payment": payment, "capture_url": capture_url}, request)

    def payment_control_render_short(self, payment):
        return self.payment_presale_render(payment)

    def refund_control_render(self, request, refund):
        return get_template("pretix_orchard/control_refund.html").render({"info": refund.info_data}, request)

    def api_payment_details(self, payment):
        info = payment.info_data
        return {key: info.get(key) for key in (
            "payment_request", "orchard_payment", "orchard_state", "network", "last_four", "captured")}

    def api_refund_details(self, refund):
        info = refund.info_data
        return {key: info.get(key) for key in ("orchard_refund", "orchard_state")}

    def matching_id(self, payment):
        return payment.info_data.get("orchard_payment")

    def refund_matching_id(self, refund):
        return refund.info_data.get("orchard_refund")

    def shred_payment_info(self, obj):
        info = obj.info_data
        kept = {key: info[key] for key in ("payment_request", "orchard_payment", "orchard_refund", "orchard_state",
                                           "captured", "idempotency_key") if key in info}
        obj.info_data = kept
        obj.save(update_fields=["info"])

    # Refunds

    def payment_refund_supported(self, payment):
        return bool(payment.info_data.get("orchard_payment"))

    def payment_partial_refund_supported(self, payment):
        return self.payment_refund_supported(payment)

    def execute_refund(self, refund: OrderRefund):
        """Refunds through Orchard under a key of this refund's own: a repeat asks Orchard about the same
        refund instead of making another. An uncaptured payment is refunded the same way: Orchard
        releases it (voids it, or captures only the rest) and answers a refund, `released`. An Orchard
        older than that refuses (409, "cancel it instead"): the payment is then captured first."""
        from .processing import capture, record_refund

        payment = refund.payment
        payment_id = payment.info_data.get("orchard_payment")
        if not payment_id:
            raise PaymentException(_("This payment has no Orchard payment to refund."))
        currency = refund.order.event.currency
        key = refund_key(refund)
        record_refund(refund, idempotency_key=key)
        try:
            try:
                status, answer = self.client().refund(payment_id, to_minor(refund.amount, currency), key)
            except OrchardError as error:
                if error.status != 409 or "cancel it instead" not in (error.message or ""):
                    raise
                capture(self, payment, raise_errors=True)
                status, answer = self.client().refund(payment_id, to_minor(refund.amount, currency), key)
        except OrchardUnavailable as error:
            # No definite answer: the reconciliation asks again under the same key.
            refund.state = OrderRefund.REFUND_STATE_TRANSIT
            refund.save(update_fields=["state"])
            record_refund(refund, orchard_state="unknown", error=error.message)
            return
        except OrchardError as error:
            record_refund(refund, orchard_state="refused", error=error.message)
            raise PaymentException(_("Orchard did not refund: {reason}").format(reason=error.message))
        record_refund(refund, orchard_refund=answer.get("id"), orchard_state=answer.get("state"),
                      released=answer.get("released"))
        if status == 201 and answer.get("state") == "refunded":
            refund.done()
        elif status == 402 or answer.get("state") == "refused":
            raise PaymentException(_("The card's processor refused the refund: {reason}").format(
                reason=answer.get("processorMessage") or answer.get("processorCode") or "-"))
        else:
            refund.state = OrderRefund.REFUND_STATE_TRANSIT
            refund.save(update_fields=["state"])

    def cancel_payment(self, payment):
        """pretix cancels the payment: the shopper chose another payment method (or Apple Pay again: a new
        payment), the order is cancelled, the organizer cancels the payment, an order change needs
        another amount. Its Orchard payment request is withdrawn first, so that nothing can pay it any
        more. While a payment of it is at the processor, or once it is paid, Orchard refuses, and so
        does this: the pretix payment stays as it is (pretix logs the refusal) and Orchard's webhook, or
        the reconciliation, settles it."""
        from .processing import CANNOT_BE_PAID, withdraw

        if not payment.info_data.get("payment_request"):
            # Never sent to Orchard (execute_payment did not run or failed): nothing to withdraw.
            return super().cancel_payment(payment)
        outcome, detail = withdraw(self, payment)
        if outcome in CANNOT_BE_PAID:
            payment.state = OrderPayment.PAYMENT_STATE_CANCELED
            payment.save(update_fields=["state"])
            return
        if outcome == "in_progress":
            raise PaymentException(_("A payment of this order is with the card's processor right now; it cannot be "
                                     "cancelled until its outcome is known, which Orchard then reports to pretix."))
        if outcome == "paid":
            raise PaymentException(_("This payment was made at Orchard already; pretix confirms it as soon as Orchard "
                                     "reports it."))
        raise PaymentException(_("Orchard could not withdraw the payment request ({error}); the payment stays open. "
                                 "Please try again in a moment.").format(error=detail))
