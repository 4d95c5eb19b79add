import hmac
import json
import logging

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from django_scopes import scopes_disabled
from pretix.base.models import Event_SettingsStore, Order, OrderPayment, Organizer_SettingsStore
from pretix.control.permissions import event_permission_required
from standardwebhooks import Webhook

from .client import webhook_key
from .events import act_once, payment_of
from .processing import capture

logger = logging.getLogger(__name__)

SECRET_SETTING = "payment_orchard_webhook_secret"
MERCHANT_SETTING = "payment_orchard_merchant"
SIGNATURE_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")


def verified(secret, body, headers):
    """Whether the Standard Webhooks signature holds for `secret`, within the library's 5 minutes."""
    try:
        Webhook(webhook_key(secret)).verify(body, headers)
        return True
    except Exception:  # WebhookVerificationError, and whatever a malformed header raises
        return False


def configured_secrets(merchant=None):
    """Every webhook secret an event (or organizer) has set for this provider; with `merchant` (the
    delivery's Orchard-Merchant header), only those of the settings whose key Orchard named as that
    merchant (GET /v1/merchant, kept when they were saved), where any are."""
    everything, named = set(), set()
    for store in (Event_SettingsStore, Organizer_SettingsStore):
        secrets = dict(store.objects.filter(key=SECRET_SETTING).values_list("object_id", "value"))
        everything |= set(secrets.values())
        if merchant:
            for object_id, value in store.objects.filter(key=MERCHANT_SETTING, object_id__in=list(secrets)).values_list(
                    "object_id", "value"):
                try:
                    if json.loads(value).get("merchantIdentifier") == merchant:
                        named.add(secrets[object_id])
                except (ValueError, AttributeError):
                    continue
    return [secret for secret in (named or everything) if secret]


@csrf_exempt
@require_POST
@scopes_disabled()
def webhook(request, *args, **kwargs):
    """Orchard's webhooks for every event using this plugin: verified with the Standard Webhooks
    library against the secret of the event whose payment it concerns, acted on once per message ID."""
    body = request.body
    headers = {name: request.headers.get(name, "") for name in SIGNATURE_HEADERS}
    if not all(headers.values()):
        return HttpResponseBadRequest("missing webhook signature headers")
    try:
        event = json.loads(body)
        payment = payment_of(event)
    except (ValueError, AttributeError):
        return HttpResponseBadRequest("not a JSON event")
    if payment is not None:
        provider = payment.payment_provider
        secrets = [provider.settings.get("webhook_secret")] if provider else []
    else:
        provider = None
        secrets = configured_secrets(request.headers.get("Orchard-Merchant", "").strip()[:190] or None)
    if not any(secret and verified(secret, body, headers) for secret in secrets):
        logger.warning("Refused an Orchard webhook that no configured secret verifies (id %s)", headers["webhook-id"][:64])
        return HttpResponseBadRequest("signature does not verify")
    if str(event.get("id", "")) != headers["webhook-id"]:
        return HttpResponseBadRequest("webhook-id is not the event's id")

    # The webhook-id is the event's ID (checked above): an event acted on from the feed is seen here.
    if not act_once(event, payment, provider):
        return JsonResponse({"status": "seen"})
    return JsonResponse({"status": "ok"})


@require_GET
def status(request, *args, **kwargs):
    """Where the payment stands in pretix, for the order's page to reload once the webhook has come.
    It only reads: the page's word never confirms anything."""
    order = get_object_or_404(Order, event=request.event, code=kwargs["order"])
    if not hmac.compare_digest(order.secret.lower(), kwargs["secret"].lower()):
        raise Http404()
    payment = get_object_or_404(OrderPayment, order=order, local_id=kwargs["payment"], provider="orchard")
    response = JsonResponse({"payment": payment.state, "order": order.status})
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@event_permission_required("event.orders:write")
def capture_view(request, *args, **kwargs):
    """The back office's capture of an authorized payment (capture set to manual)."""
    payment = get_object_or_404(OrderPayment, order__event=request.event, order__code=kwargs["code"],
                                local_id=kwargs["payment"], provider="orchard")
    order_url = reverse("control:event.order", kwargs={
        "organizer": request.event.organizer.slug, "event": request.event.slug, "code": payment.order.code})
    if payment.state != OrderPayment.PAYMENT_STATE_CONFIRMED:
        messages.error(request, _("Only a confirmed payment can be captured."))
    elif capture(payment.payment_provider, payment):
        messages.success(request, _("The payment was captured."))
    else:
        messages.error(request, _("Orchard could not capture the payment; see the order's history."))
    return redirect(order_url)
