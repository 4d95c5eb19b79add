import ApplePay
import CertificateTools
import Foundation
import OrchardConfiguration
import OrchardRuntime
import OrchardServer
import OrchardServices
import X509

/// A processing key the processor holds: the processor makes the new key and its CSR, so the
/// rotation starts at import, with Apple's new certificate; prove checks it as the doctor does
/// (kind, merchant ID, validity) and names the hash its tokens will carry, since only the
/// processor can decrypt one; retire is the same.
extension Rotation {
    /// Whether every processing key of the merchant is a certificate alone.
    var processorHoldsKeys: Bool {
        let keys = merchant.processingKeys ?? []
        return isProcessing && !keys.isEmpty && keys.allSatisfy { $0.privateKey == nil && $0.pkcs12 == nil }
    }

    /// The new certificate's entry: a certificate alone, in the rotation's folder.
    func processorHeldEntry(_ folder: String) -> ConfigurationFile.ProcessingKeyFile {
        .init(privateKey: nil, certificate: "\(folder)/processing.pem")
    }

    /// Step 2 as the first step: checks the `.cer` made on the processor's new CSR and lists it
    /// as a certificate alone beside the old ones.
    func importProcessorHeld(_ cer: String, at now: Date) throws {
        guard let bytes = FileManager.default.contents(atPath: cer) else { throw CommandFailure("cannot read \(cer)") }
        let certificate: Certificate
        do {
            certificate = try CertificateRequests.readCertificate(Array(bytes))
        } catch {
            throw CommandFailure("\(cer): \(error.message)")
        }
        let kind = CertificateInspector.kind(of: certificate)
        guard kind == .processing else {
            throw CommandFailure("\(cer): this is not a processing certificate (by its key usage), which this rotation needs")
        }
        guard MerchantIdentifierExtension.value(in: certificate)?.uppercased() == MerchantIdentifierExtension.hash(of: options.merchant)
        else {
            throw CommandFailure("\(cer): the certificate's merchant-ID extension (1.2.840.113635.100.6.32) is not \(options.merchant)'s")
        }
        guard certificate.notValidAfter > now, certificate.notValidBefore <= now else {
            throw CommandFailure("\(cer): the certificate is not valid now (\(certificate.notValidBefore) to \(certificate.notValidAfter))")
        }
        let stamp = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false)).filter(\.isNumber)
        let folder = "rotation/\(options.merchant).processing.\(stamp)"
        do {
            try FileManager.default.createDirectory(atPath: path(folder), withIntermediateDirectories: true)
        } catch {
            throw CommandFailure("cannot create \(path(folder)): \(error.localizedDescription)")
        }
        for made in ["rotation", folder] { try ownership.apply(toPath: path(made)) }
        try ownership.replace(path("\(folder)/processing.pem"), bytes: Array(KeyReader.pem([certificate]).utf8), mode: 0o644)
        let hash = try Self.publicKeyHash(certificate)
        say("wrote \(path("\(folder)/processing.pem")): processing certificate for \(options.merchant); the processor holds its key")
        say("its key's publicKeyHash is \(hash)")
        try save(
            RotationState(step: .imported, folder: folder, publicKeyHash: hash, oldKeys: merchant.processingKeys, proof: nil))
        try appendProcessingKey("{\"certificate\": \(ConfigurationEditor.quoted("\(folder)/processing.pem"))}")
        say(
            "next: restart every instance (one at a time) so that each accepts tokens for both keys, then \(next(after: .imported)); the processor activates the new key as it documents"
        )
    }
}
