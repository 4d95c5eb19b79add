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
        path: String, body: [UInt8], clientMerchantHash: String?, merchants: [MockMerchant]
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
