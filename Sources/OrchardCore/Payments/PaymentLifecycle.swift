import Foundation

/// Every move a payment can make, with what its order does at the same time: the one table the
/// engine follows, the store enforces (each move is a compare-and-set on both expected states)
/// and docs/payment-states.md prints.
public enum PaymentLifecycle {
    /// Why a move happens.
    public enum Event: String, Sendable, CaseIterable {
        /// The shopper authorizes an open order: a new attempt with a new reference.
        case firstSend = "first send"
        /// The shopper retries, or the reconciler re-sends, an unknown attempt under its own reference.
        case resend = "re-send"
        /// The processor authorized this reference.
        case authorized
        /// The processor declined this reference.
        case declined
        /// The processor refused the request itself (credentials, schema) on the reference's first send.
        case rejected
        /// No definite answer: 5xx, 409 in progress, timeout, dropped connection, unreadable body, a
        /// rejection of a re-send, or a store failure after the answer.
        case noAnswer = "no answer"
        /// The processor took the reference but gave no final outcome (a redirect, an authorization
        /// requested): its reference is kept, and the processor is asked later; nothing is re-sent.
        case processorPending = "processor: pending"
        /// At startup or in the reconciler: pending for longer than any processor call can last.
        case stale
        /// The processor's records, asked before any re-send, hold an outcome for the reference.
        case queriedAuthorized = "processor query: authorized"
        case queriedRefused = "processor query: refused"
        /// An operator read the processor's records.
        case resolvedAuthorized = "operator: authorized"
        case resolvedRefused = "operator: refused"
        /// The back office settled (captured) or cancelled (voided) through the processor.
        case settle
        case cancel
    }

    /// One move: the payment goes `from` → `to` and, in the same transaction, its order goes
    /// `order.from` → `order.to`. A nil `from` is a new payment.
    public struct Move: Sendable, Equatable {
        public var event: Event
        public var from: PaymentState?
        public var to: PaymentState
        public var order: (from: OrderRecord.State, to: OrderRecord.State)

        public static func == (lhs: Move, rhs: Move) -> Bool {
            lhs.event == rhs.event && lhs.from == rhs.from && lhs.to == rhs.to && lhs.order == rhs.order
        }
    }

    /// The table. Nothing else moves a payment.
    public static let moves: [Move] = [
        Move(event: .firstSend, from: nil, to: .pending, order: (.open, .pending)),
        Move(event: .resend, from: .unknown, to: .pending, order: (.unknown, .pending)),
        Move(event: .authorized, from: .pending, to: .authorized, order: (.pending, .paid)),
        Move(event: .declined, from: .pending, to: .refused, order: (.pending, .open)),
        Move(event: .rejected, from: .pending, to: .failed, order: (.pending, .open)),
        Move(event: .noAnswer, from: .pending, to: .unknown, order: (.pending, .unknown)),
        Move(event: .processorPending, from: .pending, to: .unknown, order: (.pending, .unknown)),
        Move(event: .stale, from: .pending, to: .unknown, order: (.pending, .unknown)),
        Move(event: .queriedAuthorized, from: .unknown, to: .authorized, order: (.unknown, .paid)),
        Move(event: .queriedRefused, from: .unknown, to: .refused, order: (.unknown, .open)),
        Move(event: .resolvedAuthorized, from: .unknown, to: .authorized, order: (.unknown, .paid)),
        Move(event: .resolvedRefused, from: .unknown, to: .refused, order: (.unknown, .open)),
        Move(event: .settle, from: .authorized, to: .settled, order: (.paid, .paid)),
        Move(event: .cancel, from: .authorized, to: .cancelled, order: (.paid, .cancelled)),
    ]

    /// The move an event makes; every event has exactly one.
    public static func move(_ event: Event) -> Move {
        guard let move = moves.first(where: { $0.event == event }) else { preconditionFailure("no move for \(event)") }
        return move
    }

    /// Whether the processor's answer for the payment is known: the sealed retry request is
    /// deleted on reaching such a state, since nothing will re-send it.
    public static func isResolved(_ state: PaymentState) -> Bool {
        state != .pending && state != .unknown
    }

    /// The table as Markdown, for docs/payment-states.md (a test keeps the two equal).
    public static var markdown: String {
        var lines = ["| event | payment | order |", "|---|---|---|"]
        for move in moves {
            lines.append(
                "| \(move.event.rawValue) | \(move.from?.rawValue ?? "(new)") → \(move.to.rawValue) | \(move.order.from.rawValue) → \(move.order.to.rawValue) |"
            )
        }
        return lines.joined(separator: "\n")
    }
}

/// What ``OrderPayments/claimPayment(_:)`` records for a new attempt; on a re-send only the
/// transaction ID, the sealed request, the time (the reference's last send) and
/// ``expectedSends`` are used.
public struct PaymentClaim: Sendable {
    public var draft: PaymentRecord
    /// The token's transaction ID (hex): claimed for good, so a replayed token loses.
    public var transactionId: String
    /// The request sealed for re-sending (``PaymentVault``).
    public var sealedRequest: [UInt8]
    /// On a re-send of the order's unknown attempt: how often it had been sent when the engine
    /// decided to send it again. A claim that finds another count (someone sent it meanwhile,
    /// after the processor was asked) fails with ``CoreError/Code/paymentInProgress``.
    public var expectedSends: Int?
    /// The unknown attempt this claim sends again (the one the engine asked the processor about,
    /// and the one ``sealedRequest`` is sealed for); nil for a new attempt, sealed for `draft`.
    /// A claim that finds the order otherwise (a new attempt finding an unknown one, or the
    /// other way round) fails with ``CoreError/Code/paymentInProgress``: the caller asks again.
    public var resending: String?
    /// The order's price version the token was checked against (``OrderRecord/priceVersion``):
    /// a claim that finds the order repriced since fails with ``CoreError/Code/orderChanged``.
    public var priceVersion: Int
    /// What the store read with the order (``OrderPayments/claimableOrder(id:remembered:)``), if it did.
    public var basis: PaymentClaimBasis?

    public init(
        draft: PaymentRecord, transactionId: String, sealedRequest: [UInt8], priceVersion: Int, expectedSends: Int? = nil,
        resending: String? = nil, basis: PaymentClaimBasis? = nil
    ) {
        self.priceVersion = priceVersion
        self.basis = basis
        self.draft = draft
        self.transactionId = transactionId
        self.sealedRequest = sealedRequest
        self.expectedSends = expectedSends
        self.resending = resending
    }
}

/// One move of ``PaymentLifecycle`` for ``OrderPayments/transition(_:)``.
public struct PaymentTransition: Sendable {
    public var paymentId: String
    public var orderId: String
    public var move: PaymentLifecycle.Move
    public var at: Date
    /// The processor's answer, when this move records one.
    public var outcome: AuthorizationOutcome?
    /// A re-send by the reconciler counts one more send and attempt.
    public var countsReconcileAttempt = false
    /// When the reconciler next re-sends an unknown payment.
    public var nextReconcileAt: Date?
    /// When set, the payment's links become these (written after ``outcome``'s), leaving its
    /// processor reference, code and message as they are: a settle records the refund links the
    /// processor answered with this way.
    public var links: [String: String]?
    /// A mandate the move creates (an `authorized` move of an agreement's first payment): inserted
    /// with its `mandate.created` event and named on the payment, in the move's transaction, as
    /// ``mandate(ownedBy:)`` makes it. Its owner here is the order's as the engine read it, which
    /// the store does not write.
    public var mandate: MandateRecord?
    /// Set on a re-send: the payment must have been sent this often (the move fails otherwise),
    /// and ``at`` becomes its last send.
    public var expectedSends: Int?
    /// The payment as the engine holds it (what the store last returned), when it does: a store
    /// may write the move from it without reading the payment first, by a compare-and-set that
    /// re-checks every column the move keeps or reports. Never the authority: a store that finds
    /// the payment otherwise reads it and moves it (or not) as it stands.
    public var held: PaymentRecord?
    /// When the payment's automatic capture is due (``AutomaticCapture/dueAt(after:capture:now:)``
    /// decides, for a move to `authorized`): written with the move, so an authorization whose
    /// capture is owed is never stored without it. Every other move writes nil: a payment that
    /// leaves `authorized` owes no capture.
    public var captureDueAt: Date?
    /// What a settle captured (``PaymentRecord/amountCaptured``); nil: the move leaves it as it is.
    public var amountCaptured: Int64?
    /// A refund of the uncaptured payment this move releases (``RefundRecord/released``): the
    /// cancel that voids it all, or the settle that captures the rest. Inserted, refunded, with
    /// its `payment.refunded` event, in the move's transaction: it exists exactly when the move does.
    public var release: RefundRecord?

    public init(
        paymentId: String, orderId: String, move: PaymentLifecycle.Move, at: Date, outcome: AuthorizationOutcome? = nil,
        countsReconcileAttempt: Bool = false, nextReconcileAt: Date? = nil, links: [String: String]? = nil,
        mandate: MandateRecord? = nil, expectedSends: Int? = nil, held: PaymentRecord? = nil, captureDueAt: Date? = nil
    ) {
        self.captureDueAt = captureDueAt
        self.held = held
        self.expectedSends = expectedSends
        self.mandate = mandate
        self.paymentId = paymentId
        self.orderId = orderId
        self.move = move
        self.at = at
        self.outcome = outcome
        self.countsReconcileAttempt = countsReconcileAttempt
        self.nextReconcileAt = nextReconcileAt
        self.links = links
    }
    /// The mandate the move creates, owned by `owner`: the order's owner as the move's own
    /// transaction reads it (where it compares and sets the order's state), never as the engine
    /// read it when it claimed the payment. A retirement moves a tenant's orders to its
    /// ``RetiredTenant/recordKey(for:)`` while their payments may be at the processor, and a
    /// later registration under the same identifier must not own what an answer arriving after
    /// that creates.
    public func mandate(ownedBy owner: String) -> MandateRecord? {
        guard var mandate else { return nil }
        mandate.merchantIdentifier = owner
        return mandate
    }

    /// `payment` as this move leaves it: what every store writes and what the move's events
    /// report. `stored` turns a new time into the one the store reads back (PostgreSQL keeps
    /// microseconds), so the events report exactly what is written.
    public func applied(to payment: PaymentRecord, stored: (Date) -> Date = { $0 }) -> PaymentRecord {
        var moved = payment
        moved.state = move.to
        moved.updatedAt = stored(at)
        if let outcome {
            moved.processorReference = outcome.processorReference
            moved.processorCode = outcome.code
            moved.processorMessage = outcome.message
            moved.links = outcome.links
        }
        if let links { moved.links = links }
        if countsReconcileAttempt {
            moved.sends += 1
            moved.reconcileAttempts += 1
        }
        if expectedSends != nil { moved.lastSentAt = stored(at) }
        moved.nextReconcileAt = nextReconcileAt.map(stored)
        moved.captureDueAt = captureDueAt.map(stored)
        if let amountCaptured { moved.amountCaptured = amountCaptured }
        if let mandate { moved.mandateId = mandate.id }
        return moved
    }
}
