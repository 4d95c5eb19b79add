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

    /// The refusal of a registration whose partner ID differs from a registered one's only in
    /// letter case (`ACME` beside `acme`): one tenant to an operator, two to a string compare.
    /// The stores keep one per lowered ID, so of two instances registering both at once one wins.
    /// `registered` is nil when the store knows only that its index refused (another instance
    /// committed the variant a moment ago).
    public static func caseVariant(_ id: String, of registered: String?) -> CoreError {
        guard let registered else {
            return CoreError(
                .identifierTaken,
                "\(id) differs only in letter case from a merchant registered a moment ago: choose another identifier, or use that one")
        }
        return CoreError(
            .identifierTaken,
            "\(id) differs from the registered merchant \(registered) only in letter case: choose another identifier, or use \(registered)")
    }

    /// Why a store will not take its case-insensitive index while `groups` (each the partner
    /// IDs, comma-separated, that differ only in letter case) are registered, and what to run.
    public static func caseVariantsRefusal(_ groups: [String]) -> String {
        "the registry holds partner IDs that differ only in letter case (\(groups.joined(separator: "; "))): this Orchard keeps one "
            + "registered merchant per partner ID in any letter case and does not start until one of each is left. Keep one of each; "
            + "unregister the others' domains through a server of the previous release: orchard domains unregister --partner-id ID "
            + "--domain DOMAIN... --reason TEXT (orchard domains show --partner-id ID lists them), then run orchard migrate again"
    }
}
