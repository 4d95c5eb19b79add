import ApplePay
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A Merchant Token Management API call as the mock received it.
public struct ReceivedMerchantTokenCall: Sendable, Equatable {
    public var method: String
    public var path: String
    /// The `x-request-id` header, which Apple requires.
    public var requestId: String?
    public var contentType: String?
    public var body: [UInt8]
    /// The merchant-ID hash in the client certificate that made the call.
    public var clientMerchantHash: String?
    /// What the mock answered.
    public var status: Int
}

/// One attempt of ``MockAppleGateway/notify(tokenNotificationURL:eventId:)``.
public struct SentTokenNotification: Sendable, Equatable {
    public var url: String
    /// The HTTP status, or nil when no answer came (refused, reset, TLS failure, timeout).
    public var status: Int?
}

/// The mock's merchant tokens and events, kept beside (not inside) the gateway's own state.
final class MockMerchantTokens: Sendable {
    struct Event {
        var eventType: String
        var merchantTokenIdentifier: String
        var reason: String
        var metadata: DecryptedPayment.MerchantTokenMetadata?
        var encryptedTokenMetadata: EncryptedTokenMetadata?
        /// Served instead of the fields, byte for byte: a shape Apple's documentation does not show.
        var raw: [UInt8]?
    }

    struct State {
        var events: [String: Event] = [:]
        /// Tokens an event named and that are not unlinked yet.
        var live: Set<String> = []
        var unlinked: [String] = []
        var fetches: [String] = []
        var calls: [ReceivedMerchantTokenCall] = []
        var notifications: [SentTokenNotification] = []
        var faultStatus: Int?
        var resetCalls = false
        /// How the control route mints events' encrypted metadata; nil: it cannot.
        var minting: MockTokenMetadataMinting?
    }

    let state = Mutex(State())
}

extension MockAppleGateway {
    static let merchantTokenPrefix = "/paymentservices/v1/merchantId/"

    /// Makes an event the gateway serves at `…/merchantToken/event/{eventId}`, and makes its token
    /// one the gateway will unlink; returns the new event ID (to pass to ``notify(tokenNotificationURL:eventId:)``).
    /// `encryptedTokenMetadata` (``mintTokenMetadata(_:scheme:tamper:signingTime:)``, or a test's
    /// own minting) is served as `merchantTokenMetadata.encryptedTokenMetadata`.
    public func addTokenEvent(
        eventType: String, merchantTokenIdentifier: String, reason: String = "user",
        metadata: DecryptedPayment.MerchantTokenMetadata? = nil, encryptedTokenMetadata: EncryptedTokenMetadata? = nil
    ) -> String {
        let eventId = UUID().uuidString.lowercased()
        merchantTokens.state.withLock {
            $0.events[eventId] = MockMerchantTokens.Event(
                eventType: eventType, merchantTokenIdentifier: merchantTokenIdentifier, reason: reason, metadata: metadata,
                encryptedTokenMetadata: encryptedTokenMetadata)
            // An UNLINK event ends the token at Apple: unlinking it afterwards is refused as for any unknown token.
            if eventType == "UNLINK" {
                $0.live.remove(merchantTokenIdentifier)
            } else {
                $0.live.insert(merchantTokenIdentifier)
            }
        }
        return eventId
    }

    /// Makes an event served as `body`, byte for byte (a shape a test chooses); returns its ID.
    public func addRawTokenEvent(_ body: [UInt8], merchantTokenIdentifier: String) -> String {
        let eventId = UUID().uuidString.lowercased()
        merchantTokens.state.withLock {
            $0.events[eventId] = MockMerchantTokens.Event(
                eventType: "", merchantTokenIdentifier: merchantTokenIdentifier, reason: "", metadata: nil, raw: body)
            $0.live.insert(merchantTokenIdentifier)
        }
        return eventId
    }

    /// Token identifiers unlinked through the API (answered 204), oldest first.
    public var unlinkedTokens: [String] { merchantTokens.state.withLock { $0.unlinked } }

    /// Event IDs asked for through the API, known or not, oldest first.
    public var tokenEventFetches: [String] { merchantTokens.state.withLock { $0.fetches } }

    /// Every Merchant Token Management API call received, oldest first.
    public var receivedMerchantTokenCalls: [ReceivedMerchantTokenCall] { merchantTokens.state.withLock { $0.calls } }

    /// Every notification attempt ``notify(tokenNotificationURL:eventId:)`` made, oldest first.
    public var tokenNotifications: [SentTokenNotification] { merchantTokens.state.withLock { $0.notifications } }

    /// When set, every well-formed, authorised token call is answered with this status and an
    /// Apple-shaped error (Apple down, say), and changes nothing.
    public var merchantTokenFaultStatus: Int? {
        get { merchantTokens.state.withLock { $0.faultStatus } }
        set { merchantTokens.state.withLock { $0.faultStatus = newValue } }
    }

    /// When set, every Merchant Token Management API call has its connection reset once read,
    /// unanswered and unrecorded: Apple unreachable, while the gateway keeps its port.
    public var merchantTokenCallsReset: Bool {
        get { merchantTokens.state.withLock { $0.resetCalls } }
        set { merchantTokens.state.withLock { $0.resetCalls = newValue } }
    }

    /// Answers one call under `/paymentservices/v1/merchantId/`, and records it.
    func merchantTokenCall(
        method: String, path: String, headers: HTTPHeaders, body: [UInt8], clientMerchantHash: String?
    ) -> (status: Int, body: [UInt8]) {
        let (_, _, partners) = currentFaultsAndMerchants()
        return merchantTokens.state.withLock { state in
            let answer = Self.answerTokenCall(
                method: method, path: path, headers: headers, body: body, clientMerchantHash: clientMerchantHash, partners: partners,
                state: &state, usage: { call, body in self.usageCall(call, body: body) })
            state.calls.append(
                ReceivedMerchantTokenCall(
                    method: method, path: path, requestId: headers["x-request-id"].first, contentType: headers["Content-Type"].first,
                    body: body, clientMerchantHash: clientMerchantHash, status: answer.status))
            return answer
        }
    }

    private static func answerTokenCall(
        method: String, path: String, headers: HTTPHeaders, body: [UInt8], clientMerchantHash: String?,
        partners: [String: MockPartnerMerchant], state: inout MockMerchantTokens.State,
        usage: (String, [UInt8]) -> (status: Int, body: [UInt8])?
    ) -> (status: Int, body: [UInt8]) {
        func error(_ status: Int, _ message: String) -> (status: Int, body: [UInt8]) {
            (status, appleError(status: status, message: "Payment Services Exception " + message))
        }
        // {merchantId}/merchantToken/event/{eventId} or {merchantId}/merchantToken/unlink
        let parts = path.dropFirst(merchantTokenPrefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[1] == "merchantToken", let merchantId = parts[0].removingPercentEncoding, !merchantId.isEmpty
        else { return error(404, "Not Found") }
        let route: (method: String, rest: ArraySlice<String>) = (method, parts[2...])
        let eventId: String?
        var usageCall: String?
        switch route {
        case ("GET", let rest) where rest.count == 2 && rest.first == "event" && !(rest.last ?? "").isEmpty: eventId = rest.last
        case ("POST", let rest) where rest == ["unlink"]: eventId = nil
        case ("POST", let rest) where rest.count == 1 && ["publicKey", "updateMerchantMetadata", "notify"].contains(rest.first ?? ""):
            (eventId, usageCall) = (nil, rest.first)
        default: return error(404, "Not Found")
        }
        // A platform integrator calls with its own certificate for a merchant it registered.
        let client = clientMerchantHash?.uppercased()
        guard client == MerchantIdentifierExtension.hash(of: merchantId) || partners[merchantId]?.platformMerchantHash == client
        else { return error(417, "merchantId=\(merchantId) does not match the client certificate") }
        guard let requestId = headers["x-request-id"].first, !requestId.isEmpty else { return error(400, "x-request-id is required") }
        guard headers["Content-Type"].first?.lowercased().hasPrefix("application/json") == true else {
            return error(400, "Content-Type application/json is required")
        }
        if let usageCall {
            if let fault = state.faultStatus { return error(fault, "Injected fault \(fault)") }
            return usage(usageCall, body) ?? error(404, "Not Found")
        }
        if let eventId {
            state.fetches.append(eventId)
            if let fault = state.faultStatus { return error(fault, "Injected fault \(fault)") }
            guard let event = state.events[eventId] else { return error(400, "unknown eventId=\(eventId)") }
            return (200, event.raw ?? eventJSON(event))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let token = object["merchantTokenIdentifier"] as? String, !token.isEmpty
        else { return error(400, "merchantTokenIdentifier is required") }
        if let fault = state.faultStatus { return error(fault, "Injected fault \(fault)") }
        guard state.live.contains(token) else { return error(400, "merchantTokenIdentifier=\(token) is not valid for this merchant") }
        state.live.remove(token)
        state.unlinked.append(token)
        return (204, [])
    }

    /// Apple's `MerchantTokenEventResponse`, written with Apple's own key names rather than
    /// through Orchard's Codable types, so a test reading it with those types checks them.
    private static func eventJSON(_ event: MockMerchantTokens.Event) -> [UInt8] {
        var object: [String: Any] = [
            "eventType": event.eventType, "merchantTokenIdentifier": event.merchantTokenIdentifier, "reason": event.reason,
        ]
        if event.metadata != nil || event.encryptedTokenMetadata != nil {
            let metadata = event.metadata ?? DecryptedPayment.MerchantTokenMetadata()
            var fields: [String: Any] = [:]
            if let art = metadata.cardArt {
                fields["cardArt"] = art.map { item in
                    [("name", item.name), ("type", item.type), ("url", item.url)].reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
                }
            }
            if let card = metadata.cardMetadata {
                let pairs = [
                    ("cardCountry", card.cardCountry), ("expirationDate", card.expirationDate), ("fpanSuffix", card.fpanSuffix),
                    ("shortDescription", card.shortDescription), ("longDescription", card.longDescription),
                ]
                fields["cardMetadata"] = pairs.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
            }
            if let encrypted = event.encryptedTokenMetadata {
                let pairs = [
                    ("data", encrypted.data), ("ephemeralPublicKey", encrypted.ephemeralPublicKey), ("wrappedKey", encrypted.wrappedKey),
                    ("publicKeyHash", encrypted.publicKeyHash), ("signature", encrypted.signature),
                ]
                fields["encryptedTokenMetadata"] = pairs.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
            }
            object["merchantTokenMetadata"] = fields
        }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    // MARK: Notifications

    /// Sends Apple's notification, `GET {tokenNotificationURL}/notification/merchantToken/{eventId}`
    /// with no body, as Apple does, and returns the HTTP status; on anything but 200 it tries up to
    /// 3 more times at once, as Apple does.
    ///
    /// `eventId` goes into the path as given, so a test can send one Apple would never send.
    /// An https URL must be served with a certificate from the test CA (``Configuration/clientCA``);
    /// no client certificate is sent. Throws when the last attempt got no HTTP answer.
    @discardableResult
    public func notify(tokenNotificationURL: String, eventId: String) async throws -> Int {
        var base = tokenNotificationURL
        while base.hasSuffix("/") { base.removeLast() }
        let url = base + "/notification/merchantToken/" + eventId
        var lastError: (any Error)?
        var lastStatus = 0
        for _ in 0..<4 {
            do {
                lastStatus = try await MockNotificationClient.get(url, trusting: notificationTrust)
                lastError = nil
                merchantTokens.state.withLock { $0.notifications.append(SentTokenNotification(url: url, status: lastStatus)) }
                if lastStatus == 200 { return 200 }
            } catch {
                lastError = error
                merchantTokens.state.withLock { $0.notifications.append(SentTokenNotification(url: url, status: nil)) }
            }
        }
        if let lastError { throw lastError }
        return lastStatus
    }
}

/// A one-request HTTP/1.1 client on NIO: what ``MockAppleGateway/notify(tokenNotificationURL:eventId:)``
/// needs, without a dependency on an HTTP client package.
enum MockNotificationClient {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func get(_ text: String, trusting ca: NIOSSLCertificate?, timeout: Duration = .seconds(10)) async throws -> Int {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { throw Failure(description: "not an http(s) URL: \(text)") }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        // The path as written: URL.path would decode percent-escapes the test meant to send.
        let afterAuthority = text.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }
        let target = afterAuthority.isEmpty ? "/" : String(afterAuthority)
        let tls: NIOSSLContext?
        if scheme == "https" {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let ca { configuration.trustRoots = .certificates([ca]) }
            tls = try NIOSSLContext(configuration: configuration)
        } else {
            tls = nil
        }
        // An IP literal is no SNI name: NIOSSL then checks the certificate against the peer's address.
        let serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
        let channel = try await bootstrap.connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                try sync.addHTTPClientHandlers()
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
        return try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
                    headers.add(name: "Connection", value: "close")
                    try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)))
                    try await outbound.write(.end(nil))
                    var status: Int?
                    for try await part in inbound {
                        switch part {
                        case .head(let head): status = Int(head.status.code)
                        case .body: break
                        case .end:
                            if let status { return status }
                        }
                    }
                    throw Failure(description: "the connection closed before a whole answer")
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Failure(description: "no answer within \(timeout)")
            }
            defer { group.cancelAll() }
            guard let status = try await group.next() else { throw Failure(description: "no answer") }
            return status
        }
    }
}
