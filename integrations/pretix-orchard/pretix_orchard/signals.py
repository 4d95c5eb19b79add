import logging
from datetime import timedelta

from django.conf import settings
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _
from django_scopes import scopes_disabled
from pretix.base.signals import (
    logentry_display, order_canceled, order_expired, order_paid, periodic_task, register_payment_providers,
)
from pretix.helpers.periodic import minimum_interval

logger = logging.getLogger(__name__)


@receiver(register_payment_providers, dispatch_uid="payment_orchard")
def register_payment_provider(sender, **kwargs):
    from .payment import OrchardProvider
    return OrchardProvider


def reconcile_after():
    """How long a payment may stay open before the reconciliation asks Orchard about it: pretix.cfg's
    [orchard] reconcile_after (seconds, 600 by default)."""
    return timedelta(seconds=settings.CONFIG_FILE.getint("orchard", "reconcile_after", fallback=600))


@receiver(periodic_task, dispatch_uid="payment_orchard_reconcile")
@scopes_disabled()
@minimum_interval(minutes_after_success=1, minutes_after_error=1)
def reconcile(sender, **kwargs):
    from .feed import catch_up
    from .processing import reconcile as run
    # First the events pretix missed (Orchard's feed), then what is still open after a while.
    acted = catch_up()
    if acted:
        logger.info("Orchard's event feed had %d events pretix had not acted on", acted)
    after = reconcile_after()
    checked = run(older_than=after, every=min(after, timedelta(minutes=5)))
    if checked:
        logger.info("Orchard reconciliation asked about %d payment requests", checked)


@receiver(order_canceled, dispatch_uid="payment_orchard_order_canceled")
@receiver(order_expired, dispatch_uid="payment_orchard_order_expired")
@receiver(order_paid, dispatch_uid="payment_orchard_order_paid")
def withdraw_requests(sender, order, **kwargs):
    """An order cancelled, expired or paid no longer needs its Orchard payment requests. pretix calls
    the provider's cancel_payment for the order's created and pending payments when it cancels the
    order or marks it paid, but not when the order expires, nor for failed payments (whose requests
    stay payable with another card): those are withdrawn here."""
    from django.db import transaction

    from .processing import withdraw_unwanted
    try:
        with transaction.atomic():  # a failure here leaves pretix's own transaction usable
            withdraw_unwanted(order, "withdrawn")
    except Exception:  # never fail pretix's own change; the reconciliation asks again
        logger.exception("Could not withdraw the Orchard payment requests of order %s", order.code)


TEXTS = {
    "pretix_orchard.refused": _("Orchard reported a payment pretix did not take ({reason}): nothing was marked paid."),
    "pretix_orchard.voided": _("The refused Orchard payment {orchard_payment} was voided (refunded in full if Orchard had "
                               "captured it already): the shopper keeps the money."),
    "pretix_orchard.void_failed": _("The refused Orchard payment {orchard_payment} could not be voided: {error}"),
    "pretix_orchard.captured": _("The Orchard payment {orchard_payment} was captured."),
    "pretix_orchard.extended": _("The Orchard payment request {payment_request} was extended to {expires}, as the order's payment term."),
    "pretix_orchard.capture_failed": _("The Orchard payment {orchard_payment} could not be captured: {error}"),
    "pretix_orchard.pending": _("Orchard awaits the processor's answer for payment {orchard_payment}."),
    "pretix_orchard.expired": _("The Orchard payment request can no longer be paid ({why})."),
    "pretix_orchard.withdrawn": _("The Orchard payment request {request} was withdrawn: nothing can pay it any more ({outcome})."),
    "pretix_orchard.withdraw_refused": _("The Orchard payment request {request} was not withdrawn ({outcome}): {error}"),
    "pretix_orchard.request_refused": _("Orchard refused the payment request: {message}"),
    "pretix_orchard.quota_exceeded": _("Orchard's payment {orchard_payment} came after the order's tickets sold out: "
                                       "mark the order paid anyway, or refund the payment."),
}


@receiver(signal=logentry_display, dispatch_uid="orchard_logentry_display")
def logentry(sender, logentry, **kwargs):
    text = TEXTS.get(logentry.action_type)
    if text is None:
        return None
    data = logentry.parsed_data
    try:
        return text.format(**{key: data.get(key, "") for key in (
            "reason", "orchard_payment", "error", "why", "message", "request", "outcome")})
    except (KeyError, ValueError):
        return str(text)
