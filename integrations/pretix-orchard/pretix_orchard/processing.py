"""What Orchard reports, applied to pretix: from a verified webhook (views.webhook) or from Orchard's
answer to the reconciliation (reconcile). Each step checks pretix's state first, so a repeat, an
event out of order or both paths at once change nothing twice: a payment is confirmed once, never
from a request for another amount, and never left pending once Orchard knows the outcome."""

import json
import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils.dateparse import parse_datetime
from django.utils.timezone import now
from pretix.base.models import Order, OrderPayment, OrderRefund, Quota
from pretix.helpers import OF_SELF

from .client import OrchardError, OrchardUnavailable, payment_in_progress
from .models import OrchardPaymentRequest, OrchardWebhookMessage

logger = logging.getLogger(__name__)

OPEN_STATES = (OrderPayment.PAYMENT_STATE_CREATED, OrderPayment.PAYMENT_STATE_PENDING)
#: What `withdraw` answers when nothing can pay the request any more: withdrawn now or before
#: (`cancelled`), `expired`, or `gone` (Orchard does not know it under the settings' key: another
#: merchant's key now, so nothing pretix holds can reach it).
CANNOT_BE_PAID = ("cancelled", "expired", "gone")


def record_info(payment, **fields):
    """Merges `fields` into the payment's info, under a row lock, without touching its state."""
    with transaction.atomic():
        locked = OrderPayment.objects.select_for_update(of=OF_SELF).get(pk=payment.pk)
        info = locked.info_data
        info.update({key: value for key, value in fields.items() if value is not None})
        locked.info_data = info
        locked.save(update_fields=["info"])
    payment.info = locked.info
    return info


def record_refund(refund, **fields):
    info = refund.info_data
    info.update({key: value for key, value in fields.items() if value is not None})
    refund.info_data = info
    refund.save(update_fields=["info"])


def _money(amount, currency):
    from .payment import from_minor
    return from_minor(amount, currency)


def mismatch(provider, payment, request_id, amount, currency):
    """Why an Orchard payment cannot pay this pretix payment, or None: another payment request than
    the one the plugin made for it, another currency, or another amount."""
    from .payment import to_minor

    info = payment.info_data
    if request_id != info.get("payment_request"):
        return "another_request"
    if currency != payment.order.event.currency:
        return "currency"
    if amount != to_minor(payment.amount, payment.order.event.currency):
        return "amount"
    return None


def refuse(provider, payment, orchard_payment, request_id, reason):
    """An Orchard payment pretix will not take: logged on the order (once, whether Orchard reports
    it authorized, then settled), its money given back at Orchard (after the transaction) so the
    shopper keeps it; pretix's payment unchanged."""
    refused = payment.info_data.get("refused_payments") or []
    if orchard_payment.get("id") not in refused:
        payment.order.log_action("pretix_orchard.refused", {
            "local_id": payment.local_id, "reason": reason, "request": request_id,
            "orchard_payment": orchard_payment.get("id"), "amount": orchard_payment.get("amount"),
            "currency": orchard_payment.get("currency"), "state": orchard_payment.get("state"),
        })
        record_info(payment, refused_payments=refused + [orchard_payment.get("id")])
    if orchard_payment.get("state") in ("authorized", "settled"):
        transaction.on_commit(lambda: void(provider, payment, orchard_payment["id"], reason))


def void(provider, payment, orchard_payment_id, reason):
    """Voids a refused payment's authorization; one Orchard captured already (a request made with
    `capture: "automatic"` is captured right after its authorization) is refunded in full instead,
    under a key of its own, so a repeat refunds nothing more."""
    try:
        provider.client().cancel(orchard_payment_id)
    except OrchardError as error:
        if error.status == 409 and not isinstance(error, OrchardUnavailable):
            refund_refused(provider, payment, orchard_payment_id, reason)
            return
        logger.warning("Could not void Orchard payment %s: %s", orchard_payment_id, error)
        payment.order.log_action("pretix_orchard.void_failed", {
            "local_id": payment.local_id, "orchard_payment": orchard_payment_id, "error": error.message})
        return
    payment.order.log_action("pretix_orchard.voided", {
        "local_id": payment.local_id, "orchard_payment": orchard_payment_id, "reason": reason})


def refund_refused(provider, payment, orchard_payment_id, reason):
    """A refused payment no longer authorized: refunded in full if Orchard captured it; nothing to
    do if it was voided already or refunded (the same key answers the same refund)."""
    try:
        state = provider.client().payment(orchard_payment_id)["payment"]
        if state["state"] != "settled" or state.get("amountRefunded", 0) >= state.get("amount", 0):
            return
        status, answer = provider.client().refund(
            orchard_payment_id, state["amount"] - state.get("amountRefunded", 0), f"pretix-refused:{orchard_payment_id}")
    except OrchardError as error:
        logger.warning("Could not refund refused Orchard payment %s: %s", orchard_payment_id, error)
        payment.order.log_action("pretix_orchard.void_failed", {
            "local_id": payment.local_id, "orchard_payment": orchard_payment_id, "error": error.message})
        return
    payment.order.log_action("pretix_orchard.voided", {
        "local_id": payment.local_id, "orchard_payment": orchard_payment_id, "reason": reason,
        "refund": answer.get("id"), "state": answer.get("state")})


def apply_payment(provider, payment, orchard_payment, request_id):
    """Moves the pretix payment as one Orchard payment of its request says."""
    state = orchard_payment.get("state")
    payment.refresh_from_db()
    if state in ("authorized", "settled"):
        reason = mismatch(provider, payment, request_id, orchard_payment.get("amount"), orchard_payment.get("currency"))
        if reason:
            refuse(provider, payment, orchard_payment, request_id, reason)
            return
        confirm(provider, payment, orchard_payment)
    elif state in ("refused", "failed"):
        if payment.state in OPEN_STATES and orchard_payment.get("paymentRequestId", request_id) == payment.info_data.get("payment_request"):
            payment.fail(info=_merged(payment, refusal={
                "orchard_payment": orchard_payment.get("id"), "state": state,
                "code": orchard_payment.get("processorCode"), "message": orchard_payment.get("processorMessage")}),
                send_mail=False, log_data={"orchard_payment": orchard_payment.get("id"), "state": state})
    elif state in ("pending", "unknown"):
        with transaction.atomic():
            locked = OrderPayment.objects.select_for_update(of=OF_SELF).get(pk=payment.pk)
            if locked.state == OrderPayment.PAYMENT_STATE_CREATED:
                locked.state = OrderPayment.PAYMENT_STATE_PENDING
                locked.save(update_fields=["state"])
                payment.order.log_action("pretix_orchard.pending", {
                    "local_id": payment.local_id, "orchard_payment": orchard_payment.get("id")})
    elif state == "cancelled":
        cancelled(provider, payment, orchard_payment)


def _merged(payment, **fields):
    info = payment.info_data
    info.update(fields)
    return info


def confirm(provider, payment, orchard_payment):
    state = orchard_payment.get("state")
    info = _merged(payment, orchard_payment=orchard_payment.get("id"), orchard_state=state,
                   network=orchard_payment.get("network"), last_four=orchard_payment.get("lastFour"),
                   captured=state == "settled")
    info.pop("refusal", None)
    if payment.state == OrderPayment.PAYMENT_STATE_CONFIRMED:
        record_info(payment, **{k: v for k, v in info.items() if k in (
            "orchard_payment", "orchard_state", "network", "last_four", "captured")})
    else:
        payment.info_data = info
        try:
            payment.confirm()
        except Quota.QuotaExceededException as error:
            # Paid after the order expired and its tickets sold out: pretix keeps the payment
            # confirmed and the order unpaid, and logs it for the organizer, who marks it paid
            # anyway or refunds it (through Orchard) from the order's page.
            payment.order.log_action("pretix_orchard.quota_exceeded", {
                "local_id": payment.local_id, "orchard_payment": orchard_payment.get("id"), "message": str(error)})
    # Orchard captures a request made with `capture: "automatic"` itself; the plugin captures only
    # where Orchard will not: a request an Orchard older than `capture` made (its answer named none).
    if state == "authorized" and provider.capture_immediately and payment.info_data.get("capture") != "automatic":
        OrchardPaymentRequest.objects.filter(payment=payment).update(capture_due=True)
        transaction.on_commit(lambda: capture(provider, payment))


def capture(provider, payment, raise_errors=False):
    """Captures the payment's authorization at Orchard; a capture that finds it settled already is done."""
    from pretix.base.payment import PaymentException

    payment_id = payment.info_data.get("orchard_payment")
    try:
        answer = provider.client().capture(payment_id)
        state = answer["payment"]["state"]
    except OrchardError as error:
        state = None
        if error.status == 409 and not isinstance(error, OrchardUnavailable):
            try:
                state = provider.client().payment(payment_id)["payment"]["state"]
            except OrchardError:
                state = None
        if state != "settled":
            payment.order.log_action("pretix_orchard.capture_failed", {
                "local_id": payment.local_id, "orchard_payment": payment_id, "error": error.message})
            if raise_errors:
                raise PaymentException(f"Orchard could not capture the payment: {error.message}")
            return False
    record_info(payment, orchard_state=state, captured=state == "settled")
    OrchardPaymentRequest.objects.filter(payment=payment).update(capture_due=False)
    payment.order.log_action("pretix_orchard.captured", {"local_id": payment.local_id, "orchard_payment": payment_id})
    return True


def cancelled(provider, payment, orchard_payment):
    """An authorization voided at Orchard. The plugin's own voids (refusals) leave pretix's payment
    as it is; one voided elsewhere after pretix confirmed it is money returned, so pretix records an
    external refund of what was not refunded yet."""
    info = payment.info_data
    if payment.state == OrderPayment.PAYMENT_STATE_CONFIRMED and info.get("orchard_payment") == orchard_payment.get("id"):
        record_info(payment, orchard_state="cancelled")
        left = payment.amount - payment.refunded_amount
        if left > 0:
            payment.create_external_refund(amount=left, info=json.dumps({
                "orchard_payment": orchard_payment.get("id"), "orchard_state": "cancelled"}))


def expire(payment, why):
    """The payment request can no longer be paid (expired or cancelled at Orchard): a pretix payment
    not confirmed by then is cancelled, and the order's page offers to pay again."""
    with transaction.atomic():
        locked = OrderPayment.objects.select_for_update(of=OF_SELF).get(pk=payment.pk)
        if locked.state not in OPEN_STATES + (OrderPayment.PAYMENT_STATE_FAILED,):
            return False
        locked.state = OrderPayment.PAYMENT_STATE_CANCELED
        locked.save(update_fields=["state"])
    payment.order.log_action("pretix_orchard.expired", {"local_id": payment.local_id, "why": why})
    return True


def withdraw(provider, payment):
    """Withdraws the payment's Orchard payment request (`POST /v1/payment-requests/{id}/cancel`), which
    Orchard does at most once (a repeat answers it as it is). `(outcome, detail)`: an outcome in
    CANNOT_BE_PAID, or `in_progress` (a payment of it is at the processor: its outcome follows by
    webhook), `paid`, or `unavailable` (no definite answer, or a refusal that is not about the
    request: the request may still be payable). Logs what it did on the order."""
    request_id = payment.info_data.get("payment_request")
    client = provider.client(timeout=10)
    try:
        answer = client.cancel_payment_request(request_id)
        status = answer.get("status")
    except OrchardError as error:
        if payment_in_progress(error):
            outcome, status = "in_progress", "processing"
        elif error.status == 404 and not isinstance(error, OrchardUnavailable):
            outcome, status = "gone", None
        elif error.status == 409 and not isinstance(error, OrchardUnavailable):
            # order_not_open: paid or expired; Orchard's request says which.
            try:
                status = client.payment_request(request_id).get("status")
            except OrchardError as again:
                status = None
                error = again
            outcome = {"expired": "expired", "cancelled": "cancelled", "paid": "paid",
                       "processing": "in_progress"}.get(status, "unavailable")
        else:
            outcome, status = "unavailable", None
        detail = f"{error.status} {error.code}: {error.message}"
    else:
        outcome = "cancelled" if status == "cancelled" else "unavailable"
        detail = None if outcome == "cancelled" else f"Orchard answered the request as {status}"
    withdrawn = outcome in ("cancelled", "expired")
    payment.order.log_action("pretix_orchard.withdrawn" if withdrawn else "pretix_orchard.withdraw_refused", {
        "local_id": payment.local_id, "request": request_id, "outcome": outcome, "status": status, "error": detail})
    return outcome, detail


def withdraw_unwanted(order, why):
    """The order no longer needs these payments (cancelled, expired, paid otherwise): each Orchard
    payment of it whose request may still be paid (an open one pretix did not cancel, or a failed one,
    whose request stays payable with another card) is withdrawn at Orchard and cancelled in pretix.
    One at the processor is left to its webhook."""
    payments = order.payments.filter(provider="orchard", state__in=OPEN_STATES + (OrderPayment.PAYMENT_STATE_FAILED,))
    for payment in payments:
        provider = payment.payment_provider
        if provider is None or not payment.info_data.get("payment_request"):
            continue
        outcome, _ = withdraw(provider, payment)
        if outcome in CANNOT_BE_PAID:
            expire(payment, why)


def apply_refund(provider, payment, orchard_refund, settling=(OrderRefund.REFUND_STATE_TRANSIT,)):
    """A refund Orchard reports: pretix's own (found by its Idempotency-Key) is settled; one made at
    Orchard directly becomes an external refund, once. A webhook settles only refunds in transit: one
    still `created` is being executed by `execute_refund`, whose answer from Orchard settles it (the
    webhook can arrive before that answer); the reconciliation settles those too (`settling`)."""
    key = orchard_refund.get("idempotencyKey")
    state = orchard_refund.get("state")
    for refund in payment.refunds.all():
        info = refund.info_data
        if info.get("idempotency_key") == key or (info.get("orchard_refund") and info.get("orchard_refund") == orchard_refund.get("id")):
            if refund.state not in settling:
                return
            record_refund(refund, orchard_refund=orchard_refund.get("id"), orchard_state=state)
            if state == "refunded":
                refund.done()
            elif state == "refused":
                refund.state = OrderRefund.REFUND_STATE_FAILED
                refund.save(update_fields=["state"])
                payment.order.log_action("pretix.event.order.refund.failed", {
                    "local_id": refund.local_id, "provider": refund.provider, "error": "refused by the processor"})
            return
    if state == "refunded":
        payment.create_external_refund(
            amount=_money(orchard_refund.get("amount"), payment.order.event.currency),
            info=json.dumps({"orchard_refund": orchard_refund.get("id"), "orchard_state": state,
                             "idempotency_key": key}))


def handle_event(provider, payment, event):
    """A verified webhook event about `payment`'s payment request."""
    data = event.get("data") or {}
    kind = event.get("type")
    request = data.get("paymentRequest") or {}
    orchard_payment = data.get("payment") or {}
    request_id = request.get("id") or orchard_payment.get("paymentRequestId")
    if kind in ("payment_request.expired", "payment_request.cancelled"):
        # Nothing can pay the request any more: a pretix payment still open is cancelled (one pretix
        # cancelled itself, through withdraw, is already); a confirmed one stays confirmed.
        if request_id == payment.info_data.get("payment_request"):
            expire(payment, "expired" if kind == "payment_request.expired" else "cancelled")
        return
    if kind in ("payment.refunded", "payment.refund_refused"):
        # Every refund that ends reports once: pretix's own in transit is settled (done, or failed),
        # and one made at Orchard directly that was refunded becomes an external refund.
        if orchard_payment.get("id") and orchard_payment.get("id") == payment.info_data.get("orchard_payment"):
            apply_refund(provider, payment, data.get("refund") or {})
            record_info(payment, orchard_state=orchard_payment.get("state"))
        return
    if kind == "payment.capture_failed":
        # Orchard gave up capturing automatically (its processor refused it 5 times): still
        # authorized. Logged for the organizer, who captures it from the payment's details (or
        # refunds it, which releases it); nothing is retried from here.
        if orchard_payment.get("id") and orchard_payment.get("id") == payment.info_data.get("orchard_payment"):
            record_info(payment, orchard_state=orchard_payment.get("state"))
            payment.order.log_action("pretix_orchard.capture_failed", {
                "local_id": payment.local_id, "orchard_payment": orchard_payment.get("id"),
                "error": "Orchard's automatic capture was refused by the processor; capture the payment again"})
        return
    if kind in ("payment.authorized", "payment.settled", "payment.refused", "payment.unknown", "payment.cancelled"):
        apply_payment(provider, payment, orchard_payment, request_id)


def reconcile_request(provider, row):
    """Asks Orchard where a payment request stands and applies it, as its webhooks would have."""
    payment = row.payment
    answer = provider.client(timeout=10).payment_request(row.payment_request_id)
    payments = answer.get("payments") or []
    for orchard_payment in payments:
        orchard_payment.setdefault("paymentRequestId", row.payment_request_id)
    paid = [p for p in payments if p.get("state") in ("authorized", "settled")]
    waiting = [p for p in payments if p.get("state") in ("pending", "unknown")]
    with transaction.atomic():
        if paid:
            apply_payment(provider, payment, paid[-1], row.payment_request_id)
        elif waiting:
            apply_payment(provider, payment, waiting[-1], row.payment_request_id)
        elif answer.get("status") in ("expired", "cancelled"):
            expire(payment, answer["status"])
        elif payments and payments[-1].get("state") in ("refused", "failed"):
            apply_payment(provider, payment, payments[-1], row.payment_request_id)
    payment.refresh_from_db()
    if answer.get("status") == "requires_payment" and unwanted(payment):
        # pretix no longer wants it paid, and a withdrawal did not go through when it stopped wanting
        # it (Orchard did not answer then), or pretix never asked (a failed payment's request).
        outcome, _ = withdraw(provider, payment)
        if outcome in CANNOT_BE_PAID:
            expire(payment, "withdrawn")
    elif answer.get("status") == "requires_payment":
        extend(provider, payment, row.payment_request_id, answer.get("expiresAt"))


def extend(provider, payment, request_id, expires_at):
    """The organizer gave the order a later payment term than the request had (pretix's "extend"):
    the request stays payable as long (at most Orchard's 30 days from now), so the shopper's page
    keeps working instead of offering a new request once the first expires."""
    from .payment import LONGEST_REQUEST, SHORTEST_REQUEST
    try:
        current = parse_datetime(expires_at) if isinstance(expires_at, str) else None
    except ValueError:  # a date-shaped value that is no date: nothing is extended
        current = None
    order = payment.order
    order.refresh_from_db(fields=["expires"])
    moment = now()
    wanted = min(order.expires, moment + timedelta(seconds=LONGEST_REQUEST))
    if current is None or wanted <= current + timedelta(minutes=1):
        return
    seconds = max(SHORTEST_REQUEST, int((wanted - moment).total_seconds()))
    try:
        extended = provider.client(timeout=10).extend_payment_request(request_id, seconds)
    except OrchardError as error:
        logger.warning("Orchard did not extend %s: %s", request_id, error)
        return
    record_info(payment, expires_at=extended.get("expiresAt"))
    payment.order.log_action("pretix_orchard.extended", {
        "local_id": payment.local_id, "payment_request": request_id, "expires": extended.get("expiresAt")})


def unwanted(payment):
    """Whether pretix no longer wants this open (or failed) payment paid: its order is paid, cancelled or
    expired, or a later payment replaced this failed one (pretix cancels only created and pending
    payments when the shopper switches methods)."""
    if payment.state not in OPEN_STATES + (OrderPayment.PAYMENT_STATE_FAILED,):
        return False
    order = payment.order
    order.refresh_from_db(fields=["status"])
    if order.status in (Order.STATUS_PAID, Order.STATUS_CANCELED, Order.STATUS_EXPIRED):
        return True
    return payment.state == OrderPayment.PAYMENT_STATE_FAILED and order.payments.filter(pk__gt=payment.pk).exists()


def reconcile_refund(provider, refund):
    payment = refund.payment
    payment_id = payment.info_data.get("orchard_payment")
    key = refund.info_data.get("idempotency_key")
    if not payment_id or not key:
        return
    known = [r for r in provider.client(timeout=10).refunds(payment_id) if r.get("idempotencyKey") == key]
    both = (OrderRefund.REFUND_STATE_CREATED, OrderRefund.REFUND_STATE_TRANSIT)
    if known and known[-1].get("state") in ("refunded", "refused"):
        with transaction.atomic():
            apply_refund(provider, payment, known[-1], settling=both)
        return
    # Unknown at Orchard (the first call never arrived) or still unknown there: the same request with
    # the same key asks the processor again and never refunds twice.
    from .payment import to_minor
    status, answer = provider.client(timeout=20).refund(payment_id, to_minor(refund.amount, refund.order.event.currency), key)
    with transaction.atomic():
        apply_refund(provider, payment, answer, settling=both)


def reconcile(older_than=timedelta(minutes=10), every=timedelta(minutes=5), limit=200):
    """The periodic task: every pretix payment through Orchard still open `older_than` after it
    began (asked again at most once per `every`), every refund without a definite answer, and every
    capture that did not go through."""
    moment = now()
    rows = (OrchardPaymentRequest.objects
            .filter(payment__provider="orchard", payment__state__in=OPEN_STATES + (OrderPayment.PAYMENT_STATE_FAILED,),
                    # A request is payable for up to 30 days (longer once extended): asked about while it may be.
                    created__lte=moment - older_than, created__gte=moment - timedelta(days=61))
            .filter(Q(last_checked__isnull=True) | Q(last_checked__lte=moment - every))
            .select_related("payment", "payment__order", "payment__order__event")
            .order_by("last_checked", "created")[:limit])
    checked = 0
    for row in rows:
        provider = row.payment.payment_provider
        if provider is None:
            continue
        try:
            reconcile_request(provider, row)
        except OrchardError as error:
            logger.warning("Reconciliation could not ask Orchard about %s: %s", row.payment_request_id, error)
        OrchardPaymentRequest.objects.filter(pk=row.pk).update(last_checked=moment)
        checked += 1
    refunds = (OrderRefund.objects
               .filter(provider="orchard", state__in=(OrderRefund.REFUND_STATE_TRANSIT, OrderRefund.REFUND_STATE_CREATED),
                       created__gte=moment - timedelta(days=30), created__lte=moment - older_than)
               .select_related("payment", "order", "order__event")[:limit])
    for refund in refunds:
        provider = refund.payment.payment_provider if refund.payment else None
        if provider is None:
            continue
        try:
            reconcile_refund(provider, refund)
        except OrchardError as error:
            logger.warning("Reconciliation could not ask Orchard about refund %s: %s", refund.full_id, error)
    # Message IDs are kept well past Orchard's longest retry window (webhooks.retryHours, at most 720 h);
    # a message older than the signature's 5 minutes is refused by its timestamp anyway.
    OrchardWebhookMessage.objects.filter(received__lt=moment - timedelta(days=31)).delete()
    for row in (OrchardPaymentRequest.objects.filter(capture_due=True, payment__state=OrderPayment.PAYMENT_STATE_CONFIRMED)
                .select_related("payment", "payment__order", "payment__order__event")[:limit]):
        provider = row.payment.payment_provider
        if provider is not None:
            capture(provider, row.payment)
    return checked
