import ApplePay
import CurlClient
import Foundation
import Logging
import Metrics

/// Obtains merchant sessions from Apple (or a stand-in).
public protocol MerchantSessionService: Sendable {
    /// Returns Apple's session body, unchanged.
    func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(OrchardError) -> [UInt8]
}

/// Calls Apple's `paymentSession` endpoint over mutual TLS with the merchant's identity.
public struct AppleGatewayClient: MerchantSessionService {
    let http: CurlHTTPClient
    let endpoint: String
    let trust: TLSTrust
    let timeouts: CurlTimeouts
    let logger: Logger

    public init(http: CurlHTTPClient, configuration: ServerConfiguration, logger: Logger) {
        self.http = http
        self.endpoint = configuration.gatewayBaseURL + "/paymentservices/paymentSession"
        self.trust = configuration.gatewayTrust
        self.timeouts = configuration.gatewayTimeouts
        self.logger = logger
    }

    public func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(OrchardError)
        -> [UInt8]
    {
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            throw OrchardError(.internalError, "cannot encode the session request")
        }
        let started = ContinuousClock.now
        let response: CurlResponse
        do {
            response = try await http.execute(
                CurlRequest(
                    method: "POST", url: endpoint,
                    headers: [(name: "Content-Type", value: "application/json"), (name: "Accept", value: "application/json")],
                    body: Array(body), identity: merchant.tlsIdentity, trust: trust, timeouts: timeouts))
        } catch {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", error.kind.rawValue)]).increment()
            logger.error(
                "merchant session call failed",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "error": "\(error)"])
            switch error.kind {
            case .timedOut:
                throw OrchardError(.gatewayTimeout, "Apple Pay did not answer in time; please try again")
            case .cancelled:
                throw OrchardError(.gatewayUnavailable, "the request was cancelled")
            default:
                throw OrchardError(.gatewayUnavailable, "Apple Pay could not be reached; please try again")
            }
        }
        let elapsed = ContinuousClock.now - started
        Timer(label: "orchard_merchant_session_duration").recordNanoseconds(
            elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        guard (200..<300).contains(response.status) else {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "rejected")]).increment()
            // Apple's message is for the operator's log only, never for the browser.
            let apple = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
            logger.error(
                "Apple rejected the merchant session request",
                metadata: [
                    "merchant": "\(merchant.merchantIdentifier)", "domain": "\(request.initiativeContext)",
                    "status": "\(response.status)",
                    "statusMessage":
                        "\(apple["statusMessage"].map { "\($0)" } ?? String(decoding: response.body.prefix(200), as: UTF8.self))",
                ])
            throw OrchardError(
                .gatewayRejected,
                "Apple Pay refused the merchant validation (HTTP \(response.status)); the merchant's setup needs attention")
        }
        guard Self.looksLikeJSONObject(response.body) else {
            Counter(label: "orchard_merchant_sessions_total", dimensions: [("outcome", "malformed")]).increment()
            logger.error("Apple's session answer is not a JSON object", metadata: ["merchant": "\(merchant.merchantIdentifier)"])
            throw OrchardError(.gatewayRejected, "Apple Pay sent an unreadable merchant session")
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
