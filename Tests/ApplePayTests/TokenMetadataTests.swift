import ApplePay
import Crypto
import Foundation
import OrchardTesting
import Testing
import _CryptoExtras

/// A token event's `encryptedTokenMetadata` is verified and opened as a payment token is, over
/// key material ‖ data, and what comes out is the expiry and the MPAN's last four digits.
@Suite("Encrypted token metadata")
struct TokenMetadataTests {
    static let merchant = "merchant.dev.orchard.test"

    /// One chain and pair of processing keys for the whole suite: RSA keys are slow to make.
    struct Fixture: Sendable {
        let chain: TestAppleChain
        let ec: P256.KeyAgreement.PrivateKey
        /// The RSA key's public half (DER): the key types of `_CryptoExtras` are not `Sendable`.
        let rsaPublicKey: [UInt8]
        let decryptor: TokenDecryptor

        init() throws {
            chain = try TestAppleChain.make()
            ec = P256.KeyAgreement.PrivateKey()
            let rsa = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
            rsaPublicKey = Array(rsa.publicKey.derRepresentation)
            decryptor = TokenDecryptor(keys: [
                try ProcessingKey(privateKeyPEM: ec.pemRepresentation, merchantIdentifier: TokenMetadataTests.merchant),
                try ProcessingKey(privateKeyPEM: rsa.pemRepresentation, merchantIdentifier: TokenMetadataTests.merchant),
            ])
        }

        var verifier: TokenVerifier { TokenVerifier(root: chain.root.certificate).withPolicy(.tokenMetadata) }

        func mint(
            _ payload: [UInt8] = TokenMinter.tokenMetadataPayload(expirationDate: "301231", mpan: "5204240750197840", mpanId: "MPAN-2.b_c"),
            rsa: Bool = false, signingTime: Date = Date(), chain: TestAppleChain? = nil
        ) throws -> EncryptedTokenMetadata {
            let minter = TokenMinter(chain: chain ?? self.chain)
            if rsa {
                return try minter.mintTokenMetadata(
                    payload: payload, to: try _RSA.Encryption.PublicKey(derRepresentation: rsaPublicKey), signingTime: signingTime)
            }
            return try minter.mintTokenMetadata(
                payload: payload, to: ec.publicKey, merchantIdentifier: TokenMetadataTests.merchant, signingTime: signingTime)
        }

        func open(_ metadata: EncryptedTokenMetadata, at now: Date = Date()) throws -> TokenMetadata {
            try metadata.open(verifier: verifier, decryptor: decryptor, at: now)
        }
    }

    static let fixture = Result { try Fixture() }

    func code(_ body: () throws -> Void) -> ApplePayError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? ApplePayError)?.code
        }
    }

    static func flip(_ base64: String?, at index: Int) -> String? {
        guard var bytes = base64.flatMap({ Data(base64Encoded: $0) }).map(Array.init), bytes.count > index else { return nil }
        bytes[index] ^= 0x01
        return Data(bytes).base64EncodedString()
    }

    @Test("EC_v1 and RSA_v1 open to the expiry, the MPAN's last four digits and the new MPAN's identifier")
    func opens() throws {
        let fixture = try Self.fixture.get()
        for rsa in [false, true] {
            let metadata = try fixture.mint(rsa: rsa)
            #expect((metadata.ephemeralPublicKey != nil) == !rsa && (metadata.wrappedKey != nil) == rsa)
            let opened = try fixture.open(metadata)
            #expect(opened.expirationDate == "301231")
            #expect(opened.expirationYear == 2030 && opened.expirationMonth == 12)
            #expect(opened.mpanSuffix == "7840")
            #expect(opened.mpanId == "MPAN-2.b_c")
            #expect(!opened.description.contains("520424"), "the description never shows the MPAN")
        }
        let withoutId = try fixture.open(
            try fixture.mint(TokenMinter.tokenMetadataPayload(expirationDate: "280229", mpan: "520424075019")))
        #expect(withoutId.mpanId == nil && withoutId.mpanSuffix == "5019" && withoutId.expirationMonth == 2)
    }

    @Test("the signature covers key material ‖ data: a flipped byte in either, or in the signature itself, is refused")
    func badSignature() throws {
        let fixture = try Self.fixture.get()
        for rsa in [false, true] {
            var metadata = try fixture.mint(rsa: rsa)
            metadata.data = Self.flip(metadata.data, at: 3)
            #expect(code { _ = try fixture.open(metadata) } == .messageDigestMismatch)
        }
        var ec = try fixture.mint()
        ec.ephemeralPublicKey = Self.flip(ec.ephemeralPublicKey, at: 40)
        #expect(code { _ = try fixture.open(ec) } == .messageDigestMismatch)
        var rsa = try fixture.mint(rsa: true)
        rsa.wrappedKey = Self.flip(rsa.wrappedKey, at: 7)
        #expect(code { _ = try fixture.open(rsa) } == .messageDigestMismatch)

        var signed = try fixture.mint()
        let signature = try #require(signed.signature.flatMap { Data(base64Encoded: $0) }.map(Array.init))
        // The signature value is the CMS structure's last bytes.
        signed.signature = Self.flip(signed.signature, at: signature.count - 3)
        #expect(code { _ = try fixture.open(signed) } == .invalidSignature)
    }

    @Test("a chain to another root is refused")
    func wrongChain() throws {
        let fixture = try Self.fixture.get()
        let other = try TestAppleChain.make()
        #expect(code { _ = try fixture.open(try fixture.mint(chain: other)) } == .untrustedCertificateChain)
        #expect(code { _ = try fixture.open(try fixture.mint(rsa: true, chain: other)) } == .untrustedCertificateChain)
    }

    @Test("the signing time is checked against the time given, under the token-metadata policy")
    func signingTime() throws {
        let fixture = try Self.fixture.get()
        let now = Date()
        let metadata = try fixture.mint(signingTime: now)
        #expect(
            try fixture.open(metadata, at: now.addingTimeInterval(3 * 86_400)).expirationMonth == 12,
            "three days later: fetched after an outage")
        #expect(code { _ = try fixture.open(metadata, at: now.addingTimeInterval(8 * 86_400)) } == .signingTimeTooOld)
        #expect(code { _ = try fixture.open(metadata, at: now.addingTimeInterval(-600)) } == .signingTimeInFuture)
        #expect(
            code {
                _ = try metadata.open(
                    verifier: TokenVerifier(root: fixture.chain.root.certificate), decryptor: fixture.decryptor,
                    at: now.addingTimeInterval(600))
            }
                == .signingTimeTooOld, "a payment token's policy would refuse it after five minutes")
    }

    @Test("metadata for a key the merchant does not have is refused, naming its hash")
    func keyMismatch() throws {
        let fixture = try Self.fixture.get()
        let stranger = P256.KeyAgreement.PrivateKey()
        let metadata = try TokenMinter(chain: fixture.chain).mintTokenMetadata(
            payload: TokenMinter.tokenMetadataPayload(expirationDate: "301231", mpan: "5204240750197840"),
            to: stranger.publicKey, merchantIdentifier: Self.merchant)
        #expect(code { _ = try fixture.open(metadata) } == .unknownProcessingKey)
        // The right key for another merchant ID: the EC_v1 key derivation differs.
        let otherMerchant = TokenDecryptor(keys: [
            try ProcessingKey(privateKeyPEM: fixture.ec.pemRepresentation, merchantIdentifier: "merchant.other")
        ])
        #expect(code { _ = try fixture.mint().open(verifier: fixture.verifier, decryptor: otherMerchant, at: Date()) } == .decryptionFailed)
    }

    @Test("exactly one of ephemeralPublicKey and wrappedKey: both or neither is malformed")
    func keyFields() throws {
        let fixture = try Self.fixture.get()
        var both = try fixture.mint()
        both.wrappedKey = both.ephemeralPublicKey
        #expect(code { _ = try fixture.open(both) } == .malformedToken)
        var neither = try fixture.mint()
        neither.ephemeralPublicKey = nil
        #expect(code { _ = try fixture.open(neither) } == .malformedToken)
        var noHash = try fixture.mint()
        noHash.publicKeyHash = "not base64!"
        #expect(code { _ = try fixture.open(noHash) } == .malformedToken)
    }

    @Test("a field of another type reads as absent, so the refusal names it rather than the event failing to read")
    func lenientShape() throws {
        let json = Array(#"{"data": 12, "ephemeralPublicKey": "AAAA", "publicKeyHash": ["x"], "signature": "AAAA", "extra": true}"#.utf8)
        let metadata = try JSONDecoder().decode(EncryptedTokenMetadata.self, from: Data(json))
        #expect(metadata.data == nil && metadata.publicKeyHash == nil && metadata.ephemeralPublicKey == "AAAA")
        #expect(code { _ = try metadata.decoded() } == .malformedToken)
    }

    @Test(
        "plaintext that is not Apple's TokenMetadata is refused, and the refusal never quotes it",
        arguments: [
            #"not json"#, #"{"mpan": "5204240750197840"}"#, #"{"expirationDate": "301231"}"#,
            #"{"expirationDate": 301231, "mpan": "5204240750197840"}"#, #"{"expirationDate": "3012", "mpan": "5204240750197840"}"#,
            #"{"expirationDate": "301331", "mpan": "5204240750197840"}"#, #"{"expirationDate": "300431", "mpan": "5204240750197840"}"#,
            #"{"expirationDate": "270229", "mpan": "5204240750197840"}"#, #"{"expirationDate": "301200", "mpan": "5204240750197840"}"#,
            #"{"expirationDate": "30-231", "mpan": "5204240750197840"}"#, #"{"expirationDate": "301231", "mpan": "52042407501"}"#,
            #"{"expirationDate": "301231", "mpan": "52042407501978401234"}"#, #"{"expirationDate": "301231", "mpan": "5204 2407 5019"}"#,
            #"{"expirationDate": "301231", "mpan": "5204240750197840", "mpanId": ""}"#,
            #"{"expirationDate": "301231", "mpan": "5204240750197840", "mpanId": "a/b"}"#,
            "{\"expirationDate\": \"301231\", \"mpan\": \"5204240750197840\", \"mpanId\": \"\(String(repeating: "a", count: 65))\"}",
        ])
    func malformedPlaintext(_ plaintext: String) throws {
        let fixture = try Self.fixture.get()
        let metadata = try fixture.mint(Array(plaintext.utf8))
        do {
            _ = try fixture.open(metadata)
            Issue.record("opened \(plaintext)")
        } catch let error as ApplePayError {
            #expect(error.code == .invalidPlaintext)
            #expect(!error.message.contains("52042407"))
        }
    }
}
