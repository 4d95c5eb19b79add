import ApplePay
import Foundation
import Logging
import NIOCore

/// An answer the mock computes off its event loop: the handler writes it once the future completes.
struct MockControlAnswer: Sendable {
    var status: Int
    var body: [UInt8]
}

extension MockAppleGateway {
    /// A test-control route, for a test in another process (the browser tests run `orchard-sandbox demo`):
    /// `POST /_mock/token-events` with `{"eventType", "merchantTokenIdentifier", "reason"?, "tokenNotificationURL"}`
    /// makes an event (``addTokenEvent(eventType:merchantTokenIdentifier:reason:metadata:encryptedTokenMetadata:)``),
    /// sends Apple's notification for it (``notify(tokenNotificationURL:eventId:)``) and answers 200
    /// `{"eventId", "status"}` with the status the notification got; 502 `{"eventId", "error"}` when it got
    /// no answer; 400 `{"error"}` for a bad body or a URL that is not http(s) on loopback, with no event made.
    /// With `"tokenMetadata": {"expirationDate", "mpan", "mpanId"?}` the event carries it as
    /// `merchantTokenMetadata.encryptedTokenMetadata`, minted by ``mintTokenMetadata(_:scheme:tamper:signingTime:)``
    /// (`"tokenMetadataScheme"`: `EC_v1`, the default, or `RSA_v1`; `"tokenMetadataTamper": true`: a byte of
    /// its data flipped after signing); 400 when the mock has no key for that scheme.
    /// Like every route, it is served only to a client certificate from the test CA.
    static let tokenEventsControlPath = "/_mock/token-events"

    /// Hosts a notification may go to: the control route must never make the mock call anything else.
    static let loopbackHosts: Set<String> = ["127.0.0.1", "::1", "localhost"]

    /// Answers `POST /_mock/token-events`. The notification runs in a task, never on `eventLoop`,
    /// and the future completes on `eventLoop`.
    func tokenEventControl(body: [UInt8], on eventLoop: any EventLoop) -> EventLoopFuture<MockControlAnswer> {
        let request: TokenEventControlRequest
        switch TokenEventControlRequest.parse(body) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return eventLoop.makeSucceededFuture(Self.controlAnswer(400, ["error": failure.message]))
        }
        return eventLoop.makeFutureWithTask { [self] in
            // Minted off the event loop: an RSA signature is not free.
            var encrypted: EncryptedTokenMetadata?
            if let values = request.tokenMetadata {
                do {
                    encrypted = try mintTokenMetadata(values, scheme: request.tokenMetadataScheme, tamper: request.tokenMetadataTamper)
                } catch {
                    return Self.controlAnswer(400, ["error": "\(error)"])
                }
            }
            let eventId = addTokenEvent(
                eventType: request.eventType, merchantTokenIdentifier: request.merchantTokenIdentifier, reason: request.reason,
                encryptedTokenMetadata: encrypted)
            logger.debug("control: notifying a token event", metadata: ["eventId": "\(eventId)", "url": "\(request.tokenNotificationURL)"])
            do {
                let status = try await notify(tokenNotificationURL: request.tokenNotificationURL, eventId: eventId)
                return Self.controlAnswer(200, ["eventId": eventId, "status": status])
            } catch {
                return Self.controlAnswer(502, ["eventId": eventId, "error": "\(error)"])
            }
        }
    }

    /// Whether `text` is an http(s) URL on a loopback host, with no user info, query or fragment.
    static func isLoopbackHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host?.lowercased(), loopbackHosts.contains(host),
            url.user == nil, url.password == nil, url.query == nil, url.fragment == nil
        else { return false }
        return true
    }

    private static func controlAnswer(_ status: Int, _ object: [String: any Sendable]) -> MockControlAnswer {
        MockControlAnswer(
            status: status, body: Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
    }
}

/// The body of `POST /_mock/token-events`, checked.
struct TokenEventControlRequest: Sendable {
    struct Failure: Error {
        var message: String
    }

    var eventType: String
    var merchantTokenIdentifier: String
    var reason: String
    var tokenNotificationURL: String
    /// What to mint into `encryptedTokenMetadata`, how, and whether to break it; nil: none.
    var tokenMetadata: MockTokenMetadata?
    var tokenMetadataScheme: PaymentData.Scheme = .ecV1
    var tokenMetadataTamper = false

    /// The body's token metadata fields, read by type.
    private struct MetadataFields: Decodable {
        var tokenMetadata: MockTokenMetadata?
        var tokenMetadataScheme: String?
        var tokenMetadataTamper: Bool?
    }

    static func parse(_ body: [UInt8]) -> Result<TokenEventControlRequest, Failure> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(Failure(message: "the body must be a JSON object"))
        }
        func text(_ key: String) -> String? {
            guard let value = object[key] as? String, !value.isEmpty else { return nil }
            return value
        }
        guard let eventType = text("eventType") else { return .failure(Failure(message: "eventType is required")) }
        guard let token = text("merchantTokenIdentifier") else {
            return .failure(Failure(message: "merchantTokenIdentifier is required"))
        }
        if object["reason"] != nil && text("reason") == nil {
            return .failure(Failure(message: "reason must be a non-empty string"))
        }
        guard let url = text("tokenNotificationURL") else { return .failure(Failure(message: "tokenNotificationURL is required")) }
        // The URL as given and as notify will call it: both must stay on loopback.
        let probe = url + "/notification/merchantToken/probe"
        guard MockAppleGateway.isLoopbackHTTPURL(url), MockAppleGateway.isLoopbackHTTPURL(probe) else {
            return .failure(
                Failure(
                    message: "tokenNotificationURL must be http(s) on 127.0.0.1, ::1 or localhost, with no user info, query or fragment"))
        }
        var request = TokenEventControlRequest(
            eventType: eventType, merchantTokenIdentifier: token, reason: text("reason") ?? "user", tokenNotificationURL: url)
        guard let fields = try? JSONDecoder().decode(MetadataFields.self, from: Data(body)) else {
            return .failure(
                Failure(
                    message:
                        "tokenMetadata must be {\"expirationDate\", \"mpan\", \"mpanId\"?} strings, tokenMetadataScheme a string, tokenMetadataTamper a boolean"
                ))
        }
        if fields.tokenMetadata == nil && (fields.tokenMetadataScheme != nil || fields.tokenMetadataTamper != nil) {
            return .failure(Failure(message: "tokenMetadataScheme and tokenMetadataTamper go with tokenMetadata"))
        }
        guard let scheme = PaymentData.Scheme(rawValue: fields.tokenMetadataScheme ?? "EC_v1") else {
            return .failure(Failure(message: "tokenMetadataScheme must be EC_v1 or RSA_v1"))
        }
        request.tokenMetadata = fields.tokenMetadata
        request.tokenMetadataScheme = scheme
        request.tokenMetadataTamper = fields.tokenMetadataTamper ?? false
        return .success(request)
    }
}
