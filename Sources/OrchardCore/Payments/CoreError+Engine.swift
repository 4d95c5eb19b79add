import Foundation

/// The engine's own refusals, worded for the shopper's payment sheet.
extension CoreError {
    static let unknownOutcome = CoreError(
        .paymentUnknown, "We could not confirm your payment with the bank. Please try again: you will not be charged twice.")
    static let storeUnavailable = CoreError(
        .storeUnavailable, "The payment service is briefly unavailable; nothing was charged. Please try again in a moment.")
    /// The store's failure before anything was sent, as the engine answers it: unavailable when
    /// the store could not be reached, else `fallback`.
    static func beforeSending(_ error: any Error, else fallback: CoreError) -> CoreError {
        (error as? StoreError)?.code == .unavailable ? storeUnavailable : fallback
    }
    static let inProgress = CoreError(
        .paymentUnknown, "Your payment is still being confirmed with the bank. Please wait a moment before trying again.")
}
