import ApplePay
import CertificateTools
import Foundation
import OrchardCore
import OrchardServices
import X509

/// Where an identity comes from: one PKCS#12 file, or a certificate file and a key file.
struct IdentityFiles {
    var pkcs12: ConfigurationFile.PKCS12File?
    var certificate: String?
    var key: String?
    var keyPassword: String?
    /// The section, for messages: `merchants[0] (merchant.x): ` or `platformIntegrator.`.
    var section: String

    /// Where the certificate came from, for `/health` and messages.
    func source(_ values: any ConfigurationReader) -> String {
        (pkcs12?.pkcs12 ?? certificate).map(values.describe) ?? ""
    }
}

extension ServerConfiguration {
    /// An identity certificate and its key, in any format `KeyReader` reads, checked together
    /// at `time.now`: the key matches, the certificate is an identity one and is valid.
    static func loadIdentity(_ files: IdentityFiles, values: ConfigurationValues, time: TimeSource) throws(ConfigurationError)
        -> MerchantIdentity
    {
        let (certificates, key, certificateName, keyName) = try readIdentity(files, values: values)
        guard let leaf = certificates.first else { throw ConfigurationError("\(certificateName): no certificate") }
        if CertificateInspector.kind(of: leaf) == .orderType {
            throw ConfigurationError(
                "\(certificateName)\(Self.named(leaf)): this is an Order Type ID certificate (Wallet orders) where the merchant identity certificate goes (\(files.section)identityCertificate); it belongs in walletOrders"
            )
        }
        if CertificateInspector.kind(of: leaf) == .processing {
            throw ConfigurationError(
                "\(certificateName)\(Self.named(leaf)): this is a Payment Processing certificate (key agreement, not TLS client authentication) where the merchant identity certificate goes (\(files.section)identityCertificate)"
            )
        }
        try checkKeyType(key, certificate: leaf, keyName: keyName, certificateName: certificateName)
        do {
            return try MerchantIdentity(
                certificatePEM: Array(KeyReader.pem(certificates).utf8), keyPEM: Array(key.pem.utf8), certificateName: certificateName,
                keyName: keyName, at: time.now)
        } catch {
            throw ConfigurationError(error.message)
        }
    }

    /// The certificates and key of an identity, read from a PKCS#12 file or a certificate/key pair.
    static func readIdentity(_ files: IdentityFiles, values: any ConfigurationReader) throws(ConfigurationError) -> (
        [Certificate], PrivateKeyMaterial, certificateName: String, keyName: String
    ) {
        let section = files.section
        if let pkcs12 = files.pkcs12 {
            guard files.certificate == nil, files.key == nil else {
                throw ConfigurationError(
                    "\(section)identity: give either a PKCS#12 identity or identityCertificate and identityKey, not both")
            }
            let name = values.describe(pkcs12.pkcs12)
            let password = try pkcs12.password.map { reference throws(ConfigurationError) in
                try readPassword(reference, what: "\(section)identity.password", values: values)
            }
            let bytes = try values.read(pkcs12.pkcs12, what: "\(section)identity.pkcs12")
            let contents = try reading(name) { () throws(CertificateToolError) in try KeyReader.pkcs12(bytes, password: password) }
            guard let key = contents.key else { throw ConfigurationError("\(name): the PKCS#12 file holds no private key") }
            guard !contents.certificates.isEmpty else { throw ConfigurationError("\(name): the PKCS#12 file holds no certificate") }
            return (contents.certificates, key, name, name)
        }
        guard let certificate = files.certificate, let keyFile = files.key else {
            throw ConfigurationError(
                "\(section)identityCertificate and identityKey are required (or identity: {\"pkcs12\": …, \"password\": …})")
        }
        let certificateBytes = try values.read(certificate, what: "\(section)identityCertificate")
        let keyBytes = try values.read(keyFile, what: "\(section)identityKey")
        let password = try files.keyPassword.map { reference throws(ConfigurationError) in
            try readPassword(reference, what: "\(section)identityKeyPassword", values: values)
        }
        let certificateName = values.describe(certificate)
        let keyName = values.describe(keyFile)
        let certificates = try reading(certificateName) { () throws(CertificateToolError) in try KeyReader.certificates(certificateBytes) }
        let key = try reading(keyName, passwordKey: "\(section)identityKeyPassword") { () throws(CertificateToolError) in
            try KeyReader.privateKey(keyBytes, password: password)
        }
        return (certificates, key, certificateName, keyName)
    }

    /// Each processing key (file pair or PKCS#12), with its certificate when given.
    static func loadProcessingKeys(
        _ files: [ConfigurationFile.ProcessingKeyFile], merchantIdentifier: String, source: ConfigurationValues, time: TimeSource
    ) throws(ConfigurationError) -> [ProcessingKey] {
        var keys: [ProcessingKey] = []
        for (index, file) in files.enumerated() {
            let label = "processingKeys[\(index)]"
            let (key, certificate, name, certificateName) = try readProcessingKey(file, label: label, values: source)
            if let certificate, [.identity, .orderType].contains(CertificateInspector.kind(of: certificate)) {
                throw ConfigurationError(
                    "\(certificateName)\(Self.named(certificate)): this is a merchant identity certificate (TLS client authentication) where the payment processing certificate goes (\(label).certificate)"
                )
            }
            let loaded: ProcessingKey
            do {
                if let key {
                    loaded =
                        try certificate.map { try ProcessingKey(privateKeyPEM: key.pem, certificatePEM: KeyReader.pem([$0])) }
                        ?? ProcessingKey(privateKeyPEM: key.pem, merchantIdentifier: merchantIdentifier)
                } else if let certificate {
                    loaded = try processorHeld(certificate, merchantIdentifier: merchantIdentifier, name: certificateName)
                } else {
                    throw ConfigurationError(
                        "\(label): privateKey (or pkcs12) is required, or certificate alone when the processor holds the key")
                }
            } catch let error as ConfigurationError {
                throw error
            } catch let error as ApplePayError {
                throw ConfigurationError("\(name): \(error.message)")
            } catch {
                throw ConfigurationError("\(name): \(error)")
            }
            if let certificate = loaded.certificate, certificate.notValidAfter < time.now {
                throw ConfigurationError(
                    "\(certificateName): the processing certificate expired on \(certificate.notValidAfter.formatted(.iso8601)); create a new one in the Apple Developer portal"
                )
            }
            keys.append(loaded)
        }
        return keys
    }

    /// A processing certificate alone: the processor holds its private key. It must be for this
    /// merchant, since Orchard never decrypts a token that could show otherwise.
    static func processorHeld(_ certificate: Certificate, merchantIdentifier: String, name: String) throws -> ProcessingKey {
        let key = try ProcessingKey(processorHeldCertificatePEM: KeyReader.pem([certificate]))
        guard key.isFor(merchantIdentifier: merchantIdentifier) else {
            throw ConfigurationError(
                "\(name)\(Self.named(certificate)): this processing certificate is for another merchant ID than \(merchantIdentifier) (its 1.2.840.113635.100.6.32 extension)"
            )
        }
        return key
    }

    /// The private key (nil for a certificate alone, which the processor's key belongs to) and
    /// the processing certificate of one `processingKeys` entry.
    static func readProcessingKey(_ file: ConfigurationFile.ProcessingKeyFile, label: String, values: ConfigurationValues)
        throws(ConfigurationError) -> (PrivateKeyMaterial?, Certificate?, name: String, certificateName: String)
    {
        let password = try file.password.map { reference throws(ConfigurationError) in
            try readPassword(reference, what: "\(label).password", values: values)
        }
        if let pkcs12 = file.pkcs12 {
            guard file.privateKey == nil, file.certificate == nil else {
                throw ConfigurationError("\(label): give either pkcs12 or privateKey (and certificate), not both")
            }
            let name = values.describe(pkcs12)
            let bytes = try values.read(pkcs12, what: "\(label).pkcs12")
            let contents = try reading(name) { () throws(CertificateToolError) in try KeyReader.pkcs12(bytes, password: password) }
            guard let key = contents.key else { throw ConfigurationError("\(name): the PKCS#12 file holds no private key") }
            return (key, contents.certificates.first, name, name)
        }
        guard let privateKey = file.privateKey else {
            guard let certificateFile = file.certificate else {
                throw ConfigurationError(
                    "\(label): privateKey (or pkcs12) is required, or certificate alone when the processor holds the key")
            }
            guard file.password == nil else { throw ConfigurationError("\(label): password goes with a privateKey or pkcs12") }
            let certificateName = values.describe(certificateFile)
            let bytes = try values.read(certificateFile, what: "\(label).certificate")
            let certificates = try reading(certificateName) { () throws(CertificateToolError) in try KeyReader.certificates(bytes) }
            return (nil, certificates.first, certificateName, certificateName)
        }
        let name = values.describe(privateKey)
        let keyBytes = try values.read(privateKey, what: "\(label).privateKey")
        let key = try reading(name, passwordKey: "\(label).password") { () throws(CertificateToolError) in
            try KeyReader.privateKey(keyBytes, password: password)
        }
        guard let certificateFile = file.certificate else { return (key, nil, name, "") }
        let certificateName = values.describe(certificateFile)
        let bytes = try values.read(certificateFile, what: "\(label).certificate")
        let certificates = try reading(certificateName) { () throws(CertificateToolError) in try KeyReader.certificates(bytes) }
        return (key, certificates.first, name, certificateName)
    }

    /// A password named by `env:NAME` or a file; the file's trailing line break is not part of it.
    static func readPassword(_ reference: String, what: String, values: any ConfigurationReader) throws(ConfigurationError) -> String {
        let bytes = try values.read(reference, what: "\(what) (env:NAME or a file; never the password itself)")
        var text = String(decoding: bytes, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    /// Runs a reader, naming the file in its refusal (and the password key when one is missing).
    static func reading<T>(_ name: String, passwordKey: String? = nil, _ read: () throws(CertificateToolError) -> T)
        throws(ConfigurationError) -> T
    {
        do {
            return try read()
        } catch {
            let hint = passwordKey.map { error.message.hasSuffix("give its password") ? " (\($0): env:NAME or a file)" : "" } ?? ""
            throw ConfigurationError("\(name): \(error.message)\(hint)")
        }
    }

    /// "an RSA key but the certificate is EC": a clearer refusal than a mismatch.
    static func checkKeyType(_ key: PrivateKeyMaterial, certificate: Certificate, keyName: String, certificateName: String)
        throws(ConfigurationError)
    {
        let certificateType = CertificateInspector.publicKeyType(certificate.publicKey)
        guard key.type == certificateType || certificateType == "other" else {
            throw ConfigurationError(
                "\(keyName): \(key.description) but the certificate \(certificateName) holds an \(certificateType) key")
        }
    }
}

extension ServerConfiguration {
    /// ` ("CN")`, to help the operator find the certificate in Apple's portal; never used to decide.
    static func named(_ certificate: Certificate) -> String {
        CertificateInspector.commonName(of: certificate).map { " (\"\($0.prefix(128))\")" } ?? ""
    }
}
