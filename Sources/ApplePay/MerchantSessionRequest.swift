/// The body Orchard posts to Apple's `paymentSession` endpoint.
///
/// Every field comes from server configuration, never from the browser.
public struct MerchantSessionRequest: Sendable, Equatable, Codable {
    /// Apple's limit on the display name, in characters.
    public static let maximumDisplayNameLength = 64

    public var merchantIdentifier: String
    public var displayName: String
    public var initiative: String
    public var initiativeContext: String

    /// Builds a web-initiative request; throws when a field breaks Apple's rules.
    public init(merchantIdentifier: String, displayName: String, domain: String) throws(ApplePayError) {
        guard !merchantIdentifier.isEmpty, merchantIdentifier.utf8.count <= 255 else {
            throw ApplePayError(.invalidSessionRequest, "merchantIdentifier must be 1 to 255 bytes")
        }
        guard !displayName.isEmpty, displayName.count <= Self.maximumDisplayNameLength else {
            throw ApplePayError(
                .invalidSessionRequest,
                "displayName must be 1 to \(Self.maximumDisplayNameLength) characters (has \(displayName.count))")
        }
        guard !domain.isEmpty else {
            throw ApplePayError(.invalidSessionRequest, "initiativeContext (the domain) must not be empty")
        }
        self.merchantIdentifier = merchantIdentifier
        self.displayName = displayName
        self.initiative = "web"
        self.initiativeContext = domain
    }
}
