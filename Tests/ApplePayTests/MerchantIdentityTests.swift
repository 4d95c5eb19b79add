import ApplePay
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509
import _CryptoExtras

@Suite("Merchant identity checks")
struct MerchantIdentityTests {
    /// A self-signed RSA certificate carrying the merchant-ID extension, valid for `days` from `start`.
    func make(start: Date, days: Double, merchant: String = "merchant.com.example") throws -> (cert: String, key: String) {
        let key = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let name = try DistinguishedName { CommonName("Merchant ID: \(merchant)") }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: key.publicKey,
            notValidBefore: start, notValidAfter: start.addingTimeInterval(days * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions { try MerchantIdentifierExtension.make(merchantIdentifier: merchant) },
            issuerPrivateKey: key)
        return (try certificate.serializeAsPEM().pemString, try key.serializeAsPEM().pemString)
    }

    @Test("a matching, valid pair loads and exposes the merchant-ID hash and days left")
    func valid() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let pair = try make(start: now.addingTimeInterval(-86_400), days: 31)
        let identity = try MerchantIdentity(
            certificatePEM: Array(pair.cert.utf8), keyPEM: Array(pair.key.utf8), certificateName: "c.pem", keyName: "k.pem", at: now)
        #expect(identity.merchantIdentifierHash == MerchantIdentifierExtension.hash(of: "merchant.com.example"))
        #expect(identity.daysLeft(at: now) == 30)
    }

    @Test("the clock decides expiry: the same pair is valid inside its window only")
    func injectedClock() throws {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let pair = try make(start: start, days: 10)
        func check(_ date: Date) -> ApplePayError.Code? {
            do {
                _ = try MerchantIdentity(
                    certificatePEM: Array(pair.cert.utf8), keyPEM: Array(pair.key.utf8), certificateName: "c", keyName: "k", at: date)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(check(start.addingTimeInterval(86_400)) == nil)
        #expect(check(start.addingTimeInterval(-1)) == .certificateNotYetValid)
        #expect(check(start.addingTimeInterval(11 * 86_400)) == .certificateExpired)
    }

    @Test("mismatched, encrypted and unreadable keys are refused with the file named")
    func badKeys() throws {
        let now = Date()
        let a = try make(start: now.addingTimeInterval(-60), days: 1)
        let b = try make(start: now.addingTimeInterval(-60), days: 1)
        #expect {
            _ = try MerchantIdentity(
                certificatePEM: Array(a.cert.utf8), keyPEM: Array(b.key.utf8), certificateName: "a.pem", keyName: "b.key", at: now)
        } throws: { ($0 as? ApplePayError)?.code == .keyMismatch && ($0 as? ApplePayError)?.message.hasPrefix("b.key:") == true }
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"
        #expect {
            _ = try MerchantIdentity(
                certificatePEM: Array(a.cert.utf8), keyPEM: Array(encrypted.utf8), certificateName: "a.pem", keyName: "e.key", at: now)
        } throws: { ($0 as? ApplePayError)?.code == .invalidPrivateKey }
        #expect {
            _ = try MerchantIdentity(
                certificatePEM: Array("junk".utf8), keyPEM: Array(a.key.utf8), certificateName: "j.pem", keyName: "a.key", at: now)
        } throws: { ($0 as? ApplePayError)?.code == .invalidCertificate && ($0 as? ApplePayError)?.message.hasPrefix("j.pem:") == true }
    }
}
