import Crypto
import Foundation
import Testing
import X509

@testable import ApplePay

/// A real token from Tests/ApplePayTests/Fixtures with its keys and expected results.
struct Vector {
    let folder: String
    let tokenFile: String
    let expectedFile: String

    static let gala = Vector(folder: "gala-2021", tokenFile: "token.json", expectedFile: "expected.json")
    static let basisTheory = Vector(folder: "basis-theory-rsa", tokenFile: "token.json", expectedFile: "expected.json")
    static let processoutEC = Vector(
        folder: "processout-signature-only", tokenFile: "token-ec.json", expectedFile: "expected-signature-ec.json")
    static let processoutRSA = Vector(
        folder: "processout-signature-only", tokenFile: "token-rsa.json", expectedFile: "expected-signature-rsa.json")

    func file(_ name: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(folder)/\(name)", withExtension: nil))
        return [UInt8](try Data(contentsOf: url))
    }

    func text(_ name: String) throws -> String { String(decoding: try file(name), as: UTF8.self) }

    var token: PaymentToken { get throws { try PaymentToken.parse(try file(tokenFile)) } }

    var expected: [String: Any] {
        get throws { try #require(try JSONSerialization.jsonObject(with: Data(try file(expectedFile))) as? [String: Any]) }
    }

    /// The CMS signing time from the independent checker's output.
    var signingTime: Date {
        get throws {
            let text = try #require(try expected["signing_time"] as? String)
            return try #require(
                try? Date(text.replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: "+00:00", with: "Z"), strategy: .iso8601))
        }
    }
}

@Suite("Real Apple-signed tokens")
struct TokenVectorTests {
    let verifier = TokenVerifier()

    @Test("every vector verifies at its signing time", arguments: [Vector.gala, .basisTheory, .processoutEC, .processoutRSA])
    func verifiesAtSigningTime(vector: Vector) throws {
        let verified = try verifier.verify(try vector.token.paymentData, at: try vector.signingTime.addingTimeInterval(30))
        #expect(verified.signingTime == (try vector.signingTime))
        #expect(verified.leaf.extensions[oid: TokenVerifier.leafOID] != nil)
    }

    @Test("every vector fails today: Apple's leaf has expired", arguments: [Vector.gala, .basisTheory, .processoutEC, .processoutRSA])
    func failsToday(vector: Vector) throws {
        #expect {
            _ = try verifier.verify(try vector.token.paymentData, at: Date())
        } throws: { ($0 as? ApplePayError)?.code == .signingCertificateExpired }
    }

    func decrypt(_ vector: Vector, keyFile: String, certificateFile: String) throws -> DecryptedPayment {
        let key = try ProcessingKey(privateKeyPEM: try vector.text(keyFile), certificatePEM: try vector.text(certificateFile))
        let verified = try verifier.verify(try vector.token.paymentData, at: try vector.signingTime.addingTimeInterval(30))
        return try TokenDecryptor(keys: [key]).decrypt(verified.decoded)
    }

    func expectPlaintext(_ payment: DecryptedPayment, _ vector: Vector) throws {
        let expected = try #require(try vector.expected["plaintext"] as? NSDictionary)
        let actual = try #require(try JSONSerialization.jsonObject(with: Data(payment.json)) as? NSDictionary)
        #expect(actual == expected)
        #expect(!payment.description.contains(payment.fields.applicationPrimaryAccountNumber))
    }

    @Test("EC_v1 (gala) decrypts to the expected plaintext, with the expected shared secret and key")
    func ecDecrypts() throws {
        let vector = Vector.gala
        try expectPlaintext(try decrypt(vector, keyFile: "private_key.pem", certificateFile: "certificate.pem"), vector)

        let key = try P256.KeyAgreement.PrivateKey(pemRepresentation: try vector.text("private_key.pem"))
        let decoded = try vector.token.paymentData.decoded()
        let secret = try key.sharedSecretFromKeyAgreement(with: try P256.KeyAgreement.PublicKey(derRepresentation: decoded.keyMaterial))
        let z = secret.withUnsafeBytes { Array($0) }
        #expect(Data(z).base64EncodedString() == (try vector.expected["shared_secret_b64"] as? String))
        let processing = try ProcessingKey(
            privateKeyPEM: try vector.text("private_key.pem"), certificatePEM: try vector.text("certificate.pem"))
        #expect(Hex.encode(processing.merchantIdentifierHash, uppercase: true) == (try vector.expected["merchant_id_ext_hex"] as? String))
        let symmetric = TokenDecryptor.deriveKey(sharedSecret: z, partyV: processing.merchantIdentifierHash)
        #expect(Data(symmetric).base64EncodedString() == (try vector.expected["symmetric_key_b64"] as? String))
        #expect(Data(processing.publicKeyHash).base64EncodedString() == (try vector.expected["publicKeyHash_expected"] as? String))
    }

    @Test("RSA_v1 (Basis Theory) decrypts to the expected plaintext")
    func rsaDecrypts() throws {
        let vector = Vector.basisTheory
        let payment = try decrypt(vector, keyFile: "private.key", certificateFile: "apple_pay.pem")
        try expectPlaintext(payment, vector)
        #expect(payment.fields.transactionAmount == 100)
        #expect(payment.lastFour == "0075")
    }

    @Test("the merchant ID may be given as a string instead of a certificate")
    func merchantIDString() throws {
        let vector = Vector.gala
        let key = try ProcessingKey(
            privateKeyPEM: try vector.text("private_key.pem"), merchantIdentifier: "merchant.test.spreedly.123merchant")
        let decoded = try vector.token.paymentData.decoded()
        #expect(try TokenDecryptor(keys: [key]).decrypt(decoded).fields.currencyCode == "840")
    }
}
