/// Why Core refused or could not do what it was asked: a business rule (a claim, a refund, a
/// price, a key cap, a domain's one owner, an idempotency key), an application service (orders,
/// payment requests, mandate charges, the merchant registry) or the payments engine. One stable
/// code and a message the caller can act on; ``OrchardError`` maps the codes to HTTP in one
/// switch, so a new refusal is one case here and one line there. Nothing was changed, except
/// where a code says otherwise (``Code/unrecorded``, ``Code/paymentUnknown``). A store's own
/// failure is a ``StoreError``.
public struct CoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        // Inputs.
        /// No such order, payment, payment request or mandate (or another merchant's).
        case notFound
        /// An input is malformed or out of its bounds.
        case invalidRequest
        /// The merchant has no catalogue, so it takes no catalogue orders.
        case ordersUnavailable
        /// The cart does not price: unknown products, amounts out of bounds, no shipping method…
        case invalidCart
        /// The recurring, deferred or automatic-reload agreement breaks its own rules.
        case invalidAgreement
        /// An Idempotency-Key came back with another request body.
        case idempotencyMismatch

        // Orders and their state.
        /// The order is unknown, paid, closed, expired, or its payment is being confirmed.
        case orderNotOpen
        /// The order was repriced (or paid) since it was read: the change can be sent again, and
        /// a token checked against the old price was not used.
        case orderChanged
        /// The object is not in a state that allows the change (an ended mandate, a payment
        /// already settled).
        case invalidState
        /// The shop's quote URL did not price the change: the total is unchanged.
        case quoteFailed

        // Payments.
        /// The token failed verification or decryption.
        case invalidToken
        /// The token's amount, currency or applicationData is not this order's.
        case paymentMismatch
        /// The token's transaction ID was seen before.
        case replayedPayment
        /// The issuer or processor declined: nothing was charged.
        case declined
        /// The processor refused the request itself: nothing was charged.
        case processorRejected
        /// The outcome is not known yet (no answer from the processor).
        case paymentUnknown
        /// An attempt of the order (or the refund) is with the processor right now, or was sent
        /// again since the caller looked: ask again.
        case paymentInProgress
        /// A refund larger than what is left to refund.
        case refundTooLarge

        // Merchants, keys and the registry.
        /// A merchant already holds its most active API keys.
        case limitReached
        /// The domain belongs to another merchant.
        case domainTaken
        /// A merchant identifier this server reserves (a configured merchant's, the platform's own).
        case identifierTaken
        /// A registration Apple would refuse, or Orchard could not serve.
        case invalidRegistration
        /// The call needs configuration this server lacks (a platform integrator, a settings key).
        case notConfigured
        /// Apple accepted the change but the registry could not record it: repeat the call.
        case unrecorded
        /// Another call to Apple for the same registered merchant is under way (the guard's
        /// repair, another unregistration): nothing was changed; repeat the call.
        case registrationBusy

        // The records.
        /// The records disagree with each other (a payment request without its order).
        case inconsistent
        /// The store failed before anything was sent: nothing was charged.
        case storage
        /// The store could not be reached before anything was sent: nothing was charged, and the
        /// same call may succeed in a moment.
        case storeUnavailable
    }

    public var code: Code
    /// Says what to change (or that nothing can be); shown to the caller as it is.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
