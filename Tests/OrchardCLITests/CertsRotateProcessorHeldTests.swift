import ApplePay
import Crypto
import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509

extension CertsRotateTests {
    @Test("a processing key the processor holds is rotated from Apple's new certificate: import, prove by its checks and hash, retire")
    func processorHeldRotation() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        // The merchant as Worldpay sets it up: a certificate alone, Worldpay holding the key.
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: setup.configuration))) as? [String: Any])
        var merchants = try #require(json["merchants"] as? [[String: Any]])
        merchants[0]["processingKeys"] = [["certificate": "a.pem"]]
        merchants[0]["processor"] = [
            "type": "worldpay", "baseURL": "https://127.0.0.1:9", "allowNonProductionHost": true, "entity": "E",
            "username": "env:WP_USER", "password": "env:WP_PASSWORD", "narrative": "Orchard",
        ]
        json["merchants"] = merchants
        try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            .write(to: URL(fileURLWithPath: setup.configuration))

        let csr = try await setup.rotate("csr")
        #expect(csr.status == 1 && csr.stderr.contains("get the new CSR from the processor"), "\(csr.stderr)")
        let status = try await setup.rotate("status")
        #expect(status.stdout.contains("rotate import"), "\(status.stdout)")

        // The processor's new key, and Apple's certificate for it; an identity certificate is refused.
        let keyB = P256.KeyAgreement.PrivateKey()
        let pki = setup.environment.material.pki
        let identity = try setup.write(try pki.issueMerchantIdentity(merchantIdentifier: Self.merchant).certificate, "identity.cer")
        let refused = try await setup.rotate("import", ["--cer", identity])
        #expect(refused.status == 1 && refused.stderr.contains("not a processing certificate"), "\(refused.stderr)")
        let newCertificate = try setup.write(
            try pki.issueProcessingCertificate(merchantIdentifier: Self.merchant, publicKey: try Setup.publicKey(keyB)), "apple_pay.cer")
        let imported = try await setup.rotate("import", ["--cer", newCertificate])
        #expect(imported.status == 0, "\(imported.stderr)")
        let hashB = Data(SHA256.hash(data: keyB.publicKey.derRepresentation)).base64EncodedString()
        #expect(imported.stdout.contains("publicKeyHash is \(hashB)"), "\(imported.stdout)")
        let keys = try setup.processingKeys()
        #expect(keys.count == 2 && keys[0] == ["certificate": "a.pem"] && keys[1].keys.sorted() == ["certificate"], "\(keys)")

        let early = try await setup.rotate("retire")
        #expect(early.status == 1 && early.stderr.contains("rotate prove"), "\(early.stderr)")
        let proven = try await setup.rotate("prove")
        #expect(proven.status == 0, "\(proven.stderr)")
        #expect(proven.stdout.contains("✓ \(Self.merchant) processing key 2: publicKeyHash \(hashB)"), "\(proven.stdout)")
        #expect(proven.stdout.contains("the processor holds the private key"), "\(proven.stdout)")

        let retired = try await setup.rotate("retire")
        #expect(retired.status == 0, "\(retired.stderr)")
        #expect(try setup.processingKeys() == [keys[1]], "only the new certificate is left")
    }
}
