import ApplePay
import Foundation

/// What a webhook tells the shop.
public enum WebhookEventType: String, Sendable, Codable, CaseIterable {
    case paymentAuthorized = "payment.authorized"
    /// Declined by the issuer, or refused by the processor: nothing was charged.
    case paymentRefused = "payment.refused"
    /// The processor gave no definite answer; a later `payment.authorized` or `payment.refused` settles it.
    case paymentUnknown = "payment.unknown"
    case paymentSettled = "payment.settled"
    /// Orchard stopped capturing a payment automatically after the processor refused it
    /// ``AutomaticCapture/maximumRefusals`` times: it stays authorized for the shop to capture or cancel.
    case paymentCaptureFailed = "payment.capture_failed"
    case paymentCancelled = "payment.cancelled"
    case paymentRefunded = "payment.refunded"
    /// A refund ended refused: nothing was refunded (after a `202` unknown, this is how the shop hears it).
    case paymentRefundRefused = "payment.refund_refused"
    case paymentRequestExpired = "payment_request.expired"
    /// The shop withdrew the payment request (`POST /v1/payment-requests/{id}/cancel`) before it was paid.
    case paymentRequestCancelled = "payment_request.cancelled"
    /// A first payment set up a mandate for later merchant-initiated charges.
    case mandateCreated = "mandate.created"
    /// Apple told of a change to the mandate's merchant token (card details, card art, keys).
    case mandateUpdated = "mandate.updated"
    /// Ended by the shop, by Apple (the shopper or issuer unlinked the token) or an operator.
    case mandateEnded = "mandate.ended"
    /// The guard found a domain no longer serving its association file as Apple fetches it.
    case domainVerificationFailed = "domain.verification_failed"
    /// The domain serves the file as Apple needs again.
    case domainVerificationRestored = "domain.verification_restored"
    /// A certificate (an identity, a processing one, a domain's TLS one) has 30, 15 or 7 days left.
    case certificateExpiring = "certificate.expiring"
    case certificateExpired = "certificate.expired"
    /// An expiring or expired certificate was replaced by one valid for longer.
    case certificateRenewed = "certificate.renewed"
    /// Apple's record of a registered merchant lacks domains of Orchard's registry.
    case registrationDrift = "registration.drift"
    /// Apple's record holds every domain again (the guard registered them again, or an operator did).
    case registrationRestored = "registration.restored"
    /// A payment's order in the shopper's Wallet changed (a fulfilment, a refund, a cancellation); its devices were pushed.
    case walletOrderUpdated = "wallet_order.updated"
}

extension WebhookEventType {
    /// The event a refund's finish writes in its transaction: every finished refund reports once,
    /// `payment.refunded` or `payment.refund_refused`; a refund still unknown reports nothing yet.
    public static func refundFinished(_ state: RefundState) -> WebhookEventType? {
        switch state {
        case .refunded: .paymentRefunded
        case .refused: .paymentRefundRefused
        case .pending, .unknown: nil
        }
    }
}

extension PaymentLifecycle.Event {
    /// The webhook a move sends; nil for the moves the shop need not hear about (sends).
    public var webhook: WebhookEventType? {
        switch self {
        case .firstSend, .resend: nil
        case .authorized, .queriedAuthorized, .resolvedAuthorized: .paymentAuthorized
        case .declined, .rejected, .queriedRefused, .resolvedRefused: .paymentRefused
        case .noAnswer, .processorPending, .stale: .paymentUnknown
        case .settle: .paymentSettled
        case .cancel: .paymentCancelled
        }
    }
}

extension PaymentLifecycle {
    /// The event a move reports, written in its transaction: every move with a webhook reports,
    /// except an unknown outcome after the first send (the shop heard `payment.unknown` once and
    /// hears the answer when it comes). `payment` is the payment as the move left it.
    public static func reportedEvent(_ move: Move, moved payment: PaymentRecord) -> WebhookEventType? {
        guard let type = move.event.webhook else { return nil }
        guard move.to != .unknown || (payment.sends == 1 && payment.reconcileAttempts == 0) else { return nil }
        return type
    }
}

/// One event in the durable outbox, with its delivery so far. Written in the same transaction
/// as the change it reports, so no change goes unreported; delivered at least once.
public struct WebhookEvent: Sendable, Codable, Equatable {
    public enum DeliveryState: String, Sendable, Codable, CaseIterable {
        /// Waiting for its first or next attempt.
        case pending
        /// The endpoint answered 2xx.
        case delivered
        /// Retried for the whole retry window without a 2xx; `replay` sends it again.
        case failed
        /// The merchant had no webhook endpoint when it was due; `replay` sends it once one is set.
        case skipped
    }

    /// `evt_` and 32 hex digits: the same on every attempt, so a receiver can drop duplicates.
    public var id: String
    public var merchantIdentifier: String
    public var type: WebhookEventType
    /// The JSON body exactly as it is signed and sent.
    public var payload: [UInt8]
    public var createdAt: Date
    public var state: DeliveryState
    public var attempts: Int
    public var nextAttemptAt: Date?
    /// The last attempt's HTTP status (nil: no answer) and error.
    public var lastStatus: Int?
    public var lastError: String?
    public var deliveredAt: Date?

    public init(
        id: String, merchantIdentifier: String, type: WebhookEventType, payload: [UInt8], createdAt: Date, state: DeliveryState = .pending,
        attempts: Int = 0, nextAttemptAt: Date? = nil, lastStatus: Int? = nil, lastError: String? = nil, deliveredAt: Date? = nil
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.type = type
        self.payload = payload
        self.createdAt = createdAt
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
    }

    /// A new event about a mandate, with the payment that set it up when there is one.
    public static func make(_ type: WebhookEventType, mandate: MandateRecord, payment: PaymentRecord? = nil, at date: Date) throws
        -> WebhookEvent
    {
        try make(type, merchantIdentifier: mandate.merchantIdentifier, payment: payment, request: nil, mandate: mandate, at: date)
    }

    /// A new event about a payment (and the refund, for `payment.refunded`), its body rendered now.
    public static func make(
        _ type: WebhookEventType, merchantIdentifier: String, payment: PaymentRecord?, request: PaymentRequestRecord?,
        refund: RefundRecord? = nil, refunded: Int64 = 0, mandate: MandateRecord? = nil, at date: Date
    ) throws -> WebhookEvent {
        let id = "evt_" + RecordIdentifier.random()
        let body = Body(
            id: id, type: type.rawValue, created: date, merchantIdentifier: merchantIdentifier,
            data: Body.Data(
                payment: payment.map { PaymentView(payment: $0, request: request, refunded: refunded) },
                paymentRequest: request.map {
                    .init(id: $0.id, reference: $0.reference, metadata: $0.metadata, idempotencyKey: $0.idempotencyKey)
                }, refund: refund,
                mandate: mandate.map(MandateView.init), guard: nil, walletOrder: nil))
        return WebhookEvent(
            id: id, merchantIdentifier: merchantIdentifier, type: type, payload: try PaymentView.encoder.encode(body).asBytes,
            createdAt: date, nextAttemptAt: date)
    }

    /// `wallet_order.updated`: the order as it now stands, with its payment.
    public static func make(
        walletOrder: WalletOrderView, merchantIdentifier: String, payment: PaymentRecord?, request: PaymentRequestRecord?, at date: Date
    ) throws -> WebhookEvent {
        let id = "evt_" + RecordIdentifier.random()
        let body = Body(
            id: id, type: WebhookEventType.walletOrderUpdated.rawValue, created: date, merchantIdentifier: merchantIdentifier,
            data: Body.Data(
                payment: payment.map { PaymentView(payment: $0, request: request, refunded: 0) },
                paymentRequest: request.map {
                    .init(id: $0.id, reference: $0.reference, metadata: $0.metadata, idempotencyKey: $0.idempotencyKey)
                }, refund: nil,
                mandate: nil, guard: nil, walletOrder: walletOrder))
        return WebhookEvent(
            id: id, merchantIdentifier: merchantIdentifier, type: .walletOrderUpdated,
            payload: try PaymentView.encoder.encode(body).asBytes, createdAt: date, nextAttemptAt: date)
    }

    struct Body: Encodable {
        struct Data: Encodable {
            var payment: PaymentView?
            var paymentRequest: RequestReference?
            var refund: RefundRecord?
            var mandate: MandateView?
            var `guard`: GuardView?
            var walletOrder: WalletOrderView?
        }

        struct RequestReference: Encodable {
            var id: String
            var reference: String
            var metadata: [String: String]
            /// The `Idempotency-Key` the shop created the request with.
            var idempotencyKey: String?
        }

        var id: String
        var type: String
        var created: Date
        var merchantIdentifier: String
        var data: Data
        /// True in a sample (``sample(_:merchantIdentifier:at:)``); absent in real events.
        var test: Bool?
    }
}

/// What one delivery attempt found, for ``WebhookOutbox/recordDelivery(_:)``.
public struct WebhookDeliveryResult: Sendable {
    public var eventId: String
    /// The state the attempt was made from (a compare-and-set, so two deliverers never both record).
    public var attempt: Int
    public var state: WebhookEvent.DeliveryState
    public var status: Int?
    public var error: String?
    public var at: Date
    public var nextAttemptAt: Date?

    public init(
        eventId: String, attempt: Int, state: WebhookEvent.DeliveryState, status: Int?, error: String?, at: Date, nextAttemptAt: Date?
    ) {
        self.eventId = eventId
        self.attempt = attempt
        self.state = state
        self.status = status
        self.error = error
        self.at = at
        self.nextAttemptAt = nextAttemptAt
    }
}

extension Data {
    var asBytes: [UInt8] { [UInt8](self) }
}
