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
        /// Orchard already had as many calls to the gateway (or for this merchant) in flight as
        /// configured: nothing was sent, and the call may be tried again shortly.
        case busy
    }

    public var kind: Kind
    /// For the operator or admin; never Apple's message to a shopper.
    public var message: String
    /// Apple's HTTP status when it refused.
    public var appleStatus: Int?
    /// Apple's own `statusMessage`, for the operator (logs, admin API, doctor), never the page.
    public var appleMessage: String?
    /// Advice from the caller, which knows what was asked (an event, a token), in place of the
    /// general ``hint`` that reads Apple's answer as if it were about sessions and domains.
    public var advice: String?

    public init(_ kind: Kind, _ message: String, appleStatus: Int? = nil, appleMessage: String? = nil, advice: String? = nil) {
        self.kind = kind
        self.message = message
        self.appleStatus = appleStatus
        self.appleMessage = appleMessage
        self.advice = advice
    }

    public var description: String { message }

    /// What went wrong and what to do, in plain words, from Apple's status and message.
    public var hint: String {
        if let advice { return advice }
        let apple = appleMessage ?? ""
        switch kind {
        case .timedOut:
            return "Apple's gateway did not answer in time: check outbound HTTPS to apple-pay-gateway.apple.com and the timeouts"
        case .unreachable
        where message.lowercased().contains("ssl") || message.lowercased().contains("tls")
            || message.lowercased().contains("certificate"):
            return "the TLS connection to Apple failed (\(message)): check the identity certificate and key, and the gateway's CA"
        case .unreachable:
            return "Apple's gateway could not be reached (\(message)): check DNS, firewall and proxy for outbound HTTPS"
        case .rejected where apple.contains("not registered for domain"):
            return
                "Apple does not know this domain for the merchant: verify it under the merchant ID in the Apple Developer portal, or register it (orchard domains register)"
        case .rejected where apple.contains("does not match the client certificate") || appleStatus == 417:
            return
                "the identity certificate belongs to another merchant ID than merchantIdentifier: use that merchant's identity certificate"
        case .rejected where apple.contains("not registered") || apple.contains("not found"):
            return "Apple does not know this merchant ID: check merchantIdentifier against the Apple Developer portal"
        case .rejected where appleStatus == 401 || appleStatus == 403:
            // Apple's words too: a test gateway says there what it accepts.
            return
                "Apple did not accept the identity certificate: it may be revoked, for the sandbox instead of production, or not a Merchant Identity certificate"
                + (apple.isEmpty ? "" : " (HTTP \(appleStatus ?? 0): \(apple))")
        case .rejected:
            return "Apple refused the request (HTTP \(appleStatus ?? 0)\(apple.isEmpty ? "" : ": " + apple))"
        case .unreadable:
            return "Apple answered with something that is not what was asked for: check appleGateway.baseURL"
        case .invalidRequest:
            return message
        case .busy:
            return
                "Orchard refused the call itself, before sending it (\(message)): raise outbound.maxConcurrentPerHost or outbound.maxConcurrentPerMerchant if this happens under normal load"
        }
    }
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

/// What an HTTPS GET answered, unfollowed: for checking a domain as Apple fetches it.
public struct ProbeAnswer: Sendable {
    public var status: Int
    public var contentType: String?
    public var location: String?
    public var body: [UInt8]
    /// When the TLS certificate the domain presented stops being valid (its leaf's notAfter);
    /// nil when the probe could not read it.
    public var certificateNotValidAfter: Date?
    /// The ``DomainFileSigner/headerName`` header, which Orchard sends with the association file it serves.
    public var fileSignature: String?

    public init(
        status: Int, contentType: String?, location: String?, body: [UInt8], certificateNotValidAfter: Date? = nil,
        fileSignature: String? = nil
    ) {
        self.status = status
        self.contentType = contentType
        self.location = location
        self.body = body
        self.certificateNotValidAfter = certificateNotValidAfter
        self.fileSignature = fileSignature
    }
}

/// Fetches a domain's association file the way Apple does: one HTTPS GET, redirects not followed.
public protocol DomainProbe: Sendable {
    /// Throws ``GatewayError`` (`.timedOut` or `.unreachable`) when there is no HTTP answer.
    func associationFile(of domain: String) async throws(GatewayError) -> ProbeAnswer
}
