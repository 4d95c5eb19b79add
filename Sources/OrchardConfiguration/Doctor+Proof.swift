import ApplePay
import Foundation
import OrchardCore
import OrchardServices

/// What the doctor proves by doing it rather than by reading it: a token encrypted to each
/// processing key decrypts, and (for a rotation) a new identity gets a merchant session.
extension Doctor {
    /// The check naming a processing key's decryption proof (`token for processing key 2`).
    public static func decryptCheckName(number: Int) -> String { "token for processing key \(number)" }

    /// For each key whose own check passed: a token encrypted, as Apple encrypts it, to the key's
    /// processing certificate's public key for `merchantIdentifier` decrypts with the
    /// merchant's keys through ``TokenDecryptor``, the server's decryption, back to the same
    /// bytes. Apple's signature is not part of it (only Apple can sign): the token verifier does
    /// not depend on the processing key.
    func decryptChecks(
        _ keys: [(number: Int, key: ProcessingKey)], after checks: [DoctorCheck], subject: String, merchantIdentifier: String
    ) -> [DoctorCheck] {
        let decryptor = TokenDecryptor(keys: keys.map(\.key))
        let merchantHash = Hex.decode(MerchantIdentifierExtension.hash(of: merchantIdentifier)) ?? []
        return keys.compactMap { number, key in
            // A processor-held key decrypts at the processor only: there is nothing for Orchard to prove here.
            guard key.processorHeldScheme == nil,
                checks.contains(where: { $0.subject == subject && $0.check == "processing key \(number)" && $0.passed })
            else {
                return nil
            }
            let name = Self.decryptCheckName(number: number)
            let hash = Data(key.publicKeyHash).base64EncodedString()
            guard let publicKey = key.publicKey else {
                return DoctorCheck(subject: subject, check: name, passed: false, detail: "the key's public half cannot be read")
            }
            do throws(ApplePayError) {
                let token = try TokenEncryptor.encrypt(Self.proofPayload, to: publicKey, merchantIdentifierHash: merchantHash)
                let payment = try decryptor.decrypt(token)
                guard payment.json == Self.proofPayload else {
                    return DoctorCheck(subject: subject, check: name, passed: false, detail: "a token decrypted to other bytes")
                }
                return DoctorCheck(
                    subject: subject, check: name, passed: true,
                    detail: "a token encrypted to publicKeyHash \(hash) for \(merchantIdentifier) decrypts with the configured keys")
            } catch {
                return DoctorCheck(
                    subject: subject, check: name, passed: false,
                    detail: "a token encrypted to publicKeyHash \(hash) does not decrypt: \(error.message)")
            }
        }
    }

    /// A payment's plaintext in Apple's shape, with no card behind it.
    static let proofPayload = Array(
        """
        {"applicationPrimaryAccountNumber":"0000000000000000","applicationExpirationDate":"991231","currencyCode":"978",\
        "transactionAmount":0,"deviceManufacturerIdentifier":"000000000000","paymentDataType":"3DSecure",\
        "paymentData":{"onlinePaymentCryptogram":"AAAAAAAAAAAAAAAAAAAAAAAAAAA=","eciIndicator":"7"}}
        """.utf8)

    /// Checks an identity that is not configured yet (`certificate` and `key`, paths relative
    /// to `folder`) for `merchant`: it loads as `serve` would load it, is the merchant's, and
    /// (with a session service) gets a merchant session for each of the merchant's domains.
    public func checkIdentity(
        certificate: String, key: String, merchant: ConfigurationFile.Merchant, folder: String, environment: [String: String]
    ) async -> [DoctorCheck] {
        let values = ConfigurationValues(folder: folder, environment: environment)
        let subject = merchant.merchantIdentifier
        let files = IdentityFiles(certificate: certificate, key: key, section: "")
        let identity: MerchantIdentity
        do {
            identity = try ServerConfiguration.loadIdentity(files, values: values, time: time)
        } catch {
            return [DoctorCheck(subject: subject, check: "identity", passed: false, detail: error.message)]
        }
        let configured = MerchantConfiguration(
            merchantIdentifier: subject, displayName: merchant.displayName, domains: merchant.domains.map { $0.lowercased() },
            identity: identity, identitySource: files.source(values))
        return identityChecks(identity, subject: subject, merchantIdentifier: subject) + (await sessionChecks(configured, subject: subject))
    }
}
