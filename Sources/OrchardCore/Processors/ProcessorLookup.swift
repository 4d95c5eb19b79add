import Foundation

/// What a processor's own records say of a reference Orchard sent without seeing the answer.
/// The engine asks before it sends anything again (a shopper's retry, a retried charge or
/// refund, the reconciler), so a lost answer to a successful authorization or refund never
/// becomes a second one; ``PaymentsEngine/Policy/resendDecision(_:firstSentAt:lastSentAt:now:)``
/// turns the answer into what to do.
public enum ProcessorLookup<Outcome: Sendable & Equatable>: Sendable, Equatable {
    /// A definite outcome the processor holds for the reference: for a payment `authorized`
    /// (with its processor reference and links) or `refused`; for a refund `refunded` or `refused`.
    case found(Outcome)
    /// The processor has the reference but no final outcome yet (a redirect, an authorization
    /// requested from the issuer): asked again later, never re-sent.
    case pending
    /// The processor does not know the reference. Its records may lag up to `lag` seconds
    /// behind a send, so this proves that nothing was done only once that much time has passed
    /// since the reference's last send.
    case notFound(lag: TimeInterval)
    /// The processor cannot be asked, but promises to answer a re-send of the same reference
    /// from the first one for `window` seconds after the first send (nil: for ever).
    case deduplicated(window: TimeInterval?)
}

/// What a processor's records say of a payment's or a merchant-initiated charge's reference.
public typealias PaymentLookup = ProcessorLookup<AuthorizationOutcome>
/// What a processor's records say of a refund's reference.
public typealias RefundLookup = ProcessorLookup<RefundOutcome>

/// What to do with a reference whose answer Orchard did not see, decided once for every
/// processor and every path that could send it again.
public enum ResendDecision<Outcome: Sendable & Equatable>: Sendable, Equatable {
    /// Record this outcome, read from the processor's records: nothing is sent.
    case settle(Outcome)
    /// The processor does not know the reference after its lag, or de-duplicates re-sends: send it again.
    case resend
    /// Nothing is sent; ask the processor again at `until`.
    case wait(until: Date, reason: String)
    /// It can be neither asked nor safely sent again: an operator reads the processor's records.
    case needsOperator(reason: String)
}
