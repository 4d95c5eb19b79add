import CurlClient
import Foundation
import Logging
import OrchardCore
import WalletOrders

/// Pushes to Apple's push service (APNs) for Wallet orders: HTTP/2 `POST /3/device/<token>` to the
/// merchant's `walletOrders.apns` origin, authenticated by the Order Type ID certificate (TLS
/// client authentication), with the order type identifier as `apns-topic` and an empty payload,
/// as Apple's Wallet Orders documentation says ("set the push topic as the order type identifier
/// and leave the payload empty").
public struct APNsPushClient: WalletOrderPusher {
    let http: CurlHTTPClient

    /// APNs answers with an empty body or a small JSON `{"reason": …}`.
    static let maximumAnswerBytes = 4096

    public init(http: CurlHTTPClient) {
        self.http = http
    }

    public func push(token: String, settings: WalletOrdersSettings) async -> WalletOrderPushAnswer {
        let identity: TLSIdentity
        do {
            identity = .pem(certificate: try settings.identity.certificateChainPEM, key: try settings.identity.privateKeyPEM)
        } catch {
            return .noAnswer("the Order Type ID identity cannot be written as PEM")
        }
        var request = CurlRequest(
            method: "POST", url: "\(settings.apns.baseURL)/3/device/\(token)",
            headers: [
                (name: "apns-topic", value: settings.orderTypeIdentifier), (name: "apns-push-type", value: "background"),
                (name: "apns-priority", value: "5"), (name: "content-type", value: "application/json"),
            ],
            body: Array("{}".utf8), identity: identity, trust: TLSTrust(caPEM: settings.apns.trust.caPEM),
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
}
