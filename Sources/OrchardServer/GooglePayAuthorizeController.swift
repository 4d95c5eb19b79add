import Foundation
import GooglePay
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /api/google-pay/authorize`: the checkout page's Google Pay payment. Google's token
/// carries nothing of the order, so the page sends the order's ID and the price version its
/// sheet showed; the engine charges the server's total for that version, claims the token once
/// and sends it to the processor unchanged.
struct GooglePayAuthorizeController {
    let engine: PaymentsEngine
    let walletOrders: WalletOrderService?
    let limiter: RateLimiter

    /// `{orderId, priceVersion, paymentData}`, `paymentData` as `loadPaymentData` gave it.
    struct Body: Decodable {
        var orderId: String
        var priceVersion: Int
        var paymentData: PaymentData

        struct PaymentData: Decodable {
            var paymentMethodData: GooglePayPaymentMethod.Wire
        }
    }

    /// The answer, with the shape of the Apple Pay route's.
    struct Answer: ResponseEncodable {
        var status: String
        var orderId: String
        var paymentId: String
        var orderDetails: WalletOrderDetails?
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.postJSON("/api/google-pay/authorize") { request, context in
            let (merchant, _) = try context.requireMerchant()
            // Before the body is read: each attempt verifies a token and may call the processor.
            try limiter.check(.authorizations, context: context, merchant: merchant.merchantIdentifier)
            let bytes = try await readBody(request, limit: AuthorizeController.maximumBodyBytes)
            let body: Body
            do {
                body = try JSONDecoder().decode(Body.self, from: Data(bytes))
            } catch {
                throw OrchardError(
                    .invalidJSON, "the body must be {\"orderId\": \"…\", \"priceVersion\": n, \"paymentData\": what loadPaymentData gave}")
            }
            let method = try Self.paymentMethod(body.paymentData.paymentMethodData)
            let payment = try await engine.authorize(
                .init(
                    merchantIdentifier: merchant.merchantIdentifier, orderId: body.orderId,
                    wallet: .googlePay(method, priceVersion: body.priceVersion)))
            let details = await walletOrders?.issue(for: payment, merchantIdentifier: merchant.merchantIdentifier)
            return Answer(status: "success", orderId: body.orderId, paymentId: payment.id, orderDetails: details)
        }
        return router
    }

    /// The payment method, or the request's refusal naming what is wrong with it.
    static func paymentMethod(_ wire: GooglePayPaymentMethod.Wire) throws -> GooglePayPaymentMethod {
        do throws(GooglePayError) {
            return try GooglePayPaymentMethod.parse(wire)
        } catch {
            throw OrchardError(.invalidJSON, error.message)
        }
    }
}
