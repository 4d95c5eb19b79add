import ApplePay
import Crypto
import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// The CMS signer names its certificate by issuer and serial number. A serial whose top bit is set
/// carries a 00 sign octet in DER, which swift-certificates strips from `Certificate.SerialNumber`:
/// the two must be compared as numbers, or every token of such a leaf is refused.
@Suite("The signer's serial number is compared by value")
struct SignerSerialTests {
    static let merchant = "merchant.dev.orchard.test"

    /// Serials of every length class: one byte, the largest positive byte, the smallest that needs a
    /// sign octet, two bytes with the top bit set, and the 20 bytes RFC 5280 allows, top bit set.
    static let serials: [[UInt8]] = [
        [0x01], [0x7F], [0x80], [0xFF, 0x01], [0xD1] + Array(repeating: 0xCA, count: 18) + [0x5D],
    ]

    @Test("a token signed by a leaf with this serial verifies, EC_v1 and RSA_v1", arguments: serials)
    func verifies(_ serial: [UInt8]) throws {
        let chain = try TestAppleChain.make(leafSerial: Certificate.SerialNumber(bytes: serial))
        let minter = TokenMinter(chain: chain)
        let verifier = TokenVerifier(root: chain.root.certificate)
        let ecKey = P256.KeyAgreement.PrivateKey()
        let ec = try minter.mintEC(payload: TokenMinter.samplePayload(amount: 100), to: ecKey.publicKey, merchantIdentifier: Self.merchant)
        #expect(try Self.signerSerialContent(ec) == (serial[0] & 0x80 != 0 ? [0x00] + serial : serial), "DER, with its sign octet")
        #expect(try verifier.verify(ec, at: Date()).decoded.scheme == .ecV1)
        let rsaKey = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
        let rsa = try minter.mintRSA(payload: TokenMinter.samplePayload(amount: 100), to: rsaKey.publicKey)
        #expect(try verifier.verify(rsa, at: Date()).decoded.scheme == .rsaV1)
    }

    @Test("a signer naming another serial of the same issuer is refused")
    func otherSerial() throws {
        let chain = try TestAppleChain.make(leafSerial: Certificate.SerialNumber(bytes: [0x80]))
        let key = P256.KeyAgreement.PrivateKey()
        var token = try TokenMinter(chain: chain).mintEC(
            payload: TokenMinter.samplePayload(amount: 100), to: key.publicKey, merchantIdentifier: Self.merchant)
        var signature = try #require(Data(base64Encoded: token.signature).map(Array.init))
        // The sid's INTEGER is 02 02 00 80, after the certificates (the leaf's own serial is the
        // first such run): point it at serial 0x81 instead, same issuer bytes.
        let sid = try #require(Self.lastRange(of: [0x02, 0x02, 0x00, 0x80], in: signature))
        signature[sid.upperBound - 1] = 0x81
        token.signature = Data(signature).base64EncodedString()
        #expect {
            _ = try TokenVerifier(root: chain.root.certificate).verify(token, at: Date())
        } throws: { ($0 as? ApplePayError)?.code == .signerMismatch }
    }

    @Test("INTEGER values: sign and padding octets are read, not compared as bytes")
    func integerValues() {
        func value(_ bytes: [UInt8]) -> ASN1IntegerValue? { ASN1IntegerValue(content: bytes) }
        #expect(value([0x00, 0x80]) == value([0x00, 0x00, 0x80]))
        #expect(value([0x00, 0x80]) != value([0x80]), "+128 is not -128")
        #expect(value([0xFF, 0x80]) == value([0x80]))
        #expect(value([0x00, 0x7F]) == value([0x7F]))
        #expect(value([0x00]) == value([0x00, 0x00]))
        #expect(value([]) == nil)
        #expect(value([0x00] + Array(repeating: 0xFF, count: 20))?.octets.count == 21)
    }

    /// The content octets of the signer's serial INTEGER in the token's CMS signature.
    static func signerSerialContent(_ token: PaymentData) throws -> [UInt8] {
        let der = try #require(Data(base64Encoded: token.signature).map(Array.init))
        // ContentInfo → [0] → SignedData → last SET (signerInfos) → SignerInfo → sid → serial.
        let contentInfo = try DER.parse(der)
        guard case .constructed(let info) = contentInfo.content, let wrapper = Array(info).last,
            case .constructed(let wrapped) = wrapper.content, let signedData = Array(wrapped).first,
            case .constructed(let fields) = signedData.content, let signerInfos = Array(fields).last,
            case .constructed(let signers) = signerInfos.content, let signer = Array(signers).first,
            case .constructed(let signerFields) = signer.content, let sid = Array(signerFields).dropFirst().first,
            case .constructed(let sidFields) = sid.content, let serial = Array(sidFields).last,
            case .primitive(let content) = serial.content
        else { throw ApplePayError(.malformedSignature, "no signer serial") }
        return Array(content)
    }

    static func lastRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in (0...(haystack.count - needle.count)).reversed() where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start..<start + needle.count
        }
        return nil
    }
}
