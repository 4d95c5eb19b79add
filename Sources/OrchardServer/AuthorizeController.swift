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
    let processors: PaymentProcessors
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
        let order = try await openOrder(id: body.orderId, merchant: merchant, store: store, allowUnknown: true)

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

        let processor = processors.processor(forMerchant: merchant.merchantIdentifier)
        let earlier = try await store.payments(orderId: order.id)
        // After an unknown outcome the retry reuses that attempt's reference: the processor
        // answers it from its idempotency record instead of charging again.
        let reference =
            order.state == .unknown
            ? earlier.last(where: { $0.state == .unknown })?.reference ?? "\(order.id)-\(earlier.count + 1)"
            : "\(order.id)-\(earlier.count + 1)"
        var record = PaymentRecord(
            id: OrdersController.newIdentifier(), orderId: order.id, transactionId: Hex.encode(verified.decoded.transactionId),
            state: .pending, amount: order.priced.total, currency: order.priced.currency, network: token.paymentMethod?.network,
            lastFour: payment.lastFour, processor: processor.name, reference: reference, createdAt: time.now)
        do {
            try await store.recordPayment(record)
        } catch let error as StoreError {
            switch error.code {
            case .duplicateTransaction: throw OrchardError(.replayedPayment, "this payment was already submitted")
            case .orderNotOpen: throw OrchardError(.orderNotOpen, "this order is already paid")
            case .storage, .domainTaken: throw OrchardError(.internalError, "the payment could not be recorded")
            }
        }

        let started = ContinuousClock.now
        let outcome: AuthorizationOutcome
        do {
            outcome = try await processor.authorize(
                AuthorizationRequest(
                    order: order, token: token, payment: payment, reference: reference, cardholderName: body.payment.cardholderName))
        } catch {
            record.state = .unknown
            record.updatedAt = time.now
            try await store.finishPayment(record, orderState: .unknown)
            Counter(label: "orchard_authorizations_total", dimensions: [("outcome", "unknown")]).increment()
            logger.error(
                "processor gave no answer: payment outcome unknown",
                metadata: [
                    "order": "\(order.id)", "payment": "\(record.id)", "processor": "\(processor.name)", "reference": "\(reference)",
                    "error": "\(error)",
                ])
            throw OrchardError(
                .paymentUnknown,
                "We could not confirm your payment with the bank. Please try again: you will not be charged twice.")
        }
        record.processorReference = outcome.processorReference
        record.processorCode = outcome.code
        record.processorMessage = outcome.message
        record.links = outcome.links
        record.updatedAt = time.now
        let metadata: Logger.Metadata = [
            "order": "\(order.id)", "payment": "\(record.id)", "processor": "\(processor.name)", "reference": "\(reference)",
            "ms":
                "\((ContinuousClock.now - started).components.seconds * 1000 + (ContinuousClock.now - started).components.attoseconds / 1_000_000_000_000_000)",
        ]
        Counter(label: "orchard_authorizations_total", dimensions: [("outcome", outcome.status.rawValue)]).increment()
        switch outcome.status {
        case .authorized:
            record.state = .authorized
            try await store.finishPayment(record, orderState: .paid)
            logger.info(
                "payment authorized", metadata: metadata.merging(["amount": "\(order.priced.total) \(order.priced.currency)"]) { $1 })
            return try json(Answer(status: "success", errors: [], orderId: order.id, paymentId: record.id), status: .ok)
        case .refused:
            record.state = .refused
            try await store.finishPayment(record, orderState: .open)
            logger.notice(
                "payment refused",
                metadata: metadata.merging(["code": "\(outcome.code ?? "-")", "reason": "\(outcome.message ?? "-")"]) { $1 })
            throw OrchardError(.paymentFailed, "Your card was declined. Please try another card; nothing was charged.")
        case .failed:
            record.state = .failed
            try await store.finishPayment(record, orderState: .open)
            logger.error(
                "processor rejected the request",
                metadata: metadata.merging(["code": "\(outcome.code ?? "-")", "reason": "\(outcome.message ?? "-")"]) { $1 })
            throw OrchardError(
                .processorRejected, "The payment could not be processed right now; nothing was charged. Please try again later.")
        }
    }
}
