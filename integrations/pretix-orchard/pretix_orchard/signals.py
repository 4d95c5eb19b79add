import logging
from datetime import timedelta

from django.conf import settings
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _
from django_scopes import scopes_disabled
from pretix.base.signals import logentry_display, periodic_task, register_payment_providers
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
    from .processing import reconcile as run
    after = reconcile_after()
    checked = run(older_than=after, every=min(after, timedelta(minutes=5)))
    if checked:
        logger.info("Orchard reconciliation asked about %d payment requests", checked)


TEXTS = {
    "pretix_orchard.refused": _("Orchard reported a payment pretix did not take ({reason}): nothing was marked paid."),
    "pretix_orchard.voided": _("The refused Orchard payment {orchard_payment} was voided: the shopper keeps the money."),
    "pretix_orchard.void_failed": _("The refused Orchard payment {orchard_payment} could not be voided: {error}"),
    "pretix_orchard.captured": _("The Orchard payment {orchard_payment} was captured."),
    "pretix_orchard.capture_failed": _("The Orchard payment {orchard_payment} could not be captured: {error}"),
    "pretix_orchard.pending": _("Orchard awaits the processor's answer for payment {orchard_payment}."),
    "pretix_orchard.expired": _("The Orchard payment request can no longer be paid ({why})."),
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
            "reason", "orchard_payment", "error", "why", "message")})
    except (KeyError, ValueError):
        return str(text)
