import ApplePay
import Crypto
import Foundation

extension Secret {
    /// The prefix of a secret in the Standard Webhooks form: base64 of the key follows it.
    public static let standardPrefix = "whsec_"

    /// The HMAC key this webhook secret stands for: for `whsec_<base64>` the decoded bytes (the
    /// Standard Webhooks form, so any of its libraries takes the secret as given); for any other
    /// secret its UTF-8 bytes, the key `Orchard-Signature` has always used, so existing secrets
    /// sign as before. Nil for a `whsec_` secret whose rest is not base64.
    public var webhookKey: [UInt8]? {
        guard value.hasPrefix(Self.standardPrefix) else { return Array(value.utf8) }
        let encoded = String(value.dropFirst(Self.standardPrefix.count))
        // Libraries write the key padded or not; both decode.
        let padded = encoded + String(repeating: "=", count: (4 - encoded.utf8.count % 4) % 4)
        return Data(base64Encoded: padded).map(Array.init)
    }
}

/// The Standard Webhooks signature (https://www.standardwebhooks.com): `webhook-id`,
/// `webhook-timestamp` (unix seconds) and `webhook-signature`, one `v1,<base64 HMAC-SHA256 of
/// "<id>.<timestamp>.<body>">` for each secret, space-separated. Any Standard Webhooks library
/// verifies it; during a rotation the delivery carries one entry per secret, so a receiver
/// knowing either secret accepts it.
public enum StandardWebhookSignature {
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"

    /// The `webhook-signature` value: one `v1,` entry per secret, in order.
    public static func sign(id: String, timestamp: Int64, body: [UInt8], secrets: [Secret]) -> String {
        secrets.map { "v1," + Data(mac(id: id, timestamp: timestamp, body: body, key: $0.webhookKey ?? [])).base64EncodedString() }
            .joined(separator: " ")
    }

    /// Whether some `v1` entry of `signature` signs `body` under `id` and `timestamp` with
    /// `secret`, the timestamp within `tolerance` of `now`: a receiver's check.
    public static func verify(
        id: String, timestamp: String, signature: String, body: [UInt8], secret: Secret, now: Date, tolerance: TimeInterval = 300
    ) -> Bool {
        guard let seconds = Int64(timestamp), abs(now.timeIntervalSince1970 - TimeInterval(seconds)) <= tolerance,
            let key = secret.webhookKey
        else { return false }
        let expected = mac(id: id, timestamp: seconds, body: body, key: key)
        return signature.split(separator: " ").contains { entry in
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let given = Data(base64Encoded: String(parts[1])) else { return false }
            return ConstantTime.equal(Array(given), expected)
        }
    }

    static func mac(id: String, timestamp: Int64, body: [UInt8], key: [UInt8]) -> [UInt8] {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return Array(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key)))
    }
}

extension WebhookEndpoint {
    /// Every secret a delivery is signed with: the current one, then the one being replaced.
    public var secrets: [Secret] { [secret] + (previousSecret.map { [$0] } ?? []) }

    /// The signature headers of a call to the shop with this ID: the Standard Webhooks ones (each
    /// secret) and `Orchard-Signature` (the current secret only: deprecated, kept until 1.0 for
    /// shops that verify it).
    public func signatureHeaders(id: String, body: [UInt8], at date: Date) -> [(name: String, value: String)] {
        let timestamp = Int64(date.timeIntervalSince1970)
        return [
            (name: StandardWebhookSignature.idHeader, value: id),
            (name: StandardWebhookSignature.timestampHeader, value: String(timestamp)),
            (
                name: StandardWebhookSignature.signatureHeader,
                value: StandardWebhookSignature.sign(id: id, timestamp: timestamp, body: body, secrets: secrets)
            ),
            (name: WebhookSignature.header, value: WebhookSignature.sign(body: body, secret: secret, timestamp: timestamp)),
        ]
    }

    /// A webhook delivery's headers: the signature (``signatureHeaders(id:body:at:)``, the
    /// event's ID as `webhook-id`, the same on every attempt), the event's ID and type, and the
    /// merchant it is for (`Orchard-Merchant`: a platform serving many merchants on one URL picks
    /// the secret to verify with before it parses the body; the body names it too, signed).
    public func deliveryHeaders(eventId: String, type: String, merchantIdentifier: String, body: [UInt8], at date: Date)
        -> [(name: String, value: String)]
    {
        [(name: "Content-Type", value: "application/json")] + signatureHeaders(id: eventId, body: body, at: date) + [
            (name: "Orchard-Event-Id", value: eventId), (name: "Orchard-Event-Type", value: type),
            (name: "Orchard-Merchant", value: merchantIdentifier), (name: "User-Agent", value: "Orchard-Webhooks/1"),
        ]
    }
}
