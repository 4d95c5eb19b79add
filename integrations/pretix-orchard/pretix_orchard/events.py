"""Acting on an Orchard event once, whichever way it came: a verified webhook, or the event feed
(`GET /v1/events`) the periodic task reads after pretix missed deliveries."""

from django.db import IntegrityError, transaction
from pretix.base.models import OrderPayment

from .models import OrchardPaymentRequest, OrchardWebhookMessage


def request_id_of(event):
    """The payment request an event is about (its `data.paymentRequest`, or its payment's)."""
    data = event.get("data") or {}
    return (data.get("paymentRequest") or {}).get("id") or (data.get("payment") or {}).get("paymentRequestId")


def claimed_payment(event):
    """The pretix payment an unknown payment request names in its metadata, if any: such a request
    was not made by this plugin for it, and is refused when it pays."""
    data = event.get("data") or {}
    metadata = (data.get("paymentRequest") or {}).get("metadata") or (data.get("payment") or {}).get("metadata") or {}
    event_path = metadata.get("pretix_event", "")
    full_id = metadata.get("pretix_payment", "")
    if event_path.count("/") != 1 or "-P-" not in full_id:
        return None
    organizer, slug = event_path.split("/")
    code, _, local_id = full_id.rpartition("-P-")
    try:
        return OrderPayment.objects.select_related("order", "order__event").get(
            order__event__organizer__slug=organizer, order__event__slug=slug, order__code=code,
            local_id=int(local_id), provider="orchard")
    except (OrderPayment.DoesNotExist, ValueError):
        return None


def payment_of(event):
    """The pretix payment the event concerns: the one whose request it names, else one a request's
    metadata claims; None for an event about no payment of this pretix."""
    row = OrchardPaymentRequest.objects.select_related("payment", "payment__order", "event").filter(
        payment_request_id=request_id_of(event) or "").first()
    return row.payment if row else claimed_payment(event)


def act_once(event, payment, provider):
    """Applies a verified event to `payment` unless its ID was acted on before (by either way):
    False when it was. The ID and what it did are written in one transaction."""
    from .processing import handle_event
    with transaction.atomic():
        try:
            with transaction.atomic():
                OrchardWebhookMessage.objects.create(
                    message_id=str(event.get("id", ""))[:190], event_type=str(event.get("type", ""))[:100],
                    payment_request_id=(request_id_of(event) or "")[:190])
        except IntegrityError:
            return False
        if payment is not None and provider is not None:
            handle_event(provider, payment, event)
    return True
