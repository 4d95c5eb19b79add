import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardCore

/// What the session and registration clients share: Apple's gateway origin, its trust and
/// timeouts, and one libcurl client (one connection pool) for both, each call over mutual TLS
/// with the caller's identity.
struct AppleGatewayConnection: Sendable {
    let http: CurlHTTPClient
    let endpoint: RemoteEndpoint

    /// Sends one JSON call; transport failures become ``GatewayError`` (timed out, unreachable, or
    /// busy when `group` or the gateway already has as many calls in flight as allowed), any HTTP
    /// answer is returned for the caller to judge.
    func send(_ method: String, path: String, body: [UInt8]?, identity: MerchantIdentity, group: String? = nil) async throws(GatewayError)
        -> CurlResponse
    {
        var headers: [(name: String, value: String)] = [(name: "Accept", value: "application/json")]
        if body != nil { headers.append((name: "Content-Type", value: "application/json")) }
        let trust = TLSTrust(caPEM: endpoint.trust.caPEM)
        var request = CurlRequest(
            method: method, url: endpoint.baseURL + path, headers: headers, body: body,
            identity: .pem(certificate: identity.certificatePEM, key: identity.keyPEM), trust: trust,
            timeouts: CurlTimeouts(connect: endpoint.connectTimeout, total: endpoint.timeout))
        request.concurrencyGroup = group
        do {
            return try await http.execute(request)
        } catch {
            switch error.kind {
            case .timedOut: throw GatewayError(.timedOut, "no answer within \(endpoint.timeout) (\(error.message))")
            case .busy: throw GatewayError(.busy, error.message)
            default: throw GatewayError(.unreachable, "\(error.kind.rawValue): \(error.message)")
            }
        }
    }

    /// Apple's `statusMessage` from an error body, or the body's first bytes.
    static func appleMessage(_ body: [UInt8]) -> String {
        let json = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        return (json["statusMessage"] as? String) ?? String(decoding: body.prefix(200), as: UTF8.self)
    }
}
