import ApplePay
import Foundation
import OrchardCore
import Testing

/// Webhook signatures against answers computed outside Orchard (Python's `hmac` and the
/// `standardwebhooks` 1.1.0 library's `Webhook.sign`), checked in as constants: a plain secret
/// keys both schemes with its UTF-8 bytes, as `Orchard-Signature` always did, and a `whsec_`
/// secret with its decoded bytes.
@Suite("Webhook signatures: Standard Webhooks and Orchard-Signature")
struct StandardWebhookSignatureTests {
    static let id = "evt_0123456789abcdef0123456789abcdef"
    static let timestamp: Int64 = 1_764_201_600
    static let body = Array(#"{"id":"evt_0123456789abcdef0123456789abcdef","type":"payment.authorized"}"#.utf8)
    static let plain = Secret("orchard-test-secret-0123456789abcdef")
    /// `whsec_` and the base64 of the bytes 0…31.
    static let standard = Secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    static let plainSignature = "v1,PScroYvGrbHNffDR7M5RPSPBaQ//mP4zjS9V7VELbyE="
    static let standardSignature = "v1,l4m7+oKpNKybSeg6lBh7qAS6XhhYznbJAO1fu8OyUzI="

    @Test("webhook-signature matches the known answers, one v1 entry per secret")
    func knownAnswers() {
        #expect(
            StandardWebhookSignature.sign(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [Self.plain])
                == Self.plainSignature)
        #expect(
            StandardWebhookSignature.sign(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [Self.standard])
                == Self.standardSignature)
        #expect(
            StandardWebhookSignature.sign(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [Self.standard, Self.plain])
                == "\(Self.standardSignature) \(Self.plainSignature)")
    }

    @Test("Orchard-Signature is unchanged for a plain secret and keyed by the decoded bytes for a whsec_ one")
    func orchardSignature() {
        #expect(
            WebhookSignature.sign(body: Self.body, secret: Self.plain, timestamp: Self.timestamp)
                == "t=1764201600,v1=cc314e8d83bafa7dfc427098faf53ff378c326404f73b96109fc80dbef0c4a76")
        #expect(
            WebhookSignature.sign(body: Self.body, secret: Self.standard, timestamp: Self.timestamp)
                == "t=1764201600,v1=14edb6cb6c2e01634fe26322c5be4656b7ef7c7197bd9be56758a6558700c30c")
    }

    @Test("a whsec_ key decodes padded or not; one that is not base64 has no key")
    func keys() {
        #expect(Self.standard.webhookKey == Array(0..<32))
        #expect(Secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").webhookKey == Array(0..<32))
        #expect(Secret("whsec_not*base64").webhookKey == nil)
        #expect(Self.plain.webhookKey == Array(Self.plain.value.utf8))
    }

    @Test("a delivery during a rotation verifies with either secret, and with neither other body nor other secret")
    func rotation() {
        let endpoint = WebhookEndpoint(url: "https://shop.example/hooks", secret: Self.standard, previousSecret: Self.plain)
        let now = Date(timeIntervalSince1970: TimeInterval(Self.timestamp))
        let headers = Dictionary(
            uniqueKeysWithValues: endpoint.deliveryHeaders(
                eventId: Self.id, type: "payment.authorized", merchantIdentifier: "merchant.com.example", body: Self.body, at: now
            ).map {
                ($0.name, $0.value)
            })
        #expect(headers["webhook-id"] == Self.id && headers["webhook-timestamp"] == "1764201600")
        #expect(headers["Orchard-Merchant"] == "merchant.com.example", "the merchant, for a platform to pick the secret before parsing")
        let signature = headers["webhook-signature"] ?? ""
        #expect(signature == "\(Self.standardSignature) \(Self.plainSignature)")
        // Orchard-Signature: the current secret only.
        #expect(headers["Orchard-Signature"] == WebhookSignature.sign(body: Self.body, secret: Self.standard, timestamp: Self.timestamp))
        func verify(_ secret: Secret, body: [UInt8] = Self.body, at date: Date = now) -> Bool {
            StandardWebhookSignature.verify(
                id: Self.id, timestamp: "1764201600", signature: signature, body: body, secret: secret, now: date)
        }
        #expect(verify(Self.standard) && verify(Self.plain))
        #expect(!verify(Secret("whsec_" + Data(repeating: 7, count: 32).base64EncodedString())))
        #expect(!verify(Self.standard, body: Self.body + [0x20]))
        #expect(!verify(Self.standard, at: now.addingTimeInterval(301)))
    }
}
