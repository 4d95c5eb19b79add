"""One valid request per operation for test_type_swap.py, built on the objects live_server.FuzzedServer seeds
(a paid order, an open order, a payment request, a partner with an API key, a webhook event), or, for
`orchard-sandbox demo`, on objects made through its API. Operations that use up their object (authorizing
an order or a payment request) can renew it: a new order or request and a token minted for it.

Every value here stays on loopback: webhook URLs point at 127.0.0.1, the doctor never fetches domains."""

import json
import secrets
from dataclasses import dataclass, field

from live_server import MERCHANT, ROOT

# A real ECv2 token (Tink's, Tests/GooglePayTests/Fixtures): the fuzzed merchants take no Google Pay, so the
# seed is refused after its body decoded, and each mutant exercises the decoder and the checks before it.
GOOGLE_PAY_TOKEN = json.dumps(json.loads(
    (ROOT / "Tests" / "GooglePayTests" / "Fixtures" / "tink-ecv2-tokens.json").read_text())["tokens"]["valid"])


def google_pay_data():
    """`loadPaymentData`'s answer around the token."""
    return {"apiVersion": 2, "apiVersionMinor": 0, "paymentMethodData": {
        "type": "CARD", "description": "Visa 1111", "info": {"cardNetwork": "VISA", "cardDetails": "1111"},
        "tokenizationData": {"type": "PAYMENT_GATEWAY", "token": GOOGLE_PAY_TOKEN}}}

# A mandate needs a merchant token, which only the demo mints: on `serve`, mandate routes get an unknown ID.
NO_SUCH_MANDATE = "mdt_type_swap_none"
TOKEN_EVENT_ID = "5f0c1c6e-3a52-4d5e-9a8e-0d1c2b3a4f50"
# Wallet's web service, where `orchard serve` routes it for registered merchants (a platform integrator is configured).
WALLET = "/wallet-orders/v1"
WALLET_ORDER = {"device": "type-swap-device", "type": "order.dev.orchard.fuzz", "order": "0123456789abcdef0123456789abcdef"}
# Operations that change or end their object: they run last, so the others still find it as seeded.
LAST = ["capturePayment", "refundPayment", "settlePayment", "cancelPayment", "cancelAdminPayment", "endMandate",
        "endAdminMandate", "revokeAPIKey", "unregisterMerchant"]


@dataclass
class Seed:
    """An operation's valid request: path parameters (decoded), query, JSON body (None: no body), and how to
    make a fresh one when a mutant used it up. `avoid` lists query values never sent (they leave loopback)."""
    method: str
    template: str
    path_values: dict = field(default_factory=dict)
    query: dict = field(default_factory=dict)
    body: object = None
    renew: object = None
    avoid: tuple = ()


def example(document, template, method):
    """The request body example the document gives for an operation (the first of several)."""
    content = document["paths"][template][method.lower()]["requestBody"]["content"]["application/json"]
    if "example" in content:
        return json.loads(json.dumps(content["example"]))
    return json.loads(json.dumps(next(iter(content["examples"].values()))["value"]))


def checkout_seeds(call, objects, mint):
    """The shopper's routes: `call(method, path, body, api=False)` answers decoded JSON, `mint(amount,
    applicationData)` a token object for that total and request; `objects` holds the open order and the
    payment request."""
    order = objects["order"]

    def paid_order():
        created = call("POST", "/api/orders", {"items": [{"productId": "apple-box", "quantity": 1}]})
        request = created["paymentRequest"]
        token = mint(int(request["total"]["amount"].replace(".", "")), request["applicationData"])
        return {}, {"orderId": created["orderId"],
                    "payment": {"token": token, "billingContact": {"givenName": "Ada", "familyName": "Lovelace"}}}

    seeds = {
        "getCheckout": Seed("GET", "/api/checkout"),
        "createMerchantSession": Seed("POST", "/api/apple-pay/session", body={
            "validationURL": "https://apple-pay-gateway-cert.apple.com/paymentservices/startSession"}),
        "createOrder": Seed("POST", "/api/orders", body={"items": [{"productId": "apple-box", "quantity": 2}]}),
        "changeShippingContact": Seed("POST", "/api/orders/{id}/shipping-contact", {"id": order}, body={
            "countryCode": "FR", "postalCode": "75001", "locality": "Paris", "administrativeArea": "IDF"}),
        "changeShippingMethod": Seed("POST", "/api/orders/{id}/shipping-method", {"id": order},
                                     body={"identifier": "express"}),
        "changeCoupon": Seed("POST", "/api/orders/{id}/coupon", {"id": order}, body={"couponCode": "HARVEST10"}),
        "changePaymentMethod": Seed("POST", "/api/orders/{id}/payment-method", {"id": order}, body={"type": "debit"}),
        "authorizePayment": Seed("POST", "/api/apple-pay/authorize", renew=paid_order),
        "authorizeGooglePay": Seed("POST", "/api/google-pay/authorize", body={
            "orderId": order, "priceVersion": 1, "paymentData": google_pay_data()}),
        "openPaymentRequest": Seed("POST", "/api/payment-requests/open",
                                   body={"clientSecret": objects["paymentRequest"]["clientSecret"]}),
    }
    seeds["authorizePayment"].path_values, seeds["authorizePayment"].body = paid_order()
    return seeds


def serve_seeds(server, document):
    """Every operation of the document, on a seeded FuzzedServer."""
    objects, payment, partner = server.objects, server.objects["payment"], server.objects["partner"]

    def call(method, path, body=None, api=False):
        return server.call(method, path, body, api=api)

    def in_app_request():
        created = call("POST", "/v1/payment-requests", {"amount": 1990, "currency": "EUR",
                                                         "reference": "type-swap-" + secrets.token_hex(4)}, api=True)
        token = json.loads(server.mint(1990, created["paymentRequest"]["applicationData"]))
        return {"id": created["id"]}, {"token": token}

    def open_request():
        created = call("POST", "/v1/payment-requests", {"amount": 990, "currency": "EUR",
                                                         "reference": "type-swap-" + secrets.token_hex(4)}, api=True)
        return {"id": created["id"]}, None

    def doc(template, method):
        return example(document, template, method)

    seeds = checkout_seeds(call, objects, lambda amount, data: json.loads(server.mint(amount, data)))
    webhook = {"url": "http://127.0.0.1:9/webhooks", "secret": "0123456789abcdef0123456789abcdef"}
    seeds.update({
        "getDomainAssociation": Seed("GET", "/.well-known/apple-developer-merchantid-domain-association"),
        "getHealth": Seed("GET", "/health"),
        "getOpenAPIDocument": Seed("GET", "/openapi.json"),
        "notifyMerchantTokenEvent": Seed(
            "GET", "/apple-pay/token-events/{merchant}/notification/merchantToken/{eventId}",
            {"merchant": MERCHANT, "eventId": TOKEN_EVENT_ID}),
        "createPaymentRequest": Seed("POST", "/v1/payment-requests", body=doc("/v1/payment-requests", "POST")),
        "getPaymentRequest": Seed("GET", "/v1/payment-requests/{id}", {"id": objects["paymentRequest"]["id"]}),
        "authorizePaymentRequestInApp": Seed("POST", "/v1/payment-requests/{id}/authorize", renew=in_app_request),
        "cancelPaymentRequest": Seed("POST", "/v1/payment-requests/{id}/cancel", renew=open_request),
        # Extending uses nothing up: the same open request takes every mutant.
        "extendPaymentRequest": Seed("POST", "/v1/payment-requests/{id}/extend", open_request()[0],
                                     body={"expiresInSeconds": 3600}),
        "getAPIMerchant": Seed("GET", "/v1/merchant"),
        "listEvents": Seed("GET", "/v1/events", query={"limit": "10"}),
        "getPayment": Seed("GET", "/v1/payments/{id}", {"id": payment}),
        # Part of the payment: the refund below (of 1) still fits what was captured.
        "capturePayment": Seed("POST", "/v1/payments/{id}/capture", {"id": payment}, body={"amount": 1}),
        "cancelPayment": Seed("POST", "/v1/payments/{id}/cancel", {"id": payment}),
        "listRefunds": Seed("GET", "/v1/payments/{id}/refunds", {"id": payment}),
        "refundPayment": Seed("POST", "/v1/payments/{id}/refunds", {"id": payment}, body={"amount": 1}),
        "getWalletOrder": Seed("GET", "/v1/payments/{id}/wallet-order", {"id": payment}),
        "addFulfillment": Seed("POST", "/v1/payments/{id}/fulfillments", {"id": payment},
                               body=doc("/v1/payments/{id}/fulfillments", "POST")),
        # Wallet's calls: the served merchant has no Wallet orders, so each finds no order (401, 204).
        "walletRegisterDevice": Seed("POST", WALLET + "/devices/{device}/registrations/{type}/{order}", WALLET_ORDER,
                                     body={"pushToken": "ab" * 32}),
        "walletUnregisterDevice": Seed("DELETE", WALLET + "/devices/{device}/registrations/{type}/{order}", WALLET_ORDER),
        "walletChangedOrders": Seed("GET", WALLET + "/devices/{device}/registrations/{type}",
                                    {"device": "type-swap-device", "type": "order.dev.orchard.fuzz"},
                                    query={"ordersModifiedSince": "1800000000"}),
        "walletGetOrder": Seed("GET", WALLET + "/orders/{type}/{order}",
                               {"type": "order.dev.orchard.fuzz", "order": "0123456789abcdef0123456789abcdef"}),
        "walletLog": Seed("POST", WALLET + "/log", body={"logs": ["a line from a type-swapped Wallet"]}),
        # The device's call, without its Authorization: 401 (no token was announced to find anyway).
        "getMerchantTokenUsageInformation": Seed(
            "GET", "/apple-pay/merchant-token-usage/v1/merchantToken/{merchantTokenIdentifier}/usageInformation",
            {"merchantTokenIdentifier": "DNITHEFUZZ0001"}),
        "listMandates": Seed("GET", "/v1/mandates", query={"state": "active"}),
        "getMandate": Seed("GET", "/v1/mandates/{id}", {"id": NO_SUCH_MANDATE}),
        "endMandate": Seed("DELETE", "/v1/mandates/{id}", {"id": NO_SUCH_MANDATE}),
        "chargeMandate": Seed("POST", "/v1/mandates/{id}/charges", {"id": NO_SUCH_MANDATE},
                              body={**doc("/v1/mandates/{id}/charges", "POST"), "metadata": {"invoice": "2027-02"},
                                    "allowAmountAbove": {"reason": "a larger order"}}),
        "getAdminHealth": Seed("GET", "/admin/health"),
        # The fuzzed server's merchant has no merchantTokenUsage: 404, nothing rotated.
        "rotateUsageKey": Seed("POST", "/admin/usage-keys/{merchant}/rotate", {"merchant": MERCHANT}),
        # `true` would have the doctor fetch each domain's association file: off loopback.
        "getDoctorReport": Seed("GET", "/admin/doctor", query={"live": "false", "domains": "false"}, avoid=("true",)),
        "listMerchants": Seed("GET", "/admin/merchants"),
        "registerMerchant": Seed("POST", "/admin/merchants", body={
            "partnerInternalMerchantIdentifier": "type-swap-shop", "partnerMerchantName": "Type Swap Shop",
            "domainNames": ["type-swap-shop.example"], "merchantUrl": "https://type-swap-shop.example"}),
        "getMerchant": Seed("GET", "/admin/merchants/{id}", {"id": partner}),
        "unregisterMerchant": Seed("POST", "/admin/merchants/{id}/unregister", {"id": partner},
                                   body={"domainNames": ["fuzz-partner.example"], "reason": "type swap"}),
        "getMerchantSettings": Seed("GET", "/admin/merchants/{id}/settings", {"id": partner}),
        # A partner's webhook must be on a public address, which the fuzzer must never reach: the body with the
        # loopback one is refused (400) after it is decoded, and the mutant that drops it is the valid request.
        "setMerchantSettings": Seed("PUT", "/admin/merchants/{id}/settings", {"id": partner},
                                    body={"processor": {"type": "record"}, "webhook": webhook}),
        "createAPIKey": Seed("POST", "/admin/merchants/{id}/api-keys", {"id": partner}),
        "listAPIKeys": Seed("GET", "/admin/merchants/{id}/api-keys", {"id": partner}),
        "revokeAPIKey": Seed("DELETE", "/admin/api-keys/{key}", {"key": objects["partnerKey"]}),
        "listGuardRecords": Seed("GET", "/admin/guard", query={"merchant": MERCHANT, "state": "ok"}),
        "listWebhookEvents": Seed("GET", "/admin/webhooks", query={"merchant": MERCHANT, "state": "pending", "limit": "10"}),
        "sendTestWebhook": Seed("POST", "/admin/webhooks/test", body={"merchantIdentifier": partner,
                                                                       "type": "payment.authorized"}),
        "replayWebhookEvent": Seed("POST", "/admin/webhooks/{event}/replay",
                                   {"event": (objects["events"] or ["evt_none"])[0]}),
        "listPayments": Seed("GET", "/admin/payments", query={"state": "authorized", "order": objects["order"], "limit": "10"}),
        "getAdminPayment": Seed("GET", "/admin/payments/{id}", {"id": payment}),
        "settlePayment": Seed("POST", "/admin/payments/{id}/settle", {"id": payment}),
        "cancelAdminPayment": Seed("POST", "/admin/payments/{id}/cancel", {"id": payment}),
        "resolvePayment": Seed("POST", "/admin/payments/{id}/resolve", {"id": payment}, body={"state": "authorized"}),
        "listAdminMandates": Seed("GET", "/admin/mandates", query={"merchant": MERCHANT, "state": "active", "limit": "10"}),
        "getAdminMandate": Seed("GET", "/admin/mandates/{id}", {"id": NO_SUCH_MANDATE}),
        "endAdminMandate": Seed("POST", "/admin/mandates/{id}/end", {"id": NO_SUCH_MANDATE}),
    })
    seeds["authorizePaymentRequestInApp"].path_values, seeds["authorizePaymentRequestInApp"].body = in_app_request()
    seeds["cancelPaymentRequest"].path_values, seeds["cancelPaymentRequest"].body = open_request()
    return ordered(seeds)


def ordered(seeds):
    """The seeds with those in LAST moved to the end, in LAST's order."""
    first = {name: seed for name, seed in seeds.items() if name not in LAST}
    return {**first, **{name: seeds[name] for name in LAST if name in seeds}}


def demo_seeds(demo):
    """The checkout routes on `orchard-sandbox demo`, and its own `POST /demo/token` (outside the document),
    whose tokens pay the orders authorized here."""

    def mint(amount, application_data):
        return demo.call("POST", "/demo/token", {"amount": f"{amount // 100}.{amount % 100:02d}", "currencyCode": "EUR",
                                                 "applicationData": application_data})

    order = demo.call("POST", "/api/orders", {"items": [{"productId": "pear-box", "quantity": 2}]})
    request = demo.call("POST", "/v1/payment-requests", {"amount": 1234, "currency": "EUR", "reference": "type-swap"},
                        api=True)
    seeds = checkout_seeds(demo.call, {"order": order["orderId"], "paymentRequest": request}, mint)
    def google_paid_order():
        created = demo.call("POST", "/api/orders", {"items": [{"productId": "pear-box", "quantity": 1}]})
        data = demo.call("POST", "/demo/google-pay-token", {"amount": created["paymentRequest"]["total"]["amount"],
                                                            "currencyCode": "EUR"})
        return {}, {"orderId": created["orderId"], "priceVersion": created["priceVersion"], "paymentData": data}

    seeds["authorizeGooglePay"] = Seed("POST", "/api/google-pay/authorize", renew=google_paid_order)
    seeds["authorizeGooglePay"].path_values, seeds["authorizeGooglePay"].body = google_paid_order()
    seeds["demoGooglePayToken"] = Seed("POST", "/demo/google-pay-token", body={
        "amount": "12.34", "currencyCode": "EUR", "cardNetwork": "VISA", "authMethod": "CRYPTOGRAM_3DS"})
    seeds["demoToken"] = Seed("POST", "/demo/token", body={
        "amount": "12.34", "currencyCode": "EUR", "applicationData": order["paymentRequest"]["applicationData"],
        "paymentMethod": {"displayName": "Visa 1111", "network": "Visa", "type": "debit"}, "merchantToken": False})
    return seeds
