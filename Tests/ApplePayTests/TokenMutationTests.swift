import Crypto
import Foundation
import Testing
import X509
import _CryptoExtras

@testable import ApplePay

@Suite("Every tampering fails with its own error")
struct TokenMutationTests {
    let verifier = TokenVerifier()

    func verify(_ data: PaymentData, vector: Vector = .gala, offset: TimeInterval = 30) throws -> TokenVerifier.Verified {
        try verifier.verify(data, at: try vector.signingTime.addingTimeInterval(offset))
    }

    func code(_ body: () throws -> Void) -> ApplePayError.Code? {
        do {
            try body()
            return nil
        } catch let error as ApplePayError {
            return error.code
        } catch {
            return nil
        }
    }

    static func flip(_ base64: String, at index: Int) -> String {
        var bytes = [UInt8](Data(base64Encoded: base64)!)
        bytes[index] ^= 0x01
        return Data(bytes).base64EncodedString()
    }

    static func flipHex(_ hex: String) -> String {
        var bytes = Hex.decode(hex)!
        bytes[0] ^= 0x01
        return Hex.encode(bytes)
    }

    @Test("a flipped bit in data, ephemeralPublicKey, wrappedKey, transactionId or applicationData breaks the digest")
    func signedFields() throws {
        var data = try Vector.gala.token.paymentData
        data.data = Self.flip(data.data, at: 10)
        #expect(code { _ = try verify(data) } == .messageDigestMismatch)

        data = try Vector.gala.token.paymentData
        data.header.ephemeralPublicKey = Self.flip(data.header.ephemeralPublicKey!, at: 40)
        #expect(code { _ = try verify(data) } == .messageDigestMismatch)

        data = try Vector.gala.token.paymentData
        data.header.transactionId = Self.flipHex(data.header.transactionId)
        #expect(code { _ = try verify(data) } == .messageDigestMismatch)

        data = try Vector.gala.token.paymentData
        data.header.applicationData = Hex.encode(SHA256.hash(data: Array("order-1".utf8)))
        #expect(code { _ = try verify(data) } == .messageDigestMismatch)

        var rsa = try Vector.basisTheory.token.paymentData
        rsa.header.wrappedKey = Self.flip(rsa.header.wrappedKey!, at: 5)
        #expect(code { _ = try verify(rsa, vector: .basisTheory) } == .messageDigestMismatch)
    }

    @Test("a flipped bit in the signature value fails the signature check")
    func signatureValue() throws {
        var data = try Vector.gala.token.paymentData
        var bytes = [UInt8](Data(base64Encoded: data.signature)!)
        // The ECDSA signature is the last OCTET STRING: 04 len 30 len 02 ...; flip a bit inside r.
        let start = try #require(
            (0..<(bytes.count - 4)).last { bytes[$0] == 0x04 && (0x44...0x48).contains(bytes[$0 + 1]) && bytes[$0 + 2] == 0x30 })
        bytes[start + 10] ^= 0x01
        data.signature = Data(bytes).base64EncodedString()
        #expect(code { _ = try verify(data) } == .invalidSignature)
    }

    @Test("garbage in the signature is a malformed signature")
    func garbageSignature() throws {
        var data = try Vector.gala.token.paymentData
        data.signature = Data("not a CMS structure".utf8).base64EncodedString()
        #expect(code { _ = try verify(data) } == .malformedSignature)
        data.signature = "%%%"
        #expect(code { _ = try verify(data) } == .malformedToken)
        data = try Vector.gala.token.paymentData
        data.version = "EC_v2"
        #expect(code { _ = try verify(data) } == .unsupportedTokenVersion)
    }

    @Test("truncated and garbage base64 fail with their own errors")
    func truncatedAndGarbage() throws {
        let original = try Vector.gala.token.paymentData
        var data = original
        let bytes = [UInt8](Data(base64Encoded: data.data)!)
        data.data = Data(bytes.dropLast(4)).base64EncodedString()
        #expect(code { _ = try verify(data) } == .messageDigestMismatch)

        data = original
        let signature = [UInt8](Data(base64Encoded: data.signature)!)
        data.signature = Data(signature.prefix(signature.count / 2)).base64EncodedString()
        #expect(code { _ = try verify(data) } == .malformedSignature)

        data = original
        data.header.ephemeralPublicKey = "!!not base64!!"
        #expect(code { _ = try verify(data) } == .malformedToken)
        data = original
        data.data = String(data.data.dropLast(3))  // no longer valid base64 padding
        #expect(code { _ = try verify(data) } == .malformedToken)
        data = original
        data.header.transactionId = "zz"
        #expect(code { _ = try verify(data) } == .malformedToken)
        #expect(code { _ = try PaymentToken.parse(Array("{\"paymentData\": 1}".utf8)) } == .malformedToken)
    }

    @Test("signing time: older than 5 minutes or more than 1 minute ahead is refused")
    func signingTimeWindow() throws {
        let data = try Vector.gala.token.paymentData
        #expect(code { _ = try verify(data, offset: 299) } == nil)
        #expect(code { _ = try verify(data, offset: 301) } == .signingTimeTooOld)
        #expect(code { _ = try verify(data, offset: -59) } == nil)
        #expect(code { _ = try verify(data, offset: -61) } == .signingTimeInFuture)
    }

    @Test("a chain to any other root is untrusted")
    func otherRoot() throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Apple Root CA - G3") }  // same name, different key
        let impostor = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date(timeIntervalSince1970: 0),
            notValidAfter: Date(timeIntervalSince1970: 4_000_000_000), issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) },
            issuerPrivateKey: .init(key))
        let untrusting = TokenVerifier(root: impostor)
        #expect(
            code { _ = try untrusting.verify(try Vector.gala.token.paymentData, at: try Vector.gala.signingTime) }
                == .untrustedCertificateChain)
    }

    @Test("a wrong key or a wrong merchant ID cannot decrypt")
    func wrongKeys() throws {
        let decoded = try verify(try Vector.gala.token.paymentData).decoded
        let stranger = ProcessingKeyFixture.ec()
        #expect(code { _ = try TokenDecryptor(keys: [stranger]).decrypt(decoded) } == .unknownProcessingKey)
        do {
            _ = try TokenDecryptor(keys: [stranger]).decrypt(decoded)
        } catch {
            let named = Data(decoded.publicKeyHash).base64EncodedString()
            #expect(
                error.message.contains("publicKeyHash \(named)")
                    && error.message.contains(Data(stranger.publicKeyHash).base64EncodedString()))
        }
        #expect(TokenDecryptor.unknownKey(decoded.publicKeyHash, configured: []).message.contains("has no processing keys"))
        let wrongMerchant = try ProcessingKey(privateKeyPEM: try Vector.gala.text("private_key.pem"), merchantIdentifier: "merchant.wrong")
        #expect(code { _ = try TokenDecryptor(keys: [wrongMerchant]).decrypt(decoded) } == .decryptionFailed)

        var tampered = decoded
        tampered.data[tampered.data.count - 1] ^= 0x01  // the GCM tag
        let right = try ProcessingKey(
            privateKeyPEM: try Vector.gala.text("private_key.pem"), certificatePEM: try Vector.gala.text("certificate.pem"))
        #expect(code { _ = try TokenDecryptor(keys: [right]).decrypt(tampered) } == .decryptionFailed)
    }

    @Test("the key is picked by publicKeyHash among several (rotation)")
    func rotation() throws {
        let gala = try ProcessingKey(
            privateKeyPEM: try Vector.gala.text("private_key.pem"), certificatePEM: try Vector.gala.text("certificate.pem"))
        let basis = try ProcessingKey(
            privateKeyPEM: try Vector.basisTheory.text("private.key"), certificatePEM: try Vector.basisTheory.text("apple_pay.pem"))
        let decryptor = TokenDecryptor(keys: [ProcessingKeyFixture.ec(), basis, gala])
        #expect(try decryptor.decrypt(try Vector.gala.token.paymentData.decoded()).fields.transactionAmount == 100)
        #expect(try decryptor.decrypt(try Vector.basisTheory.token.paymentData.decoded()).lastFour == "0075")
    }

    @Test("a key that does not match its certificate is refused")
    func mismatchedCertificate() throws {
        #expect(
            code {
                _ = try ProcessingKey(
                    privateKeyPEM: try Vector.basisTheory.text("private.key"), certificatePEM: try Vector.gala.text("certificate.pem"))
            }
                == .keyMismatch)
    }
}

enum ProcessingKeyFixture {
    static func ec() -> ProcessingKey {
        try! ProcessingKey(privateKeyPEM: P256.KeyAgreement.PrivateKey().pemRepresentation, merchantIdentifier: "merchant.other")
    }
}
