import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /api/apple-pay/authorize`: the payments engine authorizes the order with the token; the
/// answer has the shape `completePayment` takes.
struct AuthorizeController {
    let engine: PaymentsEngine
    let walletOrders: WalletOrderService?
    let limiter: RateLimiter

    /// A token with full contacts is under 10 KiB; anything over 64 KiB is refused unread.
    static let maximumBodyBytes = 64 * 1024

    /// `{orderId, payment}` where `payment` is Apple Pay JS's `event.payment` (or just its `token`).
    struct Body: Decodable {
        var orderId: String
        var payment: Payment

        struct Payment: Decodable {
            var token: PaymentToken?
            var paymentData: PaymentData?
            var paymentMethod: PaymentToken.PaymentMethod?
            var transactionIdentifier: String?
            var billingContact: Contact?

            struct Contact: Decodable {
                var givenName: String?
                var familyName: String?
            }

            /// "Given Family" from the billing contact, at most 50 characters (Worldline's limit).
            var cardholderName: String? {
                let name = [billingContact?.givenName, billingContact?.familyName].compactMap { $0 }.joined(separator: " ")
                    .trimmingCharacters(in: .whitespaces)
                return name.isEmpty ? nil : String(name.prefix(50))
            }

            var resolved: PaymentToken? {
                token
                    ?? paymentData.map {
                        PaymentToken(paymentData: $0, paymentMethod: paymentMethod, transactionIdentifier: transactionIdentifier)
                    }
            }
        }
    }

    struct Answer: ResponseEncodable {
        var status: String
        var errors: [ApplePayErrorItem]
        var orderId: String
        var paymentId: String
        /// For `completePayment`'s `orderDetails`, when the merchant offers Wallet orders.
        var orderDetails: WalletOrderDetails?
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.postJSON("/api/apple-pay/authorize") { request, context in
            do {
                return try await authorize(request, context: context)
            } catch {
                // The one route that adds to the mapping: the checkout page hands this body to
                // `completePayment`, so every refusal (the engine's included) also carries the
                // `status: failure` shape. The status, code and message are the mapping's own.
                guard var answer = OrchardError(mapping: error) else { throw error }
                answer.isPaymentAnswer = true
                throw answer
            }
        }
        return router
    }

    /// Decode, hand to the engine; its refusals are mapped where every route's are.
    func authorize(_ request: Request, context: OrchardRequestContext) async throws -> Answer {
        let (merchant, _) = try context.requireMerchant()
        // Before the body is read: each attempt verifies a token and may call the processor.
        try limiter.check(.authorizations, context: context, merchant: merchant.merchantIdentifier)
        let bytes = try await readBody(request, limit: Self.maximumBodyBytes)
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: Data(bytes))
        } catch {
            throw OrchardError(.invalidJSON, "the body must be {\"orderId\": \"…\", \"payment\": event.payment}")
        }
        guard let token = body.payment.resolved else {
            throw OrchardError(.invalidJSON, "payment must hold Apple Pay's token (paymentData)")
        }
        let payment = try await engine.authorize(
            .init(
                merchantIdentifier: merchant.merchantIdentifier, orderId: body.orderId, token: token,
                cardholderName: body.payment.cardholderName))
        let details = await walletOrders?.issue(for: payment, merchantIdentifier: merchant.merchantIdentifier)
        return Answer(status: "success", errors: [], orderId: body.orderId, paymentId: payment.id, orderDetails: details)
    }
}
