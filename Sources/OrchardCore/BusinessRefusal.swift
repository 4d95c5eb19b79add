/// A business rule refused a change: Core's decision (``PaymentClaimPolicy``,
/// ``RefundPolicy``, ``OrderPricingPolicy``, the API-key cap, the registry's one owner per
/// domain, an idempotency key's fingerprint), whichever store applied it. The store changed
/// nothing. A store's own failure is a ``StoreError``.
public struct BusinessRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable, CaseIterable {
        /// The token's transaction ID was seen before.
        case duplicateTransaction
        /// The order is unknown or no longer open.
        case orderNotOpen
        /// An attempt of the order (or the refund) is with the processor right now, or was sent
        /// again since the caller looked: ask again.
        case paymentInProgress
        /// The order was repriced since the caller read it (``OrderRecord/priceVersion``).
        case orderChanged
        /// The domain is already registered to another merchant.
        case domainTaken
        /// A merchant already holds its most active API keys.
        case limitReached
        /// An idempotency key came back with another request body.
        case idempotencyMismatch
        /// A refund larger than what is left to refund.
        case refundTooLarge
        /// The object is not in a state that allows the change.
        case invalidState
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
