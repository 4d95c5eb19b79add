import ApplePay
import CurlClient
import Foundation
import Logging
import Metrics
import OrchardCore

/// What the session and registration clients share: Apple's gateway origin, its trust and
/// timeouts, and one libcurl client (one connection pool) for both, each call over mutual TLS
/// with the caller's identity.
struct AppleGatewayConnection: Sendable {
    let http: CurlHTTPClient
    let endpoint: RemoteEndpoint

    /// Sends one JSON call; transport failures become ``GatewayError`` (timed out, unreachable, or
    /// busy when `group` or the gateway already has as many calls in flight as allowed), any HTTP
    /// answer is returned for the caller to judge. `call` names it in the metrics (`session`,
    /// `registration` or `merchant_token`). `alwaysJSON` sends the JSON Content-Type without a
    /// body too (Apple's token API requires it on a GET); `extraHeaders` are sent as given.
    func send(
        _ method: String, path: String, body: [UInt8]?, identity: MerchantIdentity, call: String, group: String? = nil,
        alwaysJSON: Bool = false, extraHeaders: [(name: String, value: String)] = []
    ) async throws(GatewayError)
        -> CurlResponse
    {
        var headers: [(name: String, value: String)] = [(name: "Accept", value: "application/json")]
        if body != nil || alwaysJSON { headers.append((name: "Content-Type", value: "application/json")) }
        headers += extraHeaders
        let trust = TLSTrust(caPEM: endpoint.trust.caPEM)
        var request = CurlRequest(
            method: method, url: endpoint.baseURL + path, headers: headers, body: body,
            identity: .pem(certificate: identity.certificatePEM, key: identity.keyPEM), trust: trust,
            timeouts: CurlTimeouts(connect: endpoint.connectTimeout, total: endpoint.timeout))
        request.concurrencyGroup = group
        let started = ContinuousClock.now
        do {
            let response = try await http.execute(request)
            GatewayMetrics.answered(call: call, response: response, elapsed: ContinuousClock.now - started)
            return response
        } catch {
            GatewayMetrics.failed(call: call, kind: error.kind.rawValue, elapsed: ContinuousClock.now - started)
            switch error.kind {
            case .timedOut: throw GatewayError(.timedOut, "no answer within \(endpoint.timeout) (\(error.message))")
            case .busy: throw GatewayError(.busy, error.message)
            default: throw GatewayError(.unreachable, "\(error.kind.rawValue): \(error.message)")
            }
        }
    }

    /// Apple's `statusMessage` from an error body, or the body's first bytes.
    static func appleMessage(_ body: [UInt8]) -> String {
        (try? JSONDecoder().decode(AppleErrorBody.self, from: Data(body)))?.statusMessage
            ?? String(decoding: body.prefix(200), as: UTF8.self)
    }

    /// Apple's error answer: `{"statusCode": "400", "statusMessage": "…"}`.
    private struct AppleErrorBody: Decodable {
        var statusMessage: String
    }
}

/// Apple gateway metrics (swift-metrics only): latency, failures by kind, and whether each call
/// paid for a new TLS handshake or reused a connection (libcurl's count of connections it opened).
enum GatewayMetrics {
    static func answered(call: String, response: CurlResponse, elapsed: Duration) {
        record(call: call, elapsed: elapsed)
        if response.newConnections > 0 {
            Counter(label: "orchard_apple_gateway_tls_handshakes_total", dimensions: [("call", call)]).increment(
                by: response.newConnections)
        } else {
            Counter(label: "orchard_apple_gateway_reused_connections_total", dimensions: [("call", call)]).increment()
        }
        if !(200..<300).contains(response.status) {
            Counter(
                label: "orchard_apple_gateway_errors_total", dimensions: [("call", call), ("kind", "status_\(response.status / 100)xx")]
            )
            .increment()
        }
    }

    /// No HTTP answer: `kind` is the transport's (connectFailed, tls, timedOut, connectionLost, …).
    static func failed(call: String, kind: String, elapsed: Duration) {
        record(call: call, elapsed: elapsed)
        Counter(label: "orchard_apple_gateway_errors_total", dimensions: [("call", call), ("kind", kind)]).increment()
    }

    private static func record(call: String, elapsed: Duration) {
        let (seconds, attoseconds) = elapsed.components
        Timer(label: "orchard_apple_gateway_request_duration_seconds", dimensions: [("call", call)])
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
