import ApplePay
import Crypto
import Foundation

/// A merchant a platform integrator registered with Apple, as the registry keeps it.
public struct RegisteredMerchant: Sendable, Codable, Equatable {
    public var partnerIdentifier: String
    public var name: String
    public var encryptTo: String
    public var merchantUrl: String?
    /// Lowercased, in registration order.
    public var domains: [String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        partnerIdentifier: String, name: String, encryptTo: String, merchantUrl: String?, domains: [String], createdAt: Date,
        updatedAt: Date
    ) {
        self.partnerIdentifier = partnerIdentifier
        self.name = name
        self.encryptTo = encryptTo
        self.merchantUrl = merchantUrl
        self.domains = domains
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A registration without domains is leaving: unregistering its last domain took them out of
    /// the registry before Apple was asked (``TenantRetirement/stopServing(_:)``), and its
    /// retirement has not finished. Nothing serves, watches or repairs it.
    public var isLeaving: Bool { domains.isEmpty }
}

extension RegisteredMerchant {
    /// The refusal of a registration naming a domain another merchant holds.
    public static func domainTaken(_ domain: String) -> CoreError {
        CoreError(.domainTaken, "\(domain) is already registered to another merchant")
    }
}
