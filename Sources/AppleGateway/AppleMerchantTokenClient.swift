import ApplePay
import CurlClient
import Foundation
import Logging
import Metrics
import OrchardCore

/// Calls Apple's Merchant Token Management API (event details, unlink) over mutual TLS with the
/// merchant's identity, through the same libcurl client (and connection pool) as merchant sessions.
public struct AppleMerchantTokenClient: MerchantTokenService {
    let connection: AppleGatewayConnection
    let logger: Logger

    /// The largest event body read: Apple's documented fields fit in a few kilobytes, so more is
    /// not an event (the libcurl client's own cap bounds the transfer itself).
    static let maximumEventBytes = 64 * 1024

    /// - Parameters:
    ///   - http: the shared libcurl client.
    ///   - endpoint: Apple's gateway origin (`https://apple-pay-gateway.apple.com`), or a test gateway.
    public init(http: CurlHTTPClient, endpoint: RemoteEndpoint, logger: Logger) {
        self.connection = AppleGatewayConnection(http: http, endpoint: endpoint)
        self.logger = logger
    }

    public func event(id: String, for merchant: MerchantConfiguration) async throws(GatewayError) -> MerchantTokenEvent {
        guard MerchantTokenEvent.isValidIdentifier(id) else {
            Self.count("event", "invalid")
            throw GatewayError(.invalidRequest, "the merchant token event ID is not 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        let response = try await call("GET", "/event/" + id, body: nil, merchant: merchant, what: "event", subject: ["eventId": "\(id)"])
        guard response.body.count <= Self.maximumEventBytes,
            let wire = try? JSONDecoder().decode(WireEvent.self, from: Data(response.body)),
            !wire.eventType.isEmpty, !wire.merchantTokenIdentifier.isEmpty
        else {
            Self.count("event", "malformed")
            logger.error(
                "Apple's merchant token event is not readable",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "eventId": "\(id)", "bytes": "\(response.body.count)"])
            throw GatewayError(.unreadable, "Apple sent an unreadable merchant token event")
        }
        Self.count("event", "success")
        // The card's metadata (suffix, expiry, descriptions) stays out of the log.
        logger.info(
            "merchant token event fetched",
            metadata: [
                "merchant": "\(merchant.merchantIdentifier)", "eventId": "\(id)", "eventType": "\(wire.eventType)",
                "merchantTokenIdentifier": "\(wire.merchantTokenIdentifier)",
            ])
        return MerchantTokenEvent(
            eventType: wire.eventType, merchantTokenIdentifier: wire.merchantTokenIdentifier, reason: wire.reason,
            merchantTokenMetadata: wire.merchantTokenMetadata, encryptedTokenMetadata: wire.encryptedTokenMetadata)
    }

    public func unlink(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError) {
        guard MerchantTokenEvent.isValidIdentifier(merchantTokenIdentifier) else {
            Self.count("unlink", "invalid")
            throw GatewayError(.invalidRequest, "the merchant token identifier is not 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(["merchantTokenIdentifier": merchantTokenIdentifier]))
        } catch {
            throw GatewayError(.invalidRequest, "cannot encode the unlink request")
        }
        _ = try await call(
            "POST", "/unlink", body: body, merchant: merchant, what: "unlink",
            subject: ["merchantTokenIdentifier": "\(merchantTokenIdentifier)"])
        Self.count("unlink", "success")
        logger.info(
            "merchant token unlinked at Apple",
            metadata: ["merchant": "\(merchant.merchantIdentifier)", "merchantTokenIdentifier": "\(merchantTokenIdentifier)"])
    }

    public func publicKey(merchantTokenIdentifier token: String, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> MerchantTokenKeyAnswer
    {
        let body = try Self.body(["merchantTokenIdentifier": token], token: token, what: "publicKey")
        let response: CurlResponse
        do throws(GatewayError) {
            response = try await call(
                "POST", "/publicKey", body: body, merchant: merchant, what: "publicKey", subject: ["merchantTokenIdentifier": "\(token)"])
        } catch {
            // Apple's documented repair: give the token a notification URL (updateMerchantMetadata).
            guard error.kind == .rejected, error.appleStatus == 409 else { throw error }
            Self.count("publicKey", "conflict")
            return .noNotificationURL
        }
        if response.status == 202 {
            Self.count("publicKey", "not_ready")
            return .notReady
        }
        guard response.body.count <= Self.maximumEventBytes,
            let wire = try? JSONDecoder().decode(WirePublicKey.self, from: Data(response.body))
        else {
            Self.count("publicKey", "malformed")
            throw GatewayError(.unreadable, "Apple sent an unreadable merchant token public key")
        }
        Self.count("publicKey", "success")
        return .ready(publicKey: wire.merchantTokenPublicKey, ciphersuite: wire.supportedCiphersuite)
    }

    public func updateMerchantMetadata(
        merchantTokenIdentifier token: String, tokenNotificationURL: String, for merchant: MerchantConfiguration
    )
        async throws(GatewayError)
    {
        struct Body: Encodable {
            struct Metadata: Encodable { var tokenNotificationURL: String }
            var merchantTokenIdentifier: String
            var merchantMetadata: Metadata
        }
        let body = try Self.body(
            Body(merchantTokenIdentifier: token, merchantMetadata: .init(tokenNotificationURL: tokenNotificationURL)), token: token,
            what: "updateMerchantMetadata")
        _ = try await call(
            "POST", "/updateMerchantMetadata", body: body, merchant: merchant, what: "updateMerchantMetadata",
            subject: ["merchantTokenIdentifier": "\(token)"])
        Self.count("updateMerchantMetadata", "success")
    }

    public func notify(merchantTokenIdentifier token: String, metadata: MerchantTokenUsageMetadata, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    {
        struct Body: Encodable {
            var merchantTokenIdentifier: String
            var merchantTokenUsageMetadata: MerchantTokenUsageMetadata
        }
        let body = try Self.body(Body(merchantTokenIdentifier: token, merchantTokenUsageMetadata: metadata), token: token, what: "notify")
        _ = try await call(
            "POST", "/notify", body: body, merchant: merchant, what: "notify", subject: ["merchantTokenIdentifier": "\(token)"])
        Self.count("notify", "success")
    }

    /// A call's JSON body, for a token identifier that may go to Apple.
    private static func body(_ value: some Encodable, token: String, what: String) throws(GatewayError) -> [UInt8] {
        guard MerchantTokenEvent.isValidIdentifier(token) else {
            count(what, "invalid")
            throw GatewayError(.invalidRequest, "the merchant token identifier is not 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw GatewayError(.invalidRequest, "cannot encode the \(what) request")
        }
    }

    /// Apple's `RetrieveMerchantTokenPublicKeyResponse`.
    private struct WirePublicKey: Decodable {
        var merchantTokenPublicKey: String
        var supportedCiphersuite: String
    }

    /// One call under `/paymentservices/v1/merchantId/{merchantId}/merchantToken`: Apple's answer
    /// when 2xx, a ``GatewayError`` otherwise.
    private func call(
        _ method: String, _ suffix: String, body: [UInt8]?, merchant: MerchantConfiguration, what: String, subject: Logger.Metadata
    ) async throws(GatewayError) -> CurlResponse {
        // The merchant ID is configuration, not input, but it may hold any character Apple allows.
        guard
            let merchantSegment = merchant.merchantIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved),
            !merchantSegment.isEmpty
        else {
            throw GatewayError(.invalidRequest, "the merchant ID cannot be put in a path")
        }
        // Apple requires both even on a GET; the request ID is what Apple's support asks for.
        let requestID = UUID().uuidString.lowercased()
        let path = "/paymentservices/v1/merchantId/" + merchantSegment + "/merchantToken" + suffix
        var metadata = subject
        metadata["merchant"] = "\(merchant.merchantIdentifier)"
        metadata["call"] = "\(what)"
        metadata["requestId"] = "\(requestID)"
        let response: CurlResponse
        do {
            response = try await connection.send(
                method, path: path, body: body, identity: merchant.identity, call: Self.metricsCall,
                // One merchant's burst of token events cannot take every call to Apple the process allows.
                group: "merchant-tokens " + merchant.merchantIdentifier, alwaysJSON: true,
                extraHeaders: [(name: "x-request-id", value: requestID)])
        } catch {
            Self.count(what, "\(error.kind)")
            metadata["error"] = "\(error.message)"
            metadata["hint"] = "\(error.hint)"
            logger.error("merchant token call failed", metadata: metadata)
            throw error
        }
        guard (200..<300).contains(response.status) else {
            Self.count(what, "rejected")
            let message = AppleGatewayConnection.appleMessage(response.body)
            var rejection = GatewayError(
                .rejected, "Apple answered HTTP \(response.status) to the merchant token \(what) call", appleStatus: response.status,
                appleMessage: message)
            rejection.advice = Self.advice(status: response.status, what: what, merchant: merchant.merchantIdentifier)
            metadata["status"] = "\(response.status)"
            metadata["statusMessage"] = "\(message)"
            metadata["hint"] = "\(rejection.hint)"
            logger.warning("Apple refused a merchant token call", metadata: metadata)
            throw rejection
        }
        return response
    }

    /// What a refusal of a token call means. Identity refusals (401, 403, 417) keep the general
    /// hint; any other 4xx is about the event or token, not the merchant ID, which Apple knew.
    static func advice(status: Int, what: String, merchant: String) -> String? {
        guard (400..<500).contains(status), ![401, 403, 417].contains(status) else { return nil }
        let subject = what == "event" ? "this event" : "this merchant token"
        return
            "Apple does not know \(subject) for \(merchant): it may belong to another merchant ID, or to Apple's other environment (sandbox or production)"
    }

    /// The gateway metrics' `call` label for this API.
    static let metricsCall = "merchant_token"

    private static func count(_ call: String, _ outcome: String) {
        Counter(label: "orchard_merchant_token_calls_total", dimensions: [("call", call), ("outcome", outcome)]).increment()
    }

    /// Apple's `MerchantTokenEventResponse`, read leniently where Apple's text is thin.
    private struct WireEvent: Decodable {
        var eventType: String
        var merchantTokenIdentifier: String
        var reason: String?
        var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
        var encryptedTokenMetadata: EncryptedTokenMetadata?

        enum CodingKeys: String, CodingKey {
            case eventType, merchantTokenIdentifier, reason, merchantTokenMetadata
        }

        enum MetadataKeys: String, CodingKey {
            case encryptedTokenMetadata
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            eventType = try container.decode(String.self, forKey: .eventType)
            merchantTokenIdentifier = try container.decode(String.self, forKey: .merchantTokenIdentifier)
            reason = try? container.decodeIfPresent(String.self, forKey: .reason)
            // The metadata is for display only: a shape Apple has not documented must not hide an
            // UNLINK, so it is then left out rather than refusing the event.
            // One that says nothing of the card (encrypted metadata alone) is none: it does not
            // replace the card details a mandate shows.
            merchantTokenMetadata =
                (try? container.decodeIfPresent(
                    DecryptedPayment.MerchantTokenMetadata.self, forKey: .merchantTokenMetadata))?.flatMap {
                    $0.cardArt == nil && $0.cardMetadata == nil ? nil : $0
                }
            // The MPAN's details, encrypted and signed: read as leniently, but when present in a
            // shape that cannot be read at all it is kept with its fields absent, for the mandate
            // lifecycle to refuse (and log) rather than take the event as carrying none.
            if let metadata = try? container.nestedContainer(keyedBy: MetadataKeys.self, forKey: .merchantTokenMetadata),
                metadata.contains(.encryptedTokenMetadata), (try? metadata.decodeNil(forKey: .encryptedTokenMetadata)) != true
            {
                encryptedTokenMetadata =
                    (try? metadata.decode(EncryptedTokenMetadata.self, forKey: .encryptedTokenMetadata))
                    ?? EncryptedTokenMetadata(data: nil, publicKeyHash: nil, signature: nil)
            }
        }
    }
}
