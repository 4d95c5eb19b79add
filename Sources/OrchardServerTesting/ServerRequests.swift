import ApplePay
import CurlClient
import Foundation
import OrchardConfigurationTesting
import OrchardCore
import OrchardTesting

/// How a test talks to the server, whichever way its requests reach it: ``RouterHarness`` answers
/// in process on in-memory dependencies; the integration harness also over a socket.
public protocol ServerRequests: Sendable {
    /// `method path` on `host` with these headers, answered as the HTTP server answers it.
    func respond(_ method: String, _ path: String, host: String, headers: [(name: String, value: String)], body: [UInt8]?)
        async throws -> CurlResponse
    /// Where ``apiKey(for:)`` puts a key, as `orchard keys create` does.
    var apiKeys: any APIKeys { get }
}

extension ServerRequests {
    /// A request to the server, as a browser on `host` would send it.
    public func send(
        _ method: String, _ path: String, host: String = TestConfiguration.domain, body: [UInt8]? = nil,
        extraHeaders: [(name: String, value: String)] = []
    ) async throws -> CurlResponse {
        var headers: [(name: String, value: String)] = [(name: "Host", value: host)] + extraHeaders
        if body != nil { headers.append((name: "Content-Type", value: "application/json")) }
        return try await respond(method, path, host: host, headers: headers, body: body)
    }

    /// Creates a secret API key for `merchant` straight in the store, as `orchard keys create` does.
    public func apiKey(for merchant: String = TestMaterial.merchantIdentifier) async throws -> String {
        let (record, secret) = APIKeyRecord.generate(merchantIdentifier: merchant, at: Date())
        try await apiKeys.insertAPIKey(record)
        return secret
    }

    /// A payments-API call from the shop's backend.
    public func api(
        _ method: String, _ path: String, key: String, json: String? = nil, idempotencyKey: String? = nil
    ) async throws -> CurlResponse {
        var headers = [(name: "Authorization", value: "Bearer \(key)")]
        if let idempotencyKey { headers.append((name: "Idempotency-Key", value: idempotencyKey)) }
        return try await send(method, path, host: "api.internal", body: json.map { Array($0.utf8) }, extraHeaders: headers)
    }
}

extension CurlResponse {
    public var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    public var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    public var errorMessage: String? { (json?["error"] as? [String: Any])?["message"] as? String }
}
