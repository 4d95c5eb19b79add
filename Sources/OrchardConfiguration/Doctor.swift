import ApplePay
import Foundation
import OrchardCore
import OrchardServices
import X509

/// Diagnoses a merchant setup before Safari does: every merchant's identity, merchant ID,
/// association file and processing keys, each checked on its own so one broken piece does not
/// hide the others, and (live) a real merchant session for each domain.
public struct Doctor: Sendable {
    /// Where live sessions come from (Apple's gateway); nil skips the live checks.
    let sessions: (any MerchantSessionService)?
    /// Fetches each domain's association file as Apple does; nil skips the domain checks.
    let probe: (any DomainProbe)?
    /// Recognises the association file this server (or a sibling sharing its vault key) served;
    /// nil (the command line's doctor): none is.
    let signer: DomainFileSigner?
    let time: TimeSource

    public init(
        sessions: (any MerchantSessionService)?, probe: (any DomainProbe)? = nil, signer: DomainFileSigner? = nil,
        time: TimeSource = .system
    ) {
        self.sessions = sessions
        self.probe = probe
        self.signer = signer
        self.time = time
    }

    /// Checks a configuration file piece by piece (paths relative to `folder`).
    public func check(file: ConfigurationFile, folder: String, environment: [String: String]) async -> DoctorReport {
        let values = ConfigurationValues(folder: folder, environment: environment)
        var checks: [DoctorCheck] = []
        for merchant in file.merchants {
            let subject = merchant.merchantIdentifier
            let files = IdentityFiles(
                pkcs12: merchant.identity, certificate: merchant.identityCertificate, key: merchant.identityKey,
                keyPassword: merchant.identityKeyPassword, section: "")
            var identity: MerchantIdentity?
            do {
                identity = try ServerConfiguration.loadIdentity(files, values: values, time: time)
            } catch {
                checks.append(DoctorCheck(subject: subject, check: "identity", passed: false, detail: error.message))
            }
            if let identity { checks += identityChecks(identity, subject: subject, merchantIdentifier: subject) }
            var association: [UInt8]?
            if let reference = merchant.domainAssociationFile {
                do {
                    association = try values.read(reference, what: "domainAssociationFile")
                } catch {
                    checks.append(DoctorCheck(subject: subject, check: "association file", passed: false, detail: error.message))
                }
            }
            if merchant.domainAssociationFile == nil || association != nil {
                checks.append(associationCheck(association, subject: subject))
            }
            checks += await domainChecks(merchant.domains.map { $0.lowercased() }, expected: association, subject: subject)
            var keys: [(number: Int, key: ProcessingKey)] = []
            for (index, key) in (merchant.processingKeys ?? []).enumerated() {
                do {
                    let loaded = try ServerConfiguration.loadProcessingKeys([key], merchantIdentifier: subject, source: values, time: time)
                    checks += loaded.map { keyCheck($0, number: index + 1, subject: subject, merchantIdentifier: subject) }
                    keys += loaded.map { (index + 1, $0) }
                } catch {
                    checks.append(DoctorCheck(subject: subject, check: "processing key \(index + 1)", passed: false, detail: error.message))
                }
            }
            checks += decryptChecks(keys, after: checks, subject: subject)
            if let identity {
                let configured = MerchantConfiguration(
                    merchantIdentifier: subject, displayName: merchant.displayName, domains: merchant.domains.map { $0.lowercased() },
                    identity: identity, identitySource: files.source(values))
                checks += await sessionChecks(configured)
            }
        }
        return DoctorReport(checks: checks)
    }

    /// Checks a loaded configuration (the admin API): what loading cannot prove on its own.
    public func check(configuration: ServerConfiguration) async -> DoctorReport {
        var checks: [DoctorCheck] = []
        for merchant in configuration.merchants {
            let subject = merchant.merchantIdentifier
            checks += identityChecks(merchant.identity, subject: subject, merchantIdentifier: subject)
            checks.append(associationCheck(merchant.domainAssociation, subject: subject))
            checks += await domainChecks(merchant.domains, expected: merchant.domainAssociation, subject: subject)
            for (index, key) in merchant.processingKeys.enumerated() {
                checks.append(keyCheck(key, number: index + 1, subject: subject, merchantIdentifier: subject))
            }
            checks += decryptChecks(
                merchant.processingKeys.enumerated().map { ($0.offset + 1, $0.element) }, after: checks, subject: subject)
            checks += await sessionChecks(merchant)
        }
        return DoctorReport(checks: checks)
    }

    func identityChecks(_ identity: MerchantIdentity, subject: String, merchantIdentifier: String) -> [DoctorCheck] {
        let days = identity.daysLeft(at: time.now)
        let until = identity.certificate.notValidAfter.formatted(.iso8601)
        var checks = [
            DoctorCheck(
                subject: subject, check: "identity", passed: true,
                detail:
                    "certificate and key match; valid until \(until) (\(days) days\(days < GuardPolicy.warningDays[0] ? ": renew it now" : ""))"
            )
        ]
        let expected = MerchantIdentifierExtension.hash(of: merchantIdentifier)
        switch identity.merchantIdentifierHash?.uppercased() {
        case expected?:
            checks.append(
                DoctorCheck(subject: subject, check: "merchant ID", passed: true, detail: "the certificate is \(merchantIdentifier)'s"))
        case let other?:
            checks.append(
                DoctorCheck(
                    subject: subject, check: "merchant ID", passed: false,
                    detail:
                        "the identity certificate is for another merchant ID (its 1.2.840.113635.100.6.32 hash is \(other.prefix(16))…): use the certificate made for \(merchantIdentifier), or fix merchantIdentifier"
                ))
        case nil:
            checks.append(
                DoctorCheck(
                    subject: subject, check: "merchant ID", passed: false,
                    detail:
                        "the identity certificate carries no merchant-ID extension: it is not an Apple Pay Merchant Identity certificate"))
        }
        return checks
    }

    func associationCheck(_ bytes: [UInt8]?, subject: String) -> DoctorCheck {
        guard let bytes else {
            return DoctorCheck(
                subject: subject, check: "association file", passed: false,
                detail: "no domainAssociationFile: download it from the Apple Developer portal (merchant ID → Merchant Domains) and set it")
        }
        guard !bytes.isEmpty else {
            return DoctorCheck(
                subject: subject, check: "association file", passed: false, detail: "the file is empty: download it again from Apple")
        }
        return DoctorCheck(subject: subject, check: "association file", passed: true, detail: "\(bytes.count) bytes, served unchanged")
    }

    func keyCheck(_ key: ProcessingKey, number: Int, subject: String, merchantIdentifier: String) -> DoctorCheck {
        let hash = Data(key.publicKeyHash).base64EncodedString()
        let expected = Hex.decode(MerchantIdentifierExtension.hash(of: merchantIdentifier)) ?? []
        guard key.merchantIdentifierHash == expected else {
            return DoctorCheck(
                subject: subject, check: "processing key \(number)", passed: false,
                detail:
                    "publicKeyHash \(hash), but its processing certificate is for another merchant ID: tokens for \(merchantIdentifier) will not decrypt"
            )
        }
        let until = key.certificate.map { " certificate valid until \($0.notValidAfter.formatted(.iso8601));" } ?? ""
        let mode =
            key.processorHeldScheme == nil
            ? "Orchard holds the private key and decrypts"
            : "a certificate alone: the processor holds the private key and decrypts, Orchard never sees card data"
        return DoctorCheck(
            subject: subject, check: "processing key \(number)", passed: true,
            detail: "publicKeyHash \(hash) (tokens name it in header.publicKeyHash); \(mode);\(until) ready")
    }

    /// Each domain serves the association file byte for byte at the well-known path, over
    /// https, without a redirect: what Apple checks when the domain is verified.
    func domainChecks(_ domains: [String], expected: [UInt8]?, subject: String) async -> [DoctorCheck] {
        guard let probe else { return [] }
        var checks: [DoctorCheck] = []
        for domain in domains {
            let verdict: DomainFileVerdict
            do {
                verdict = DomainFileVerdict(
                    try await probe.associationFile(of: domain), domain: domain, expected: expected, signer: signer)
            } catch {
                verdict = DomainFileVerdict(unreachable: error, domain: domain)
            }
            checks.append(DoctorCheck(subject: subject, check: "domain \(domain)", passed: verdict.passed, detail: verdict.detail))
        }
        return checks
    }

    func sessionChecks(_ merchant: MerchantConfiguration) async -> [DoctorCheck] {
        guard let sessions else { return [] }
        var checks: [DoctorCheck] = []
        for domain in merchant.domains {
            let check = "session \(domain)"
            do {
                let request = try MerchantSessionRequest(
                    merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, domain: domain)
                _ = try await sessions.createSession(request, for: merchant)
                checks.append(
                    DoctorCheck(
                        subject: merchant.merchantIdentifier, check: check, passed: true, detail: "Apple returned a merchant session"))
            } catch let error as GatewayError {
                checks.append(DoctorCheck(subject: merchant.merchantIdentifier, check: check, passed: false, detail: error.hint))
            } catch {
                checks.append(DoctorCheck(subject: merchant.merchantIdentifier, check: check, passed: false, detail: "\(error)"))
            }
        }
        return checks
    }
}
