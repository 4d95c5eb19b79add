import ApplePay
import Crypto
import Foundation
import SwiftASN1
import _CryptoExtras

/// One real vector: its token, its merchant key, and what its cryptography is made of.
struct Case {
    let scheme: PaymentData.Scheme
    let data: PaymentData
    let decoded: PaymentData.Decoded
    let verifier = TokenVerifier()
    let decryptor: TokenDecryptor
    let at: Date
    let rsaKey: _RSA.Encryption.PrivateKey?
    let sizes: Sizes

    /// The byte counts the primitives work on, per token.
    struct Sizes {
        /// What Apple's leaf signs (the DER of the signed attributes).
        var signedAttributes: Int
        /// Ephemeral key or wrapped key ‖ data ‖ transactionId ‖ applicationData, hashed for messageDigest.
        var signedContent: Int
        /// The ciphertext AES-GCM opens (the data without its 16-byte tag).
        var data: Int
    }

    static func ec(_ fixtures: String) throws -> Case {
        try Case(
            fixtures: fixtures, folder: "gala-2021", key: "private_key.pem", certificate: "certificate.pem",
            signingTime: "2021-09-01T19:03:06Z")
    }

    static func rsa(_ fixtures: String) throws -> Case {
        try Case(
            fixtures: fixtures, folder: "basis-theory-rsa", key: "private.key", certificate: "apple_pay.pem",
            signingTime: "2024-01-08T17:54:44Z")
    }

    init(fixtures: String, folder: String, key: String, certificate: String, signingTime: String) throws {
        let base = URL(fileURLWithPath: fixtures).appendingPathComponent(folder)
        func text(_ name: String) throws -> String { try String(contentsOf: base.appendingPathComponent(name), encoding: .utf8) }
        data = try PaymentToken.parse(Array(try text("token.json").utf8)).paymentData
        decoded = try data.decoded()
        scheme = decoded.scheme
        decryptor = TokenDecryptor(keys: [try ProcessingKey(privateKeyPEM: try text(key), certificatePEM: try text(certificate))])
        at = try Date(signingTime, strategy: .iso8601).addingTimeInterval(30)
        rsaKey = scheme == .rsaV1 ? try _RSA.Encryption.PrivateKey(pemRepresentation: try text(key)) : nil
        sizes = Sizes(
            signedAttributes: try Self.signedAttributesLength(decoded.signature), signedContent: decoded.signedContent.count,
            data: decoded.data.count - 16)
    }

    /// The length of the first signer's signed attributes in the CMS signature.
    static func signedAttributesLength(_ signature: [UInt8]) throws -> Int {
        func children(_ node: ASN1Node) throws -> [ASN1Node] {
            guard case .constructed(let nodes) = node.content else { throw ASN1Error.invalidASN1Object(reason: "not constructed") }
            return Array(nodes)
        }
        let signedData = try children(try children(try children(try BER.parse(signature))[1])[0])
        let signer = try children(try children(signedData[signedData.count - 1])[0])
        return signer[3].encodedBytes.count
    }

    func measure(seconds: Double) throws -> Double {
        _ = try decryptor.decrypt(try verifier.verify(data, at: at).decoded)  // warm the chain cache
        return try TokenBenchmark.rate(seconds: seconds) { _ = try decryptor.decrypt(try verifier.verify(data, at: at).decoded) }
    }

    /// What this token's cryptography costs by `openssl speed`'s times.
    func bound(_ speed: OpenSSLSpeed) -> Bound {
        let hashBlocks = sha256Blocks(sizes.signedAttributes) + sha256Blocks(sizes.signedContent) + (scheme == .ecV1 ? sha256Blocks(87) : 0)
        let hashes = ("SHA-256 of \(hashBlocks) blocks", Double(hashBlocks) * speed.sha256Block)
        switch scheme {
        case .ecV1:
            return Bound(parts: [
                ("1 ECDSA P-256 verify", speed.ecdsaVerify), ("1 ECDH P-256", speed.ecdh), hashes,
                ("1 AES-256-GCM open of \(sizes.data) B", speed.aes256GCM),
            ])
        case .rsaV1:
            return Bound(parts: [
                ("1 RSA-2048 verify", speed.rsaVerify), ("1 RSA-2048 private (\(speed.rsaPrivateColumn))", speed.rsaPrivate), hashes,
                ("1 AES-128-GCM open of \(sizes.data) B", speed.aes128GCM),
            ])
        }
    }

    /// Tokens/s if a token cost only its primitives through swift-crypto: the same verify, key
    /// agreement or unwrap, hashes and AES-GCM open as `bound`, with keys parsed once.
    func swiftCryptoRate(seconds: Double) throws -> Double {
        let attributes = [UInt8](repeating: 0x31, count: sizes.signedAttributes)
        let content = decoded.signedContent
        let kdfInput = [UInt8](repeating: 1, count: 87)
        let ciphertext = Array(decoded.data.dropLast(16))
        let iv = try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16))
        switch scheme {
        case .ecV1:
            let signer = P256.Signing.PrivateKey()
            let signature = try signer.signature(for: attributes)
            let ecdhKey = P256.KeyAgreement.PrivateKey()
            let peer = P256.KeyAgreement.PrivateKey().publicKey
            let key = SymmetricKey(size: .bits256)
            let sealed = try AES.GCM.seal(ciphertext, using: key, nonce: iv)
            return try TokenBenchmark.rate(seconds: seconds) {
                guard signer.publicKey.isValidSignature(signature, for: attributes) else { throw CryptoKitError.authenticationFailure }
                _ = SHA256.hash(data: content)
                _ = try ecdhKey.sharedSecretFromKeyAgreement(with: peer)
                _ = SHA256.hash(data: kdfInput)
                _ = try AES.GCM.open(sealed, using: key)
            }
        case .rsaV1:
            guard let rsaKey else { throw CryptoKitError.incorrectKeySize }
            let signer = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let signature = try signer.signature(for: attributes, padding: .insecurePKCS1v1_5)
            let wrapped = decoded.keyMaterial
            let key = SymmetricKey(size: .bits128)
            let sealed = try AES.GCM.seal(ciphertext, using: key, nonce: iv)
            return try TokenBenchmark.rate(seconds: seconds) {
                guard signer.publicKey.isValidSignature(signature, for: attributes, padding: .insecurePKCS1v1_5) else {
                    throw CryptoKitError.authenticationFailure
                }
                _ = SHA256.hash(data: content)
                _ = try rsaKey.decrypt(wrapped, padding: .PKCS1_OAEP_SHA256)
                _ = try AES.GCM.open(sealed, using: key)
            }
        }
    }
}
