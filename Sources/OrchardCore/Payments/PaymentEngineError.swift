import Foundation

/// Why the payments engine did not authorize, settle, cancel or resolve: a stable code and a
/// message. Messages of shopper-facing codes are safe to show on the payment sheet;
/// ``OrchardError`` maps the codes to HTTP in one place.
public struct PaymentEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// No such order or payment (or another merchant's).
        case notFound
        /// The order is paid or closed.
        case orderNotOpen
        /// The order was repriced after the token was checked: nothing was charged, the token
        /// was not used, and the shopper pays the new price with a new token.
        case orderChanged
        /// The token failed verification or decryption.
        case invalidToken
        /// The token's amount, currency or applicationData is not this order's.
        case paymentMismatch
        /// This token was submitted before.
        case replayedPayment
        /// The issuer or processor declined: nothing was charged.
        case declined
        /// The processor refused the request itself: nothing was charged.
        case processorRejected
        /// The outcome is not known yet (no answer, or another attempt is with the processor).
        case paymentUnknown
        /// The payment is in another state than the action needs.
        case invalidState
        /// A refund larger than what is left to refund.
        case refundTooLarge
        /// An Idempotency-Key came back with another request.
        case idempotencyMismatch
        /// The store failed before anything was sent: nothing was charged.
        case storage
        /// The store could not be reached before anything was sent: nothing was charged, and the
        /// same call may succeed in a moment.
        case storeUnavailable
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static let unknownOutcome = PaymentEngineError(
        .paymentUnknown, "We could not confirm your payment with the bank. Please try again: you will not be charged twice.")
    static let storeUnavailable = PaymentEngineError(
        .storeUnavailable, "The payment service is briefly unavailable; nothing was charged. Please try again in a moment.")
    /// The store's failure before anything was sent, as the engine answers it: unavailable when
    /// the store could not be reached, else `fallback`.
    static func beforeSending(_ error: any Error, else fallback: PaymentEngineError) -> PaymentEngineError {
        (error as? StoreError)?.code == .unavailable ? storeUnavailable : fallback
    }
    static let inProgress = PaymentEngineError(
        .paymentUnknown, "Your payment is still being confirmed with the bank. Please wait a moment before trying again.")
}
