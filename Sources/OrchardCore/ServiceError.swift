/// Why an application service (orders, payment requests, mandate charges, the merchant registry)
/// refused a call: a stable code and a message the caller can act on. Nothing was changed here
/// (for ``Code/unrecorded``, Apple's side was, and the message says to repeat the call).
/// ``OrchardError`` maps the codes to HTTP in one place; a store's own failure stays a ``StoreError``.
public struct ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// No such order or payment request (or another merchant's).
        case notFound
        /// The merchant has no catalogue, so it takes no catalogue orders.
        case ordersUnavailable
        /// An input is malformed or out of its bounds.
        case invalidRequest
        /// The cart does not price: unknown products, amounts out of bounds, no shipping method…
        case invalidCart
        /// The recurring, deferred or automatic-reload agreement breaks its own rules.
        case invalidAgreement
        /// The order is paid, closed, expired, or its payment is being confirmed.
        case orderNotOpen
        /// The order was repriced (or paid) since it was read: the change can be sent again.
        case orderChanged
        /// An Idempotency-Key came back with another request body.
        case idempotencyMismatch
        /// The shop's quote URL did not price the change: the total is unchanged.
        case quoteFailed
        /// The records disagree with each other (a payment request without its order).
        case inconsistent
        /// The object is in a state that does not allow the change (an ended mandate).
        case invalidState
        /// The call needs configuration this server lacks (a platform integrator, a settings key).
        case notConfigured
        /// A merchant identifier this server reserves (a configured merchant's, the platform's own).
        case identifierTaken
        /// The domain belongs to another merchant.
        case domainTaken
        /// A registration Apple would refuse, or Orchard could not serve.
        case invalidRegistration
        /// Apple accepted the change but the registry could not record it: repeat the call.
        case unrecorded
    }

    public var code: Code
    /// Says what to change (or that nothing can be): shown to the caller as it is.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
