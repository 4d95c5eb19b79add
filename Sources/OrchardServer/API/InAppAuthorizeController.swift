import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /v1/payment-requests/{id}/authorize`: the shop's backend pays one of its payment
/// requests with the token its iOS app got from PassKit. The merchant is the API key's (an app's
/// call carries no shop `Host`); the binding, replay and state rules are the page's, through the
/// same engine and with the same webhooks; the answer is the payment, as `GET /v1/payments/{id}`.
struct InAppAuthorizeController {
    let requests: PaymentRequestService
    let payments: PaymentsAPIController
    let limiter: RateLimiter

    /// The routes the router adds to the `/v1` group.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.postJSON("payment-requests/{id}/authorize") { request, context in
            let merchant = try context.requireAPIMerchant()
            // Before the body is read: each attempt verifies a token and may call the processor.
            try limiter.check(.authorizations, context: context, merchant: merchant.merchantIdentifier)
            // Only this merchant's payment requests: another's, or an order of the checkout page, is not found.
            let record = try await requests.request(id: try context.parameters.require("id"), merchant: merchant)
            let bytes = try await readBody(request, limit: AuthorizeController.maximumBodyBytes)
            let payment = try await payments.engine.authorize(
                .init(merchantIdentifier: merchant.merchantIdentifier, orderId: record.id, wallet: try Self.wallet(bytes)))
            var detail = try await payments.detail(payment)
            detail.orderDetails = await payments.walletOrders?.issue(for: payment, merchantIdentifier: merchant.merchantIdentifier)
            return detail
        }
        return v1
    }

    /// An Android app's Google Pay payment: `{"googlePay": PaymentData, "priceVersion"?: n}`.
    struct GooglePayBody: Decodable {
        var googlePay: GooglePayAuthorizeController.Body.PaymentData
        var priceVersion: Int?
    }

    /// Only the key tells the two bodies apart: `googlePay` holds Google's payment data, anything
    /// else is read as PassKit's `{"token": …}`.
    private struct Probe: Decodable {
        var googlePay: Present?
        struct Present: Decodable {}
    }

    /// The wallet's token in the body: Google Pay's `PaymentData`, or PassKit's token in any of its encodings.
    static func wallet(_ bytes: [UInt8]) throws -> PaymentsEngine.Attempt.Wallet {
        if (try? JSONDecoder().decode(Probe.self, from: Data(bytes)))?.googlePay != nil {
            guard let body = try? JSONDecoder().decode(GooglePayBody.self, from: Data(bytes)) else {
                throw OrchardError(
                    .invalidJSON, "the body must be {\"googlePay\": PaymentData as the Google Pay API gave it, \"priceVersion\": n}")
            }
            return .googlePay(
                try GooglePayAuthorizeController.paymentMethod(body.googlePay.paymentMethodData), priceVersion: body.priceVersion)
        }
        do throws(ApplePayError) {
            return .applePay(try InAppPayment.token(from: bytes))
        } catch {
            throw OrchardError(error.code == .simulatorToken ? .simulatorToken : .invalidJSON, error.message)
        }
    }
}
