"""The money paths beside test_client.py's shop flow, through the same generated client against live
`orchard-sandbox demo`s (one per test, each with the mock processor it needs), so that the release build runs them
too (scripts/test sets ORCHARD_BUILD=release): a release-only miscompile once crashed the first authorization.

- A processor-held key through mock Worldpay: orchard.json lists the processor's certificate alone, Orchard refuses
  a token for another key before any call and forwards the right one encrypted; the mock decrypts it (once, to the
  request's amount) and takes exactly one charge under the payment's reference, which is then captured.
- An RSA_v1 token through mock Worldpay: Orchard decrypts it itself (a token for another amount is refused as a
  mismatch, which only the decrypted amount can show), then Worldpay is sent it: one charge. (Worldline decrypts
  EC_v1 only, so the demo's Worldline merchant, which leaves decryption to Worldline, refuses RSA_v1.)
- A Worldline payment (the token forwarded encrypted, as the demo's Worldline merchant is set up) captured and
  refunded in part: one charge, settled, and one refund of that amount.
- A lost answer: the mock Worldline takes the first authorization and drops the connection (the demo's
  --processor-fault-once drop), the API answers payment_unknown, and the background reconciler re-sends under the
  same reference until the payment is authorized: two requests, one reference, exactly one charge.

Each checks the outcome through the API (the payment's state, the admin record's reference and sends) and the mock
processor's own account of what it took (its `GET /_mock/charges` test route)."""

import unittest
import uuid

from harness import ClientTestCase, generated_client, wait_until


def setUpModule():
    generated_client()


class ProcessorPathTests(ClientTestCase):
    def pay_request(self, amount, reference):
        """A payment request in EUR made through the API: the shop's first step on each path."""
        create = self.models.PaymentRequestCreate(amount=amount, currency="EUR", country_code="FR", reference=reference)
        return self.call(self.payments.create_payment_request_with_http_info, str(uuid.uuid4()), create, status=201,
                         model=self.models.PaymentRequest)

    def authorize(self, request, token):
        """The app's token through the in-app route; the payment it made, authorized."""
        detail = self.call(self.payments.authorize_payment_request_in_app_with_http_info, request.id,
                           self.models.InAppAuthorization.from_dict({"token": token}), model=self.models.PaymentDetail)
        self.assertEqual((detail.payment.state, detail.payment.amount, detail.payment.payment_request_id),
                         (self.models.PaymentState.AUTHORIZED, request.amount, request.id))
        return detail.payment

    def refuse(self, request, token, status, code):
        """The in-app route refuses `token` with `status` and `code` before any processor call."""
        self.refused(self.payments.authorize_payment_request_in_app, request.id,
                     self.models.InAppAuthorization.from_dict({"token": token}), status=status, code=code)
        self.assertEqual(self.demo.mock_processor()["authorizations"], [])

    def record(self, payment):
        """The back office's record of `payment`: its reference, sends and reconcile attempts."""
        return self.call(self.admin.get_admin_payment_with_http_info, payment.id, model=self.models.AdminPayment).payment

    def test_a_processor_held_key_through_mock_worldpay(self):
        self.start("worldpay", "--processor-holds-key")
        models = self.models
        merchant = self.demo.configuration()["merchants"][0]
        self.assertEqual(merchant["processingKeys"], [{"certificate": "test-processor-held.pem"}],
                         "Orchard has no key to decrypt with")
        request = self.pay_request(2150, "held-1")
        # A token for the merchant's own key (which Orchard is not given here) is refused before Worldpay is called.
        self.refuse(request, self.demo.mint_token(2150, request.payment_request.application_data),
                    400, models.ErrorCode.INVALID_TOKEN)

        payment = self.authorize(request, self.demo.sheet_token(2150, "EUR", request.payment_request.application_data))
        self.assertEqual(payment.processor, "worldpay")
        reference = self.record(payment).reference
        mock = self.demo.mock_processor()
        self.assertEqual(mock["authorizations"], [{"processor": "worldpay", "reference": reference}])
        self.assertEqual([(c["reference"], c["amount"], c["currency"], c["state"], c["mode"]) for c in mock["charges"]],
                         [(reference, 2150, "EUR", "authorized", "walletToken")], "forwarded encrypted, charged once")
        self.assertEqual(mock["decrypted"], [{"amount": 2150, "currency": "978"}], "the processor decrypted it")

        captured = self.call(self.payments.capture_payment_with_http_info, payment.id, model=models.PaymentDetail)
        self.assertEqual(captured.payment.state, models.PaymentState.SETTLED)
        self.assertEqual([c["state"] for c in self.demo.mock_processor()["charges"]], ["settled"])
        self.assertEqual(self.call(self.payments.get_payment_request_with_http_info, request.id).status, "paid")

    def test_an_rsa_v1_token_through_mock_worldpay(self):
        self.start("worldpay")
        models = self.models
        request = self.pay_request(1999, "rsa-1")
        application_data = request.payment_request.application_data
        # Only the decrypted token says it pays 19.98: Orchard refuses it, having decrypted it.
        self.refuse(request, self.demo.mint_token(1998, application_data, "--rsa"), 422,
                    models.ErrorCode.PAYMENT_MISMATCH)

        token = self.demo.mint_token(1999, application_data, "--rsa")
        self.assertEqual(token["paymentData"]["version"], "RSA_v1")
        payment = self.authorize(request, token)
        self.assertEqual((payment.processor, payment.currency, payment.last_four), ("worldpay", "EUR", "1111"))
        reference = self.record(payment).reference
        mock = self.demo.mock_processor()
        self.assertEqual(mock["authorizations"], [{"processor": "worldpay", "reference": reference}])
        self.assertEqual([(c["reference"], c["amount"], c["state"], c["mode"]) for c in mock["charges"]],
                         [(reference, 1999, "authorized", "walletToken")], "charged once")
        self.refused(self.payments.authorize_payment_request_in_app, request.id,
                     models.InAppAuthorization.from_dict({"token": token}), status=409,
                     code=models.ErrorCode.REPLAYED_PAYMENT)

    def test_a_worldline_payment_captured_and_refunded(self):
        self.start("worldline")
        models = self.models
        request = self.pay_request(4200, "worldline-1")
        payment = self.authorize(request, self.demo.mint_token(4200, request.payment_request.application_data))
        self.assertEqual(payment.processor, "worldline")
        captured = self.call(self.payments.capture_payment_with_http_info, payment.id, model=models.PaymentDetail)
        self.assertEqual(captured.payment.state, models.PaymentState.SETTLED)
        refund = self.call(self.payments.refund_payment_with_http_info, payment.id, str(uuid.uuid4()),
                           models.RefundRequest(amount=1000), status=201, model=models.Refund)
        self.assertEqual((refund.state, refund.amount, refund.payment_id), ("refunded", 1000, payment.id))
        self.assertEqual(self.call(self.payments.get_payment_with_http_info, payment.id).payment.amount_refunded, 1000)

        reference = self.record(payment).reference
        mock = self.demo.mock_processor()
        self.assertEqual([(c["processor"], c["reference"], c["amount"], c["state"], c["mode"]) for c in mock["charges"]],
                         [("worldline", reference, 4200, "settled", "encrypted")])
        self.assertEqual([(r["paymentReference"], r["amount"], r["currency"]) for r in mock["refunds"]],
                         [(reference, 1000, "EUR")])

    def test_the_reconciler_resends_a_payment_whose_answer_was_lost(self):
        self.start("worldline", "--processor-fault-once", "drop")
        models = self.models
        request = self.pay_request(990, "lost-1")
        token = self.demo.mint_token(990, request.payment_request.application_data)
        # The mock took the payment, then reset the connection: Orchard cannot know the outcome.
        self.refused(self.payments.authorize_payment_request_in_app, request.id,
                     models.InAppAuthorization.from_dict({"token": token}), status=504,
                     code=models.ErrorCode.PAYMENT_UNKNOWN)
        payments = self.call(self.admin.list_payments_with_http_info, model=models.PaymentRecordList).payments
        self.assertEqual(len(payments), 1)
        first = payments[0]

        resolved = wait_until(
            lambda: (lambda record: record if record.state == models.PaymentState.AUTHORIZED else None)(
                self.call(self.admin.get_admin_payment_with_http_info, first.id).payment),
            "the reconciler to re-send the unknown payment")
        self.assertEqual((resolved.reference, resolved.sends, resolved.reconcile_attempts), (first.reference, 2, 1),
                         "re-sent once by the reconciler, under the same reference")
        mock = self.demo.mock_processor()
        self.assertEqual(mock["authorizations"], [{"processor": "worldline", "reference": first.reference}] * 2)
        self.assertEqual([(c["reference"], c["amount"], c["state"]) for c in mock["charges"]],
                         [(first.reference, 990, "authorized")], "the re-send was answered from the first charge")
        self.assertEqual(self.call(self.payments.get_payment_with_http_info, first.id).payment.state,
                         models.PaymentState.AUTHORIZED)
        self.assertEqual(self.call(self.payments.get_payment_request_with_http_info, request.id).status, "paid")


if __name__ == "__main__":
    unittest.main()
