import Foundation

/// Domain names: lowercase LDH labels, no trailing dot, at most 253 characters.
public enum DomainName {
    /// What Apple registers: a valid name with at least two labels whose last label is not
    /// all digits (so no IPv4 literal and no bare `localhost`).
    public static func isRegistrable(_ name: String) -> Bool {
        guard isValid(name), let last = name.split(separator: ".").last, name.contains(".") else { return false }
        return !last.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    public static func isValid(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253, !name.hasSuffix(".") else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        }
    }
}

/// The Web Merchant Registration API's rules, checked before anything is sent to Apple.
public enum MerchantRegistrationRules {
    /// Apple accepts at most 99 domains in one call.
    public static let maximumDomains = 99
    /// Orchard's own cap on identifiers and names, far above anything Apple issues.
    public static let maximumIdentifierLength = 128

    /// `partnerInternalMerchantIdentifier` may use only `a-z A-Z 0-9 ~ - _ + & @ $ ! | , . ;`.
    public static func isValidPartnerIdentifier(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier.utf8.count <= maximumIdentifierLength
            && identifier.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                    || Array("~-_+&@$!|,.;".utf8).contains(byte)
            }
    }

    /// Lowercases and checks a list of domains: 1–99 valid, distinct names.
    public static func domains(_ names: [String]) throws(ApplePayError) -> [String] {
        guard !names.isEmpty, names.count <= maximumDomains else {
            throw ApplePayError(.invalidRegistration, "domainNames must list 1 to \(maximumDomains) domains (got \(names.count))")
        }
        var seen: Set<String> = []
        var domains: [String] = []
        for name in names {
            let lowered = name.lowercased()
            guard DomainName.isRegistrable(lowered) else {
                throw ApplePayError(.invalidRegistration, "\(name.debugDescription) is not a valid domain name")
            }
            guard seen.insert(lowered).inserted else {
                throw ApplePayError(.invalidRegistration, "\(lowered) is listed twice")
            }
            domains.append(lowered)
        }
        return domains
    }

    static func partnerIdentifier(_ identifier: String) throws(ApplePayError) {
        guard isValidPartnerIdentifier(identifier) else {
            throw ApplePayError(
                .invalidRegistration,
                "partnerInternalMerchantIdentifier must be 1–\(maximumIdentifierLength) characters from a-z A-Z 0-9 ~ - _ + & @ $ ! | , . ;"
            )
        }
    }
}

/// `POST /paymentservices/registerMerchant`'s body.
public struct MerchantRegistration: Sendable, Codable, Equatable {
    public var domainNames: [String]
    /// The merchant ID whose payment processing certificate encrypts this merchant's tokens.
    public var encryptTo: String
    public var partnerInternalMerchantIdentifier: String
    /// Also the `displayName` Orchard sends when it asks for this merchant's sessions.
    public var partnerMerchantName: String
    public var merchantUrl: String?

    public init(
        domainNames: [String], encryptTo: String, partnerInternalMerchantIdentifier: String, partnerMerchantName: String,
        merchantUrl: String? = nil
    ) {
        self.domainNames = domainNames
        self.encryptTo = encryptTo
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.partnerMerchantName = partnerMerchantName
        self.merchantUrl = merchantUrl
    }

    /// The same registration with lowercased domains, or the first rule it breaks.
    public func validated() throws(ApplePayError) -> MerchantRegistration {
        var copy = self
        copy.domainNames = try MerchantRegistrationRules.domains(domainNames)
        try MerchantRegistrationRules.partnerIdentifier(partnerInternalMerchantIdentifier)
        guard !encryptTo.isEmpty, encryptTo.utf8.count <= MerchantRegistrationRules.maximumIdentifierLength else {
            throw ApplePayError(.invalidRegistration, "encryptTo must name the merchant ID whose processing certificate encrypts tokens")
        }
        guard !partnerMerchantName.trimmingCharacters(in: .whitespaces).isEmpty,
            partnerMerchantName.count <= MerchantSessionRequest.maximumDisplayNameLength
        else {
            throw ApplePayError(
                .invalidRegistration,
                "partnerMerchantName must be 1–\(MerchantSessionRequest.maximumDisplayNameLength) characters (it is the sheet's display name)"
            )
        }
        if let merchantUrl {
            guard let url = URL(string: merchantUrl), url.scheme?.lowercased() == "https", url.host.map(DomainName.isRegistrable) == true
            else {
                throw ApplePayError(.invalidRegistration, "merchantUrl must be an https URL on a domain name")
            }
        }
        return copy
    }
}

/// `POST /paymentservices/unregisterMerchant`'s body. Removing a merchant's last domain
/// removes the merchant.
public struct MerchantUnregistration: Sendable, Codable, Equatable {
    public var domainNames: [String]
    public var partnerInternalMerchantIdentifier: String
    public var reason: String

    public init(domainNames: [String], partnerInternalMerchantIdentifier: String, reason: String) {
        self.domainNames = domainNames
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.reason = reason
    }

    public func validated() throws(ApplePayError) -> MerchantUnregistration {
        var copy = self
        copy.domainNames = try MerchantRegistrationRules.domains(domainNames)
        try MerchantRegistrationRules.partnerIdentifier(partnerInternalMerchantIdentifier)
        guard !reason.trimmingCharacters(in: .whitespaces).isEmpty, reason.count <= 256 else {
            throw ApplePayError(.invalidRegistration, "reason must be 1–256 characters")
        }
        return copy
    }
}

/// `GET /paymentservices/merchant/{id}`'s answer.
public struct RegisteredMerchantDetails: Sendable, Codable, Equatable {
    public var domainNames: [String]
    public var partnerMerchantName: String?
    public var partnerInternalMerchantIdentifier: String
    public var partnerMerchantValidationURI: String?
    public var encryptTo: String?

    public init(
        domainNames: [String], partnerMerchantName: String?, partnerInternalMerchantIdentifier: String,
        partnerMerchantValidationURI: String?, encryptTo: String?
    ) {
        self.domainNames = domainNames
        self.partnerMerchantName = partnerMerchantName
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.partnerMerchantValidationURI = partnerMerchantValidationURI
        self.encryptTo = encryptTo
    }
}

extension CharacterSet {
    /// RFC 3986 unreserved characters: what a path segment may carry unescaped.
    public static let urlPathSegmentUnreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
