import ApplePay

/// What a processor is handed: the verified, decrypted payment for an order.
public struct AuthorizationRequest: Sendable {
    public var order: OrderRecord
    public var token: PaymentToken
    public var payment: DecryptedPayment
}

/// What a processor answered.
public struct AuthorizationOutcome: Sendable, Equatable {
    public enum Status: String, Sendable {
        case authorized
        case refused
    }

    public var status: Status
    public var reference: String?
    /// A message safe to show the shopper when refused.
    public var shopperMessage: String?

    public init(status: Status, reference: String? = nil, shopperMessage: String? = nil) {
        self.status = status
        self.reference = reference
        self.shopperMessage = shopperMessage
    }
}

/// Hands a payment to a payment service provider.
public protocol PaymentProcessor: Sendable {
    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome
}

/// Records the authorization for a back office to process: Orchard's default.
public struct RecordOnlyProcessor: PaymentProcessor {
    public init() {}

    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        AuthorizationOutcome(status: .authorized, reference: "recorded:\(request.order.id)")
    }
}
