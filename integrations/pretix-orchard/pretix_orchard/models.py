from django.db import models


class OrchardPaymentRequest(models.Model):
    """The Orchard payment request a pretix payment pays through: how a webhook or a reconciliation
    finds the pretix payment (and so the event whose secret signs, and whose key asks)."""

    payment_request_id = models.CharField(max_length=190, unique=True)
    event = models.ForeignKey("pretixbase.Event", on_delete=models.CASCADE, related_name="+")
    payment = models.ForeignKey("pretixbase.OrderPayment", on_delete=models.CASCADE, related_name="orchard_requests")
    created = models.DateTimeField(auto_now_add=True)
    #: When the reconciliation last asked Orchard about it.
    last_checked = models.DateTimeField(null=True, blank=True)
    #: A capture the plugin owes (immediate capture) that did not go through yet.
    capture_due = models.BooleanField(default=False)


class OrchardEventCursor(models.Model):
    """Where the periodic task stopped reading an Orchard key's event feed (`GET /v1/events`): the
    last event ID it read, for the address and key `key` names (`payment.key_fingerprint`)."""

    key = models.CharField(max_length=64, unique=True)
    cursor = models.CharField(max_length=190, blank=True, default="")
    updated = models.DateTimeField(auto_now=True)


class OrchardWebhookMessage(models.Model):
    """Every webhook message (its `webhook-id`, which Orchard keeps on every attempt) the plugin
    acted on, recorded in the same transaction as what it did: a message seen again changes nothing."""

    message_id = models.CharField(max_length=190, unique=True)
    event_type = models.CharField(max_length=100)
    payment_request_id = models.CharField(max_length=190, blank=True, default="")
    received = models.DateTimeField(auto_now_add=True)
