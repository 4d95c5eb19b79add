import Foundation

/// A processor whose API says which Google Pay gateway its tokens must be sealed for: the
/// doctor asks it live, so a wrong `googlePay.gateway` (Google's OR_BIBED_06 in production) is
/// found before a shopper meets it.
public protocol GooglePayGatewayAnswering: Sendable {
    /// The gateway name the processor gives for Google Pay, for a payment in `currencyCode` from `countryCode`.
    func googlePayGateway(countryCode: String, currencyCode: String) async throws -> String
}
