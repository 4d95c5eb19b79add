import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardCore
import Synchronization
import WalletOrders

/// Pushes to Apple's push service (APNs) for Wallet orders: HTTP/2 `POST /3/device/<token>` to the
/// merchant's `walletOrders.apns` origin, authenticated by the Order Type ID certificate (TLS
/// client authentication), with the order type identifier as `apns-topic` and an empty payload,
/// as Apple's Wallet Orders documentation says ("set the push topic as the order type identifier
/// and leave the payload empty").
///
/// With `walletOrders.apns.tokenKey`, the connection carries no client certificate and each push a
/// provider token (an ES256 JWT), made again every 30 minutes: APNs refuses one older than an hour
/// and one made more often than every 20 minutes.
public final class APNsPushClient: WalletOrderPusher {
    let http: CurlHTTPClient
    let time: TimeSource
    private let tokens = Mutex<[String: (token: String, issuedAt: Date)]>([:])

    /// APNs answers with an empty body or a small JSON `{"reason": …}`.
    static let maximumAnswerBytes = 4096
    /// How long a provider token is used before a new one is made.
    static let tokenLifetime: TimeInterval = 30 * 60

    public init(http: CurlHTTPClient, time: TimeSource = .system) {
        self.http = http
        self.time = time
    }

    public func push(token: String, settings: WalletOrdersSettings) async -> WalletOrderPushAnswer {
        var headers = [
            (name: "apns-topic", value: settings.orderTypeIdentifier), (name: "apns-push-type", value: "background"),
            (name: "apns-priority", value: "5"), (name: "content-type", value: "application/json"),
        ]
        var identity: TLSIdentity?
        do {
            if let key = settings.apnsToken {
                headers.append((name: "authorization", value: "bearer \(try providerToken(key))"))
            } else {
                identity = .pem(certificate: try settings.identity.certificateChainPEM, key: try settings.identity.privateKeyPEM)
            }
        } catch {
            return .noAnswer("the APNs credentials cannot be prepared (\(error))")
        }
        var request = CurlRequest(
            method: "POST", url: "\(settings.apns.baseURL)/3/device/\(token)", headers: headers, body: Array("{}".utf8),
            identity: identity, trust: TLSTrust(caPEM: settings.apns.trust.caPEM),
            timeouts: CurlTimeouts(connect: settings.apns.connectTimeout, total: settings.apns.timeout))
        request.requiresHTTP2 = true
        request.concurrencyGroup = "apns:\(settings.orderTypeIdentifier)"
        let response: CurlResponse
        do {
            response = try await http.execute(request)
        } catch {
            return .noAnswer("\(error.kind.rawValue): \(error.message)")
        }
        guard response.httpVersion == 2 else {
            return .noAnswer("\(settings.apns.baseURL) answered over HTTP/\(response.httpVersion), not HTTP/2 as APNs does")
        }
        struct Failure: Decodable { var reason: String? }
        let reason =
            response.body.count <= Self.maximumAnswerBytes
            ? (try? JSONDecoder().decode(Failure.self, from: Data(response.body)))?.reason : nil
        return .status(response.status, reason: reason.map { String($0.prefix(64)) })
    }

    /// The key's current provider token, made again once it is ``tokenLifetime`` old.
    func providerToken(_ key: WalletOrdersSettings.APNsTokenKey) throws -> String {
        let now = time.now
        let name = "\(key.teamId).\(key.keyId)"
        if let cached = tokens.withLock({ $0[name] }), now.timeIntervalSince(cached.issuedAt) < Self.tokenLifetime,
            now >= cached.issuedAt
        {
            return cached.token
        }
        let made = try key.token(issuedAt: now)
        tokens.withLock { $0[name] = (made, now) }
        return made
    }
}
