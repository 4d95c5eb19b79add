"""A generated client, tested: openapi-generator-cli (PyPI, its JAR bundled in the wheel, run on the local
Java) generates a Python client from Sources/OrchardServer/OpenAPI/openapi.json into a temporary folder, and a
shop's whole flow runs through that client's typed methods against a live `orchard-sandbox demo` with its mock
Apple gateway and mock Worldpay: a payment request made with an Idempotency-Key (and the same again), paid in app
with a minted token, read, captured and refunded, then a subscription paid with a merchant token, its mandate
listed, charged and ended, and the back office's view of them through the admin API. Every answer must decode
whole into the client's models (nothing dropped, added or changed): an operation the client cannot call, or an
answer it cannot decode whole, is a defect in the document. Loopback only; no network (the wheel bundles
openapi-generator's JAR)."""

import json
import unittest
import uuid

from harness import DOCUMENT, MERCHANT, ClientTestCase, generated_client, undecoded


def setUpModule():
    generated_client()


class DecodingCheckTests(unittest.TestCase):
    def test_the_check_finds_what_a_model_drops_or_changes(self):
        models = generated_client().models
        refund = {"id": "re_1", "paymentId": "pay_1", "amount": 500, "currency": "EUR", "state": "refunded",
                  "reference": "r", "idempotencyKey": "k", "sends": 1, "createdAt": "2026-11-27T08:00:00Z",
                  "updatedAt": "2026-11-27T08:00:01Z"}
        self.assertEqual(undecoded(refund, models.Refund.from_dict(refund)), [])
        self.assertEqual(undecoded({**refund, "surprise": 1}, models.Refund.from_dict({**refund, "surprise": 1})),
                         ["$.surprise: sent 1, dropped by the model"])
        changed = models.Refund.from_dict(refund)
        changed.amount = 499
        self.assertEqual(undecoded(refund, changed), ["$.amount: sent 500, decoded 499"])


class GeneratedClientTests(ClientTestCase):
    def setUp(self):
        self.start("worldpay")

    def test_the_document_is_the_one_the_server_serves(self):
        served = self.operations.get_open_api_document()
        self.assertEqual(served, json.loads(DOCUMENT.read_text()))
        self.assertEqual(self.call(self.operations.get_health_with_http_info, model=self.models.Health).status, "ok")

    def test_a_shops_whole_flow_through_the_generated_client(self):
        models, payments = self.models, self.payments

        # 1. The shop's backend creates a payment request; the same Idempotency-Key and body answer the same one.
        key = str(uuid.uuid4())
        create = models.PaymentRequestCreate(
            amount=1234, currency="EUR", country_code="FR", reference="order-1001",
            line_items=[models.PaymentRequestCreateLineItemsInner(label="Sencha 100 g", amount=1034),
                        models.PaymentRequestCreateLineItemsInner(label="Gift wrap", amount=200)],
            metadata={"customer": "c-42"})
        request = self.call(payments.create_payment_request_with_http_info, key, create, status=201,
                            model=models.PaymentRequest)
        self.assertEqual((request.status, request.amount, request.total, request.currency, request.reference),
                         ("requires_payment", 1234, 1234, "EUR", "order-1001"))
        self.assertEqual((request.merchant_identifier, request.metadata), (MERCHANT, {"customer": "c-42"}))
        self.assertEqual(request.payment_request.total.amount, "12.34")
        again = self.call(payments.create_payment_request_with_http_info, key, create, status=200)
        self.assertEqual(again.id, request.id)
        self.assertEqual(self.call(payments.get_payment_request_with_http_info, request.id).status, "requires_payment")

        # 2. The app's token (minted for this request's applicationData) goes through the in-app route.
        token = self.demo.mint_token(1234, request.payment_request.application_data)
        authorized = self.call(payments.authorize_payment_request_in_app_with_http_info, request.id,
                               models.InAppAuthorization.from_dict({"token": token}), model=models.PaymentDetail)
        payment = authorized.payment
        self.assertEqual((payment.state, payment.amount, payment.currency, payment.processor, payment.payment_request_id),
                         (models.PaymentState.AUTHORIZED, 1234, "EUR", "worldpay", request.id))
        self.assertEqual((payment.last_four, authorized.refunds), ("1111", []))
        self.assertEqual(self.call(payments.get_payment_request_with_http_info, request.id).status, "paid")
        self.refused(payments.authorize_payment_request_in_app, request.id,
                     models.InAppAuthorization.from_dict({"token": token}), status=409, code=models.ErrorCode.REPLAYED_PAYMENT)

        # 3. Read, capture, refund part (the same key again answers the same refund), then the rest.
        read = self.call(payments.get_payment_with_http_info, payment.id, model=models.PaymentDetail)
        self.assertEqual((read.payment.id, read.payment.state), (payment.id, models.PaymentState.AUTHORIZED))
        captured = self.call(payments.capture_payment_with_http_info, payment.id, model=models.PaymentDetail)
        self.assertEqual(captured.payment.state, models.PaymentState.SETTLED)
        refund_key = str(uuid.uuid4())
        refund = self.call(payments.refund_payment_with_http_info, payment.id, refund_key, models.RefundRequest(amount=500),
                           status=201, model=models.Refund)
        self.assertEqual((refund.state, refund.amount, refund.payment_id), ("refunded", 500, payment.id))
        same = self.call(payments.refund_payment_with_http_info, payment.id, refund_key, models.RefundRequest(amount=500),
                         status=201)
        self.assertEqual(same.id, refund.id)
        self.refused(payments.refund_payment, payment.id, str(uuid.uuid4()), models.RefundRequest(amount=10_000),
                     status=422, code=models.ErrorCode.REFUND_TOO_LARGE)
        rest = self.call(payments.refund_payment_with_http_info, payment.id, str(uuid.uuid4()), models.RefundRequest(),
                         status=201)
        self.assertEqual((rest.state, rest.amount), ("refunded", 734))
        refunds = self.call(payments.list_refunds_with_http_info, payment.id, model=models.RefundList)
        self.assertEqual([each.amount for each in refunds.refunds], [500, 734])
        detail = self.call(payments.get_payment_with_http_info, payment.id)
        self.assertEqual((detail.payment.amount_refunded, len(detail.refunds)), (1234, 2))
        self.refused(payments.get_payment, "pay_nothing_here", status=404, code=models.ErrorCode.NOT_FOUND)

        # 4. A subscription: a recurring payment request paid with a merchant token makes a mandate.
        agreement = models.Agreement(
            type="recurring", payment_description="Coffee club", management_url="https://shop.example/account",
            billing_agreement="9.90 EUR a month; cancel any time.",
            regular_billing=models.AgreementBilling(label="Monthly beans", amount=990, interval_unit="month", interval_count=1))
        subscription = self.call(payments.create_payment_request_with_http_info, str(uuid.uuid4()), models.PaymentRequestCreate(
            amount=490, currency="EUR", reference="sub-42", agreement=agreement), status=201)
        self.assertEqual(subscription.payment_request.recurring_payment_request.payment_description, "Coffee club")
        self.assertTrue(subscription.token_notification_path)
        merchant_token = self.demo.sheet_token(490, "EUR", subscription.payment_request.application_data, merchant_token=True)
        first = self.call(payments.authorize_payment_request_in_app_with_http_info, subscription.id,
                          models.InAppAuthorization.from_dict({"token": merchant_token}))
        self.assertEqual(first.payment.state, models.PaymentState.AUTHORIZED)
        self.assertTrue(first.payment.mandate_id)

        # 5. The shop lists its mandates, charges the subscription a month later (once per key), then ends it.
        mandates = self.call(payments.list_mandates_with_http_info, model=models.MandateList)
        self.assertEqual([each.id for each in mandates.mandates], [first.payment.mandate_id])
        mandate = mandates.mandates[0]
        self.assertEqual((mandate.state, mandate.type, mandate.description, mandate.processor, mandate.payment_id),
                         ("active", "recurring", "Coffee club", "worldpay", first.payment.id))
        self.assertTrue(mandate.merchant_token_identifier.startswith("DNITHE"))
        self.assertEqual(self.call(payments.list_mandates_with_http_info, state="ended").mandates, [])
        charge_key = str(uuid.uuid4())
        renewal = models.ChargeRequest(amount=990, reference="sub-42-renewal-1")
        charge = self.call(payments.charge_mandate_with_http_info, mandate.id, charge_key, renewal, status=201,
                           model=models.Charge)
        self.assertEqual((charge.payment.state, charge.payment.mandate_id, charge.mandate.id),
                         (models.PaymentState.AUTHORIZED, mandate.id, mandate.id))
        repeated = self.call(payments.charge_mandate_with_http_info, mandate.id, charge_key, renewal, status=200)
        self.assertEqual(repeated.payment.id, charge.payment.id)
        ended = self.call(payments.end_mandate_with_http_info, mandate.id, model=models.Mandate)
        self.assertEqual((ended.state, ended.ended_reason), ("ended", "shop"))
        self.assertEqual(self.call(payments.get_mandate_with_http_info, mandate.id).state, "ended")
        ended_list = self.call(payments.list_mandates_with_http_info, state="ended")
        self.assertEqual([each.id for each in ended_list.mandates], [mandate.id])

        # 6. The back office sees the same payments through the admin API's models.
        admin = self.admin
        listed = self.call(admin.list_payments_with_http_info, model=models.PaymentRecordList)
        self.assertEqual({record.id for record in listed.payments}, {payment.id, first.payment.id, charge.payment.id})
        record = self.call(admin.get_admin_payment_with_http_info, payment.id, model=models.AdminPayment)
        self.assertEqual((record.payment.state, record.payment.processor), (models.PaymentState.SETTLED, "worldpay"))
        settled = self.call(admin.settle_payment_with_http_info, charge.payment.id, model=models.PaymentRecord)
        self.assertEqual(settled.state, models.PaymentState.SETTLED)
        self.assertEqual(self.call(admin.list_admin_mandates_with_http_info).mandates[0].mandate.id, mandate.id)
        events = self.call(admin.list_webhook_events_with_http_info, model=models.WebhookEventList)
        self.assertIsInstance(events.events, list)

        # 7. A shop back from downtime catches up through the feed: its events oldest first, `next` the cursor.
        page = self.call(payments.list_events_with_http_info, limit=2, model=models.WebhookEventPage)
        self.assertEqual((len(page.events), page.next), (2, page.events[-1].id))
        rest = self.call(payments.list_events_with_http_info, after=page.next, limit=100, model=models.WebhookEventPage)
        fed = page.events + rest.events
        self.assertEqual(len({each.id for each in fed}), len(fed))
        self.assertTrue({"payment.authorized", "payment.settled", "mandate.ended"} <= {each.type for each in fed})
        self.assertEqual(rest.next, fed[-1].id)
        done = self.call(payments.list_events_with_http_info, after=rest.next, model=models.WebhookEventPage)
        self.assertEqual((done.events, done.next), ([], None))
        self.refused(payments.list_events, "evt_" + "0" * 32, status=404, code=models.ErrorCode.NOT_FOUND)

    def test_the_shoppers_page_through_the_generated_client(self):
        """The calls the checkout page makes (on the merchant's Host), each through the client and decoded whole."""
        models = self.models
        shopper = self.client.ShopperApi(self.client.ApiClient(self.client.Configuration(host=self.demo.url)))
        host = {"_headers": {"Host": f"localhost:{self.demo.port}"}}
        checkout = self.call(shopper.get_checkout_with_http_info, model=models.CheckoutSettings, **host)
        self.assertEqual(checkout.merchant_identifier, MERCHANT)
        session = self.call(shopper.create_merchant_session_with_http_info, models.SessionRequest(
            validation_url="https://apple-pay-gateway-cert.apple.com/paymentservices/startSession"), **host)
        self.assertTrue(session)
        order = self.call(shopper.create_order_with_http_info, models.OrderRequest(
            items=[models.CartItem(product_id=checkout.products[0].id, quantity=2)]), status=201, model=models.OrderCreated, **host)
        update = self.call(shopper.change_shipping_contact_with_http_info, order.order_id,
                           models.ShippingContactChange(country_code="FR", postal_code="75001"), model=models.ApplePayUpdate,
                           **host)
        methods = order.payment_request.shipping_methods
        if methods:
            update = self.call(shopper.change_shipping_method_with_http_info, order.order_id,
                               models.ShippingMethodChange(identifier=methods[-1].identifier), **host)
        coupon = self.call(shopper.change_coupon_with_http_info, order.order_id, models.CouponChange(coupon_code="NO-SUCH-CODE"),
                           **host)
        self.assertEqual(coupon.new_total.amount, update.new_total.amount)
        update = self.call(shopper.change_payment_method_with_http_info, order.order_id, models.PaymentMethodChange(type="debit"),
                           **host)
        token = self.demo.mint_token(int(update.new_total.amount.replace(".", "")), order.payment_request.application_data)
        pay = models.AuthorizeRequest.from_dict({"orderId": order.order_id, "payment": {"token": token}})
        paid = self.call(shopper.authorize_payment_with_http_info, pay, model=models.AuthorizeSuccess, **host)
        self.assertEqual((paid.status, paid.order_id), ("success", order.order_id))
        with self.assertRaises(self.client.ApiException) as replayed:
            shopper.authorize_payment(pay, **host)
        self.assertEqual(replayed.exception.status, 409)
        self.assertIsInstance(replayed.exception.data, models.PaymentFailure)
        self.assertEqual(replayed.exception.data.error.code, models.ErrorCode.REPLAYED_PAYMENT)
        self.assertEqual(undecoded(json.loads(replayed.exception.body), replayed.exception.data), [])

        # orchard.js on a shop's page opens the shop's payment request by its client secret.
        request = self.call(self.payments.create_payment_request_with_http_info, str(uuid.uuid4()), models.PaymentRequestCreate(
            amount=990, currency="EUR", reference="order-1002"), status=201)
        opened = self.call(shopper.open_payment_request_with_http_info, models.OpenRequest(client_secret=request.client_secret),
                           model=models.ShopperPaymentRequest, **host)
        self.assertEqual((opened.id, opened.amount, opened.payments), (request.id, 990, []))


if __name__ == "__main__":
    unittest.main()
