import Foundation

/// What a store reads about an order, under its lock, for ``PaymentClaimPolicy/decide(_:_:)``.
public struct PaymentClaimSnapshot: Sendable, Equatable {
    /// The order's state, the price version it is at, and its expiry.
    public struct Order: Sendable, Equatable {
        public var state: OrderRecord.State
        public var priceVersion: Int
        public var expiresAt: Date?

        public init(state: OrderRecord.State, priceVersion: Int, expiresAt: Date?) {
            self.state = state
            self.priceVersion = priceVersion
            self.expiresAt = expiresAt
        }
    }

    /// The order's newest unknown attempt and how often its reference was sent.
    public struct UnknownAttempt: Sendable, Equatable {
        public var id: String
        public var sends: Int

        public init(id: String, sends: Int) {
            self.id = id
            self.sends = sends
        }
    }

    /// Nil: there is no such order.
    public var order: Order?
    /// Whether the token's transaction ID was claimed before, by any order.
    public var transactionUsed: Bool
    /// The order's newest attempt in state `unknown`, if any.
    public var unknownAttempt: UnknownAttempt?
    /// How many attempts the order has, in any state.
    public var attempts: Int

    public init(order: Order?, transactionUsed: Bool, unknownAttempt: UnknownAttempt?, attempts: Int) {
        self.order = order
        self.transactionUsed = transactionUsed
        self.unknownAttempt = unknownAttempt
        self.attempts = attempts
    }
}

/// What a store read with an order, for its claim (``OrderPayments/claimableOrder(id:remembered:)``): the
/// snapshot as it was then, its transaction ID not yet known (unused), and the store's version
/// of the order's row. A claim that carries it can be decided and written without reading again;
/// the write's compare-and-set re-checks every part of it, so it is a guess, never the authority.
public struct PaymentClaimBasis: Sendable, Equatable {
    public var snapshot: PaymentClaimSnapshot
    /// The store's own version of the order's row, opaque to Core.
    public var version: String
    /// Kept from when this store wrote the order, not read now: another instance may have moved,
    /// repriced or retired it since. A claim that finds the order otherwise than the basis says
    /// fails with ``CoreError/Code/orderChanged``, writing nothing, and the engine decides again
    /// from a read; a read basis is read again and decided from by the store.
    public var remembered: Bool

    public init(snapshot: PaymentClaimSnapshot, version: String, remembered: Bool = false) {
        self.snapshot = snapshot
        self.version = version
        self.remembered = remembered
    }
}

/// An order as a claim starts from: the record, and what the store read with it for the claim.
public struct ClaimableOrder: Sendable {
    public var order: OrderRecord
    /// Nil when the store reads again as it claims (SQLite, memory).
    public var basis: PaymentClaimBasis?

    /// The order as this store last wrote it, not read now (``PaymentClaimBasis/remembered``):
    /// a refusal decided from it is decided again from a read.
    public var remembered: Bool { basis?.remembered ?? false }

    public init(order: OrderRecord, basis: PaymentClaimBasis? = nil) {
        self.order = order
        self.basis = basis
    }
}

/// What a store writes for a claim ``PaymentClaimPolicy`` allowed, in the transaction that read
/// the snapshot: the attempt, then the order's compare-and-set along `move` at `priceVersion`,
/// then the transaction ID.
public struct PaymentClaimDecision: Sendable, Equatable {
    public enum Attempt: Sendable, Equatable {
        /// Insert this attempt, pending, under its new reference.
        case first(PaymentRecord)
        /// Move this unknown attempt back to pending with one more send, if it still has `sends`.
        case resend(paymentId: String, sends: Int)
    }

    public var attempt: Attempt
    /// The lifecycle's move (``PaymentLifecycle/Event/firstSend`` or ``PaymentLifecycle/Event/resend``):
    /// the states the payment and its order move between.
    public var move: PaymentLifecycle.Move
    /// The order's price version the claim moves it at.
    public var priceVersion: Int

    /// The payment the claim records the transaction ID for.
    public var paymentId: String {
        switch attempt {
        case .first(let record): record.id
        case .resend(let paymentId, _): paymentId
        }
    }
}

/// Whether a token may be claimed for an order, and how: the one place that decides it, for
/// every store. The claim must be for the price the token was verified against
/// (``PaymentClaim/priceVersion``): a repricing in between loses the race for the payment.
public enum PaymentClaimPolicy {
    /// The reference of an order's `attempt`-th attempt (1-based): the idempotency key sent to the processor.
    public static func reference(orderId: String, attempt: Int) -> String {
        "\(orderId)-\(attempt)"
    }

    /// Decides a claim from what the store read under the order's lock; throws the refusal the
    /// engine reports, and then the store writes nothing.
    public static func decide(_ claim: PaymentClaim, _ snapshot: PaymentClaimSnapshot) throws(CoreError) -> PaymentClaimDecision {
        let orderId = claim.draft.orderId
        // A replayed token is named as such, whatever became of its order.
        guard !snapshot.transactionUsed else {
            throw CoreError(.replayedPayment, "transaction \(claim.transactionId.prefix(16))… was already used")
        }
        guard let order = snapshot.order else { throw CoreError(.orderNotOpen, "order \(orderId) is not open") }
        switch order.state {
        case .open:
            // A new attempt must find the order open: the sealed request is bound to the payment the engine meant.
            guard claim.resending == nil else {
                throw CoreError(.paymentInProgress, "order \(orderId) changed while its payment was decided")
            }
            if let expiry = order.expiresAt, expiry <= claim.draft.createdAt {
                throw CoreError(.orderNotOpen, "order \(orderId) has expired")
            }
            try samePrice(claim, order)
            let move = PaymentLifecycle.move(.firstSend)
            var record = claim.draft
            record.reference = reference(orderId: orderId, attempt: snapshot.attempts + 1)
            record.state = move.to
            return PaymentClaimDecision(attempt: .first(record), move: move, priceVersion: order.priceVersion)
        case .unknown:
            guard let unknown = snapshot.unknownAttempt else {
                throw CoreError(.orderNotOpen, "order \(orderId) has no unknown payment")
            }
            // A re-send must name the unknown attempt it re-sends, and find it as often sent as
            // the engine saw it when it decided to send it again.
            guard claim.resending == unknown.id, claim.expectedSends.map({ $0 == unknown.sends }) ?? true else {
                throw CoreError(.paymentInProgress, "order \(orderId)'s payment was sent again meanwhile")
            }
            try samePrice(claim, order)
            return PaymentClaimDecision(
                attempt: .resend(paymentId: unknown.id, sends: unknown.sends), move: PaymentLifecycle.move(.resend),
                priceVersion: order.priceVersion)
        case .pending:
            throw CoreError(.paymentInProgress, "order \(orderId) has a payment with the processor")
        case .paid, .cancelled, .expired:
            throw CoreError(.orderNotOpen, "order \(orderId) is not open")
        }
    }

    private static func samePrice(_ claim: PaymentClaim, _ order: PaymentClaimSnapshot.Order) throws(CoreError) {
        guard claim.priceVersion == order.priceVersion else {
            throw CoreError(
                .orderChanged, "order \(claim.draft.orderId) was repriced (version \(order.priceVersion)) after the token was checked")
        }
    }
}
