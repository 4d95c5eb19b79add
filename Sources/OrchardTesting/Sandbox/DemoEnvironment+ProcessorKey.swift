import ApplePay
import Crypto
import Foundation
import X509

/// The demo as a merchant set up the way Worldpay and Worldline set merchants up by default:
/// the processor made the processing key and keeps it, the merchant has only Apple's certificate.
extension DemoEnvironment {
    /// The mock processor's own processing key: never in `orchard.json`.
    public var processorKeyFile: String { file("test-processor-held.key") }
    /// Its processing certificate from the demo's test PKI: all `orchard.json` lists.
    public var processorCertificateFile: String { file("test-processor-held.pem") }

    /// The key the mock processor holds and decrypts with, and the same as the processing key it
    /// is to the mock, created on first use.
    public func processorHeldKey() throws -> (key: P256.KeyAgreement.PrivateKey, held: ProcessingKey) {
        if let keyPEM = try? String(contentsOfFile: processorKeyFile, encoding: .utf8),
            let certificatePEM = try? String(contentsOfFile: processorCertificateFile, encoding: .utf8),
            let key = try? P256.KeyAgreement.PrivateKey(pemRepresentation: keyPEM),
            let held = try? ProcessingKey(privateKeyPEM: keyPEM, certificatePEM: certificatePEM),
            let certificate = held.certificate, certificate.notValidAfter > Date().addingTimeInterval(86_400)
        {
            return (key, held)
        }
        let key = P256.KeyAgreement.PrivateKey()
        let certificatePEM = try material.pki.processingCertificatePEM(merchantIdentifier: Self.merchantIdentifier, for: key.publicKey)
        guard FileManager.default.createFile(atPath: processorKeyFile, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: processorKeyFile])
        }
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: processorKeyFile))
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: processorCertificateFile))
        return (key, try ProcessingKey(privateKeyPEM: key.pemRepresentation, certificatePEM: certificatePEM))
    }
}
