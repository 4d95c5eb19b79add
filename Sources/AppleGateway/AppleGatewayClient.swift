import ApplePay
import CurlClient
import Foundation
import Logging
import Metrics
import OrchardCore

/// Calls Apple's `paymentSession` endpoint over mutual TLS with the merchant's identity.
public struct AppleGatewayClient: MerchantSessionService {
    let connection: AppleGatewayConnection
    let logger: Logger

    /// - Parameters:
    ///   - http: the shared libcurl client.
    ///   - endpoint: Apple's gateway origin (`https://apple-pay-gateway.apple.com`), or a test gateway.
    public init(http: CurlHTTPClient, endpoint: RemoteEndpoint, logger: Logger) {
        self.connection = AppleGatewayConnection(http: http, endpoint: endpoint)
        self.logger = logger
    }

    public func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> [UInt8]
    {
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            throw GatewayError(.invalidRequest, "cannot encode the session request")
        }
        let started = ContinuousClock.now
        let response: CurlResponse
        do {
            response = try await connection.send(
                "POST", path: "/paymentservices/paymentSession", body: Array(body), identity: merchant.identity, call: "session",
                // One merchant's burst cannot take every call to Apple the process allows.
                group: "merchant-sessions " + merchant.merchantIdentifier)
        } catch {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "\(error.kind)")]).increment()
            logger.error(
                "merchant session call failed",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "error": "\(error.message)", "hint": "\(error.hint)"])
            throw error
        }
        // Its latency is the gateway's `orchard_apple_gateway_request_duration_seconds{call="session"}`.
        let elapsed = ContinuousClock.now - started
        guard (200..<300).contains(response.status) else {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "rejected")]).increment()
            // Apple's message is for the operator's log only, never for the browser.
            let rejection = GatewayError(
                .rejected, "Apple refused the merchant validation", appleStatus: response.status,
                appleMessage: AppleGatewayConnection.appleMessage(response.body))
            logger.error(
                "Apple rejected the merchant session request",
                metadata: [
                    "merchant": "\(merchant.merchantIdentifier)", "domain": "\(request.initiativeContext)",
                    "status": "\(response.status)", "statusMessage": "\(rejection.appleMessage ?? "")", "hint": "\(rejection.hint)",
                ])
            throw rejection
        }
        guard Self.looksLikeJSONObject(response.body) else {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "malformed")]).increment()
            logger.error("Apple's session answer is not a JSON object", metadata: ["merchant": "\(merchant.merchantIdentifier)"])
            throw GatewayError(.unreadable, "Apple sent an unreadable merchant session")
        }
        Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "success")]).increment()
        logger.info(
            "merchant session obtained",
            metadata: [
                "merchant": "\(merchant.merchantIdentifier)", "domain": "\(request.initiativeContext)",
                "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
                "newConnection": "\(response.newConnections > 0)",
            ])
        return response.body
    }

    /// A cheap shape check: the session is opaque and passed on unchanged, so it is not parsed.
    static func looksLikeJSONObject(_ body: [UInt8]) -> Bool {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        guard let first = body.firstIndex(where: { !whitespace.contains($0) }),
            let last = body.lastIndex(where: { !whitespace.contains($0) })
        else { return false }
        return body[first] == UInt8(ascii: "{") && body[last] == UInt8(ascii: "}")
    }
}
