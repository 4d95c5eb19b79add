import ApplePay
import Crypto
import Foundation
import Hummingbird
import Logging
import Metrics

/// `POST /api/apple-pay/authorize`: verify, decrypt, match the order, claim the
/// transaction, hand to the processor, answer in the shape `completePayment` takes.
struct AuthorizeController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    let store: any OrchardStore
    let processor: any PaymentProcessor
    let time: TimeSource

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

            var resolved: PaymentToken? {
                token
                    ?? paymentData.map {
                        PaymentToken(paymentData: $0, paymentMethod: paymentMethod, transactionIdentifier: transactionIdentifier)
                    }
            }
        }
    }

    struct Answer: Encodable {
        var status: String
        var errors: [ApplePayErrorItem]
        var orderId: String
        var paymentId: String
    }

    func addRoutes(to router: Router<some RequestContext>) {
        router.post("/api/apple-pay/authorize") { request, context in
            do {
                return try await authorize(request, logger: context.logger)
            } catch var error as OrchardError {
                Counter(label: "orchard_authorizations_total", dimensions: [("outcome", error.code.rawValue)]).increment()
                error.isPaymentAnswer = true
                throw error
            }
        }
    }

    func authorize(_ request: Request, logger: Logger) async throws -> Response {
        guard let (merchant, _) = directory.merchant(forHost: request.head.authority) else {
            throw OrchardError(.unknownHost, "this host is not configured for Apple Pay")
        }
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
        let order = try await openOrder(id: body.orderId, merchant: merchant, store: store)

        let verified: TokenVerifier.Verified
        let payment: DecryptedPayment
        do {
            verified = try configuration.tokenVerifier.verify(token.paymentData, at: time.now)
            payment = try merchant.decryptor.decrypt(verified.decoded)
        } catch {
            logger.warning(
                "payment token refused",
                metadata: ["order": "\(order.id)", "reason": "\(error.code.rawValue)", "detail": "\(error.message)"])
            throw OrchardError(.invalidToken, "the payment could not be verified (\(error.code.rawValue))")
        }
        let currency = Currency(code: order.priced.currency)
        guard payment.fields.transactionAmount == order.priced.total, payment.fields.currencyCode == currency?.numericCode else {
            logger.warning(
                "payment does not match the order",
                metadata: [
                    "order": "\(order.id)", "expected": "\(order.priced.total) \(currency?.numericCode ?? "?")",
                    "got": "\(payment.fields.transactionAmount) \(payment.fields.currencyCode)",
                ])
            throw OrchardError(.paymentMismatch, "the payment amount or currency does not match the order")
        }
        guard verified.decoded.applicationData == Array(SHA256.hash(data: order.applicationData)) else {
            throw OrchardError(.paymentMismatch, "the payment was not made for this order (applicationData differs)")
        }

        let paymentId = OrdersController.newIdentifier()
        let transactionId = Hex.encode(verified.decoded.transactionId)
        do {
            try await store.recordPayment(
                PaymentRecord(
                    id: paymentId, orderId: order.id, transactionId: transactionId, state: "pending", amount: order.priced.total,
                    currency: order.priced.currency, network: token.paymentMethod?.network, lastFour: payment.lastFour,
                    processorReference: nil, createdAt: time.now))
        } catch let error as StoreError {
            switch error.code {
            case .duplicateTransaction: throw OrchardError(.replayedPayment, "this payment was already submitted")
            case .orderNotOpen: throw OrchardError(.orderNotOpen, "this order is already paid")
            case .storage, .domainTaken: throw OrchardError(.internalError, "the payment could not be recorded")
            }
        }

        let outcome: AuthorizationOutcome
        do {
            outcome = try await processor.authorize(AuthorizationRequest(order: order, token: token, payment: payment))
        } catch {
            try await store.finishPayment(id: paymentId, state: "unknown", processorReference: nil, reopenOrder: false)
            logger.error("processor failed", metadata: ["order": "\(order.id)", "payment": "\(paymentId)", "error": "\(error)"])
            throw OrchardError(
                .paymentFailed, "the payment could not be completed; you have not been charged twice, please contact the shop")
        }
        switch outcome.status {
        case .authorized:
            try await store.finishPayment(id: paymentId, state: "authorized", processorReference: outcome.reference, reopenOrder: false)
            Counter(label: "orchard_authorizations_total", dimensions: [("outcome", "authorized")]).increment()
            logger.info(
                "payment authorized",
                metadata: ["order": "\(order.id)", "payment": "\(paymentId)", "amount": "\(order.priced.total) \(order.priced.currency)"])
            return try json(Answer(status: "success", errors: [], orderId: order.id, paymentId: paymentId), status: .ok)
        case .refused:
            try await store.finishPayment(id: paymentId, state: "refused", processorReference: outcome.reference, reopenOrder: true)
            throw OrchardError(.paymentFailed, outcome.shopperMessage ?? "the payment was declined")
        }
    }
}
