import ApplePay
import Foundation

/// A call to Apple's gateway that did not give what was asked for.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No answer within the configured timeout.
        case timedOut
        /// Apple could not be reached (refused, reset, TLS failure, cancelled).
        case unreachable
        /// Apple answered with a non-2xx status (``GatewayError/appleStatus``).
        case rejected
        /// Apple answered 2xx with a body that cannot be what was asked for.
        case unreadable
        /// Orchard could not build the request.
        case invalidRequest
    }

    public var kind: Kind
    /// For the operator or admin; never Apple's message to a shopper.
    public var message: String
    /// Apple's HTTP status when it refused.
    public var appleStatus: Int?

    public init(_ kind: Kind, _ message: String, appleStatus: Int? = nil) {
        self.kind = kind
        self.message = message
        self.appleStatus = appleStatus
    }

    public var description: String { message }
}

/// Obtains merchant sessions from Apple (or a stand-in).
public protocol MerchantSessionService: Sendable {
    /// Returns Apple's session body, unchanged.
    func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(GatewayError) -> [UInt8]
}

/// Apple's Web Merchant Registration API, for payment platform integrators.
public protocol MerchantRegistrationService: Sendable {
    func register(_ registration: MerchantRegistration) async throws(GatewayError)
    func unregister(_ unregistration: MerchantUnregistration) async throws(GatewayError)
    func details(partnerIdentifier: String) async throws(GatewayError) -> RegisteredMerchantDetails
}
