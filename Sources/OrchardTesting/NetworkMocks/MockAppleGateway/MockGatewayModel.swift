import ApplePay
import Foundation
import Synchronization

/// A merchant the mock gateway knows, with the domains registered for it.
public struct MockMerchant: Sendable, Codable, Equatable {
    public var merchantIdentifier: String
    public var domains: [String]

    public init(merchantIdentifier: String, domains: [String]) {
        self.merchantIdentifier = merchantIdentifier
        self.domains = domains
    }
}

/// Faults the mock gateway injects into merchant-session answers.
public struct MockGatewayFaults: Sendable, Equatable {
    /// Waits this long before answering.
    public var latency: Duration
    /// Answers every session request with this HTTP status and an Apple-shaped error.
    public var status: Int?
    /// Resets the TCP connection (RST) after reading the request, answering nothing.
    public var resetConnection: Bool
    /// Sends half the body, waits this long, then sends the rest.
    public var slowBody: Duration?

    public init(latency: Duration = .zero, status: Int? = nil, resetConnection: Bool = false, slowBody: Duration? = nil) {
        self.latency = latency
        self.status = status
        self.resetConnection = resetConnection
        self.slowBody = slowBody
    }

    public static let none = MockGatewayFaults()
}

/// What the mock gateway has seen; read by tests to prove connection reuse and mTLS.
public final class MockGatewayStats: Sendable {
    let connectionsCount = Atomic<Int>(0)
    let handshakesCount = Atomic<Int>(0)
    let failedHandshakesCount = Atomic<Int>(0)
    let requestsCount = Atomic<Int>(0)
    let sessionsCount = Atomic<Int>(0)

    /// TCP connections accepted.
    public var connections: Int { connectionsCount.load(ordering: .relaxed) }
    /// TLS handshakes completed (client certificate verified).
    public var tlsHandshakes: Int { handshakesCount.load(ordering: .relaxed) }
    /// TLS handshakes that failed (no or untrusted client certificate, say).
    public var failedHandshakes: Int { failedHandshakesCount.load(ordering: .relaxed) }
    /// HTTP requests received over completed handshakes.
    public var requests: Int { requestsCount.load(ordering: .relaxed) }
    /// Merchant sessions issued.
    public var sessionsIssued: Int { sessionsCount.load(ordering: .relaxed) }

    /// A JSON snapshot, as served at `GET /_mock/stats`.
    public var snapshot: Snapshot {
        Snapshot(
            connections: connections, tlsHandshakes: tlsHandshakes, failedHandshakes: failedHandshakes,
            requests: requests, sessionsIssued: sessionsIssued)
    }

    public struct Snapshot: Codable, Sendable, Equatable {
        public var connections: Int
        public var tlsHandshakes: Int
        public var failedHandshakes: Int
        public var requests: Int
        public var sessionsIssued: Int
    }
}

/// A merchant-session request body as the mock received it.
public struct ReceivedSessionRequest: Sendable, Equatable {
    public var path: String
    /// The JSON body's string fields.
    public var fields: [String: String]
    /// The merchant-ID hash in the client certificate that made the call.
    public var clientMerchantHash: String?
}

/// The mock's rules for a session request, the same ones Apple applies.
enum MockSessionRules {
    struct Rejection: Error {
        var status: Int
        var message: String
    }

    /// Validates a session request body; returns the fields of the session to issue.
    static func validate(
        path: String, body: [UInt8], clientMerchantHash: String?, merchants: [MockMerchant],
        partners: [String: MockPartnerMerchant] = [:]
    ) -> Result<(merchant: String, domain: String, displayName: String, fields: [String: String]), Rejection> {
        // Apple's fields are all strings: anything else is malformed.
        guard let fields = try? JSONDecoder().decode([String: String].self, from: Data(body)) else {
            return .failure(Rejection(status: 400, message: "Malformed Json"))
        }
        guard let merchantIdentifier = fields["merchantIdentifier"], !merchantIdentifier.isEmpty else {
            return .failure(Rejection(status: 400, message: "Payment Services Exception merchantIdentifier is required"))
        }
        guard let displayName = fields["displayName"], !displayName.isEmpty else {
            return .failure(Rejection(status: 400, message: "Payment Services Exception displayName is required"))
        }
        guard displayName.count <= MerchantSessionRequest.maximumDisplayNameLength else {
            return .failure(Rejection(status: 400, message: "Payment Services Exception displayName exceeds 64 characters"))
        }
        let domain: String
        if path.hasSuffix("/startSession") && fields["initiative"] == nil {
            guard let name = fields["domainName"], !name.isEmpty else {
                return .failure(Rejection(status: 400, message: "Payment Services Exception domainName is required"))
            }
            domain = name
        } else {
            guard fields["initiative"] == "web" else {
                return .failure(
                    Rejection(status: 400, message: "Payment Services Exception initiative=\(fields["initiative"] ?? "") not supported"))
            }
            guard let context = fields["initiativeContext"], !context.isEmpty else {
                return .failure(Rejection(status: 400, message: "Payment Services Exception initiativeContext is required"))
            }
            domain = context
        }
        // A platform integrator asks with its own certificate for a merchant it registered.
        if let partner = partners[merchantIdentifier], partner.platformMerchantHash == clientMerchantHash?.uppercased() {
            guard partner.domainNames.contains(domain) else {
                return .failure(
                    Rejection(
                        status: 400,
                        message: "Payment Services Exception merchantId=\(merchantIdentifier) not registered for domain=\(domain)"))
            }
            return .success((merchantIdentifier, domain, displayName, fields))
        }
        guard clientMerchantHash?.uppercased() == MerchantIdentifierExtension.hash(of: merchantIdentifier) else {
            return .failure(
                Rejection(
                    status: 417,
                    message: "Payment Services Exception merchantId=\(merchantIdentifier) does not match the client certificate"))
        }
        guard let merchant = merchants.first(where: { $0.merchantIdentifier == merchantIdentifier }) else {
            return .failure(Rejection(status: 400, message: "Payment Services Exception merchantId=\(merchantIdentifier) not registered"))
        }
        guard merchant.domains.contains(domain) else {
            return .failure(
                Rejection(
                    status: 400,
                    message: "Payment Services Exception merchantId=\(merchantIdentifier) not registered for domain=\(domain)"))
        }
        return .success((merchantIdentifier, domain, displayName, fields))
    }
}

/// A merchant a platform integrator registered through the Web Merchant Registration API.
public struct MockPartnerMerchant: Sendable, Codable, Equatable {
    public var partnerInternalMerchantIdentifier: String
    public var partnerMerchantName: String
    public var encryptTo: String
    public var merchantUrl: String?
    public var domainNames: [String]
    /// The merchant-ID hash of the platform integrator certificate that registered it.
    public var platformMerchantHash: String
}

/// A registration API call as the mock received it.
public struct ReceivedRegistrationCall: Sendable, Equatable {
    public var method: String
    public var path: String
    public var body: [UInt8]
    public var clientMerchantHash: String?
}

/// The mock's rules for the Web Merchant Registration API, modelled on Apple's documented
/// fields and the errors Apple is known to send.
enum MockRegistrationRules {
    typealias Rejection = MockSessionRules.Rejection

    static let unauthorized = Rejection(status: 401, message: "Payment Services Exception Unauthorized")

    /// Apple's 401 for a client certificate that is no platform's, saying it is the mock's and
    /// which identities it accepts (Apple's own words alone read as a revoked certificate).
    static func unknownPlatform(_ merchants: [MockMerchant]) -> Rejection {
        Rejection(
            status: 401,
            message:
                "Payment Services Exception Unauthorized (orchard-sandbox's mock Apple gateway: it accepts as a platform integrator only an identity certificate of its test CA for \(merchants.map(\.merchantIdentifier).joined(separator: ", ")); orchard-sandbox demo --platform gives Orchard such an identity)"
        )
    }
    static let malformed = Rejection(status: 400, message: "Malformed Json")

    /// The platform integrator calling: a known merchant whose ID hash is in the client certificate.
    static func platform(clientMerchantHash: String?, merchants: [MockMerchant]) -> MockMerchant? {
        guard let hash = clientMerchantHash?.uppercased() else { return nil }
        return merchants.first { MerchantIdentifierExtension.hash(of: $0.merchantIdentifier) == hash }
    }

    struct Fields {
        var object: [String: Any]

        func string(_ key: String) -> String? { object[key] as? String }

        /// `domainNames` must be an array of strings: a bare string is "Malformed Json", as at Apple.
        func domains() -> [String]? {
            guard let array = object["domainNames"] as? [Any] else { return nil }
            let strings = array.compactMap { $0 as? String }
            return strings.count == array.count ? strings : nil
        }
    }

    static func parse(_ body: [UInt8]) -> Fields? {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]).map(Fields.init)
    }

    static func checkDomains(_ domains: [String]) -> Rejection? {
        guard !domains.isEmpty else { return Rejection(status: 400, message: "Payment Services Exception domainNames is required") }
        guard domains.count <= MerchantRegistrationRules.maximumDomains else {
            return Rejection(status: 400, message: "Payment Services Exception domainNames exceeds 99 entries")
        }
        if let bad = domains.first(where: { !DomainName.isRegistrable($0) }) {
            return Rejection(status: 400, message: "Payment Services Exception invalid domain name \(bad)")
        }
        return nil
    }

    static func register(
        body: [UInt8], clientMerchantHash: String?, merchants: [MockMerchant], partners: inout [String: MockPartnerMerchant]
    ) -> Rejection? {
        guard let platform = platform(clientMerchantHash: clientMerchantHash, merchants: merchants) else {
            return unknownPlatform(merchants)
        }
        guard let fields = parse(body), let domains = fields.domains() else { return malformed }
        guard let identifier = fields.string("partnerInternalMerchantIdentifier"),
            MerchantRegistrationRules.isValidPartnerIdentifier(identifier)
        else {
            return Rejection(status: 400, message: "Payment Services Exception partnerInternalMerchantIdentifier is invalid")
        }
        guard let name = fields.string("partnerMerchantName"), !name.isEmpty else {
            return Rejection(status: 400, message: "Payment Services Exception partnerMerchantName is required")
        }
        guard let encryptTo = fields.string("encryptTo"), encryptTo == platform.merchantIdentifier else {
            return Rejection(status: 400, message: "Payment Services Exception encryptTo must be the platform integrator's merchant ID")
        }
        if let rejection = checkDomains(domains) { return rejection }
        let platformHash = MerchantIdentifierExtension.hash(of: platform.merchantIdentifier)
        if let existing = partners[identifier], existing.platformMerchantHash != platformHash { return unauthorized }
        for domain in domains {
            if let owner = partners.values.first(where: {
                $0.partnerInternalMerchantIdentifier != identifier && $0.domainNames.contains(domain)
            }) {
                return Rejection(
                    status: 400,
                    message:
                        "Payment Services Exception domain \(domain) is already registered to \(owner.partnerInternalMerchantIdentifier)")
            }
        }
        var merchant =
            partners[identifier]
            ?? MockPartnerMerchant(
                partnerInternalMerchantIdentifier: identifier, partnerMerchantName: name, encryptTo: encryptTo, merchantUrl: nil,
                domainNames: [], platformMerchantHash: platformHash)
        merchant.partnerMerchantName = name
        merchant.merchantUrl = fields.string("merchantUrl")
        merchant.domainNames += domains.filter { !merchant.domainNames.contains($0) }
        partners[identifier] = merchant
        return nil
    }

    static func unregister(
        body: [UInt8], clientMerchantHash: String?, merchants: [MockMerchant], partners: inout [String: MockPartnerMerchant]
    ) -> Rejection? {
        guard let platform = platform(clientMerchantHash: clientMerchantHash, merchants: merchants) else {
            return unknownPlatform(merchants)
        }
        guard let fields = parse(body), let domains = fields.domains() else { return malformed }
        guard let identifier = fields.string("partnerInternalMerchantIdentifier"), let reason = fields.string("reason"), !reason.isEmpty
        else {
            return Rejection(status: 400, message: "Payment Services Exception partnerInternalMerchantIdentifier and reason are required")
        }
        if let rejection = checkDomains(domains) { return rejection }
        guard var merchant = partners[identifier],
            merchant.platformMerchantHash == MerchantIdentifierExtension.hash(of: platform.merchantIdentifier)
        else {
            return Rejection(status: 404, message: "Payment Services Exception merchant \(identifier) not found")
        }
        if let missing = domains.first(where: { !merchant.domainNames.contains($0) }) {
            return Rejection(status: 400, message: "Payment Services Exception domain \(missing) is not registered to \(identifier)")
        }
        merchant.domainNames.removeAll { domains.contains($0) }
        partners[identifier] = merchant.domainNames.isEmpty ? nil : merchant
        return nil
    }

    static func details(
        identifier: String, clientMerchantHash: String?, merchants: [MockMerchant], partners: [String: MockPartnerMerchant]
    ) -> Result<[UInt8], Rejection> {
        guard let platform = platform(clientMerchantHash: clientMerchantHash, merchants: merchants) else {
            return .failure(unknownPlatform(merchants))
        }
        guard let merchant = partners[identifier],
            merchant.platformMerchantHash == MerchantIdentifierExtension.hash(of: platform.merchantIdentifier)
        else {
            return .failure(Rejection(status: 404, message: "Payment Services Exception merchant \(identifier) not found"))
        }
        let details = RegisteredMerchantDetails(
            domainNames: merchant.domainNames, partnerMerchantName: merchant.partnerMerchantName,
            partnerInternalMerchantIdentifier: merchant.partnerInternalMerchantIdentifier,
            partnerMerchantValidationURI: "https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
            encryptTo: merchant.encryptTo)
        return .success(Array((try? JSONEncoder().encode(details)) ?? Data()))
    }
}
