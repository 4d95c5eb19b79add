import Crypto
import Foundation
import GooglePay
import OrchardTesting
import Testing

/// ECv2 checked against fixed tokens Google's Tink made (Fixtures/README.md), and against tokens
/// our own minter makes with a test root and intermediate key.
@Suite("Google Pay ECv2: signatures, expiry and decryption")
struct ECv2Tests {
    struct Fixture: Decodable {
        var rootSigningKeys: Keys
        var recipientId: String
        var privateKeyPKCS8: String
        var tokens: [String: GooglePayToken]

        struct Keys: Encodable, Decodable {
            struct Key: Codable {
                var keyValue: String
                var keyExpiration: String
                var protocolVersion: String
            }

            var keys: [Key]
        }
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/tink-ecv2-tokens.json")
        do {
            return try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
        } catch {
            preconditionFailure("Fixtures/tink-ecv2-tokens.json does not read: \(error)")
        }
    }()

    /// The tests' clock: after the fixtures were made, before their valid intermediate key expires (2029).
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    var roots: GooglePaySigningKeys {
        get throws { try GooglePaySigningKeys.parse(Array(try JSONEncoder().encode(Self.fixture.rootSigningKeys))) }
    }

    var key: P256.KeyAgreement.PrivateKey {
        get throws { try P256.KeyAgreement.PrivateKey(derRepresentation: try #require(Data(base64Encoded: Self.fixture.privateKeyPKCS8))) }
    }

    func open(_ name: String, recipient: String = fixture.recipientId) throws -> GooglePayPaymentData {
        let token = try #require(Self.fixture.tokens[name])
        let verified = try ECv2.verify(token, recipientId: recipient, roots: try roots, at: Self.now)
        return try ECv2.decrypt(verified, with: try key, at: Self.now)
    }

    /// The code `body` was refused with; nil when it was not refused by ECv2.
    func refusal(_ body: () throws -> Void) -> GooglePayError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? GooglePayError)?.code
        }
    }

    @Test("Tink's valid token verifies and opens to its card, PAN_ONLY, without the card number in its description")
    func valid() throws {
        let data = try open("valid")
        #expect(data.card.pan == "4111111111111111" && data.card.authMethod == .panOnly)
        #expect(data.card.expirationMonth == 12 && data.card.expirationYear == 2026 && data.paymentMethod == "CARD")
        #expect(data.messageExpiration == Date(timeIntervalSince1970: 32_506_264_800))
        #expect(!data.description.contains("4111111111111111") && data.description.contains("1111"))
    }

    @Test("each of Tink's bad tokens is refused for what it is")
    func refused() {
        let cases: [(String, GooglePayError.Code)] = [
            ("intermediateSignatureInvalid", .untrustedIntermediateKey), ("messageExpired", .messageExpired),
            ("plaintextNotJSON", .invalidPlaintext), ("tagInvalid", .tagMismatch), ("intermediateKeyExpired", .intermediateKeyExpired),
        ]
        for (name, code) in cases {
            #expect(refusal { _ = try open(name) } == code, "\(name)")
        }
        #expect(refusal { _ = try open("valid", recipient: "merchant:someoneElse") } == .invalidSignature, "another recipient")
    }

    @Test("a root key that has expired signs nothing; keys.json without an ECv2 key is refused")
    func expiredRoots() throws {
        var expired = Self.fixture.rootSigningKeys
        expired.keys[0].keyExpiration = "1700000000000"
        let keys = try GooglePaySigningKeys.parse(Array(try JSONEncoder().encode(expired)))
        let valid = try #require(Self.fixture.tokens["valid"])
        let code = refusal { _ = try ECv2.verify(valid, recipientId: Self.fixture.recipientId, roots: keys, at: Self.now) }
        #expect(code == .untrustedIntermediateKey)
        #expect(
            refusal { _ = try GooglePaySigningKeys.parse(Array(#"{"keys":[{"keyValue":"x","protocolVersion":"ECv1"}]}"#.utf8)) }
                == .invalidSigningKeys)
        #expect(refusal { _ = try GooglePaySigningKeys.parse(Array("[]".utf8)) } == .invalidSigningKeys)
    }

    @Test("malformed tokens: not JSON, another protocol, past the size limit")
    func malformed() throws {
        #expect(refusal { _ = try GooglePayToken.parse(Array("not json".utf8)) } == .malformedToken)
        var token = try #require(Self.fixture.tokens["valid"])
        token.protocolVersion = "ECv1"
        let encoded = Array(try JSONEncoder().encode(token))
        #expect(refusal { _ = try GooglePayToken.parse(encoded) } == .unsupportedProtocol)
        #expect(
            refusal { _ = try GooglePayToken.parse([UInt8](repeating: 0x20, count: GooglePayToken.maximumBytes + 1)) } == .malformedToken)
    }

    @Test("our minter's tokens open with the recipient's key; a changed byte anywhere signed is refused")
    func minted() throws {
        let minter = GooglePayMinter(intermediateExpiration: Self.now.addingTimeInterval(86_400))
        let roots = try GooglePaySigningKeys.parse(minter.rootKeysJSON)
        let recipient = P256.KeyAgreement.PrivateKey()
        let payload = GooglePayMinter.paymentData(cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", expiration: Self.now.addingTimeInterval(600))
        let bytes = try minter.mint(payload, recipientId: "merchant:12345678901234567890", to: recipient.publicKey)
        let token = try GooglePayToken.parse(bytes)
        let verified = try ECv2.verify(token, recipientId: "merchant:12345678901234567890", roots: roots, at: Self.now)
        let data = try ECv2.decrypt(verified, with: recipient, at: Self.now)
        #expect(data.card.authMethod == .cryptogram3DS && data.card.cryptogram == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")

        var tampered = token
        tampered.signedMessage = tampered.signedMessage.replacingOccurrences(of: "\"tag\":\"", with: "\"tag\":\"A")
        #expect(
            refusal { _ = try ECv2.verify(tampered, recipientId: "merchant:12345678901234567890", roots: roots, at: Self.now) }
                == .invalidSignature)
        #expect(refusal { _ = try ECv2.decrypt(verified, with: P256.KeyAgreement.PrivateKey(), at: Self.now) } == .tagMismatch)
        #expect(refusal { _ = try ECv2.decrypt(verified, with: recipient, at: Self.now.addingTimeInterval(601)) } == .messageExpired)
        let later = Self.now.addingTimeInterval(86_401)
        #expect(
            refusal { _ = try ECv2.verify(token, recipientId: "merchant:12345678901234567890", roots: roots, at: later) }
                == .intermediateKeyExpired)
    }
}
