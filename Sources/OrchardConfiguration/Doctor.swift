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
    /// The processor drivers the program is built with: a file's Google Pay gateway is checked
    /// against its processor's settings as the server loads them.
    let processorDrivers: [any ProcessorDriver]
    /// Makes a merchant's processor client for the live checks (`doctor --live`); nil asks no processor.
    let liveProcessors: (@Sendable (any ProcessorSettings) -> any PaymentProcessor)?

    public init(
        sessions: (any MerchantSessionService)?, probe: (any DomainProbe)? = nil, signer: DomainFileSigner? = nil,
        time: TimeSource = .system, processorDrivers: [any ProcessorDriver] = [RecordOnlyDriver()],
        liveProcessors: (@Sendable (any ProcessorSettings) -> any PaymentProcessor)? = nil
    ) {
        self.processorDrivers = processorDrivers
        self.liveProcessors = liveProcessors
        self.sessions = sessions
        self.probe = probe
        self.signer = signer
        self.time = time
    }

    /// Checks a configuration file piece by piece (paths relative to `folder`): each merchant,
    /// then the platform integrator, if any.
    public func check(file: ConfigurationFile, folder: String, environment: [String: String]) async -> DoctorReport {
        let values = ConfigurationValues(folder: folder, environment: environment)
        var checks: [DoctorCheck] = []
        for merchant in file.merchants {
            let files = IdentityFiles(
                pkcs12: merchant.identity, certificate: merchant.identityCertificate, key: merchant.identityKey,
                keyPassword: merchant.identityKeyPassword, section: "")
            let piece = Piece(
                subject: merchant.merchantIdentifier, merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName,
                domains: merchant.domains.map { $0.lowercased() }, identity: files, association: merchant.domainAssociationFile,
                associationKey: "domainAssociationFile", processingKeys: merchant.processingKeys ?? [])
            checks += await pieceChecks(piece, values: values)
            if let walletOrders = merchant.walletOrders {
                checks.append(walletOrdersCheck(walletOrders, merchant: merchant, values: values))
            }
            if let googlePay = merchant.googlePay {
                checks.append(await googlePayCheck(googlePay, merchant: merchant, values: values))
            }
        }
        if let platform = file.platformIntegrator {
            let files = IdentityFiles(
                pkcs12: platform.identity, certificate: platform.identityCertificate, key: platform.identityKey,
                keyPassword: platform.identityKeyPassword, section: "platformIntegrator.")
            let piece = Piece(
                subject: Self.platformSubject(platform.merchantIdentifier), merchantIdentifier: platform.merchantIdentifier,
                displayName: platform.merchantIdentifier, domains: [], identity: files, association: platform.domainAssociationFile,
                associationKey: "platformIntegrator.domainAssociationFile", processingKeys: platform.processingKeys ?? [])
            checks += await pieceChecks(piece, values: values)
            checks.append(settingsKeyCheck(platform, values: values))
        }
        return DoctorReport(checks: checks)
    }

    /// What a merchant's (or the platform's) lines are made from.
    struct Piece {
        var subject: String
        var merchantIdentifier: String
        var displayName: String
        var domains: [String]
        var identity: IdentityFiles
        var association: String?
        var associationKey: String
        var processingKeys: [ConfigurationFile.ProcessingKeyFile]
    }

    /// The platform integrator's lines name it so: `platform merchant.x identity: …`.
    public static func platformSubject(_ merchantIdentifier: String) -> String { "platform \(merchantIdentifier)" }

    /// One merchant's (or the platform's) identity, merchant ID, association file, domains,
    /// processing keys and sessions, each loaded as the loader loads it and checked on its own.
    func pieceChecks(_ piece: Piece, values: ConfigurationValues) async -> [DoctorCheck] {
        let subject = piece.subject
        var checks: [DoctorCheck] = []
        var identity: MerchantIdentity?
        do {
            identity = try ServerConfiguration.loadIdentity(piece.identity, values: values, time: time)
        } catch {
            checks.append(DoctorCheck(subject: subject, check: "identity", passed: false, detail: error.message))
        }
        if let identity { checks += identityChecks(identity, subject: subject, merchantIdentifier: piece.merchantIdentifier) }
        var association: [UInt8]?
        if let reference = piece.association {
            do {
                association = try values.read(reference, what: piece.associationKey)
            } catch {
                checks.append(DoctorCheck(subject: subject, check: "association file", passed: false, detail: error.message))
            }
        }
        if piece.association == nil || association != nil {
            checks.append(associationCheck(association, subject: subject, key: piece.associationKey))
        }
        checks += await domainChecks(piece.domains, expected: association, subject: subject)
        var keys: [(number: Int, key: ProcessingKey)] = []
        for (index, key) in piece.processingKeys.enumerated() {
            do {
                let loaded = try ServerConfiguration.loadProcessingKeys(
                    [key], merchantIdentifier: piece.merchantIdentifier, source: values, time: time)
                checks += loaded.map { keyCheck($0, number: index + 1, subject: subject, merchantIdentifier: piece.merchantIdentifier) }
                keys += loaded.map { (index + 1, $0) }
            } catch {
                checks.append(DoctorCheck(subject: subject, check: "processing key \(index + 1)", passed: false, detail: error.message))
            }
        }
        checks += decryptChecks(keys, after: checks, subject: subject, merchantIdentifier: piece.merchantIdentifier)
        if let identity {
            let configured = MerchantConfiguration(
                merchantIdentifier: piece.merchantIdentifier, displayName: piece.displayName, domains: piece.domains,
                identity: identity, identitySource: piece.identity.source(values))
            checks += await sessionChecks(configured, subject: subject)
        }
        return checks
    }

    /// Checks a loaded configuration (the admin API): what loading cannot prove on its own.
    public func check(configuration: ServerConfiguration) async -> DoctorReport {
        var checks: [DoctorCheck] = []
        for merchant in configuration.merchants {
            checks += await loadedChecks(merchant, subject: merchant.merchantIdentifier, associationKey: "domainAssociationFile")
        }
        if let platform = configuration.platform {
            let subject = Self.platformSubject(platform.merchantIdentifier)
            checks += await loadedChecks(platform, subject: subject, associationKey: "platformIntegrator.domainAssociationFile")
            checks.append(settingsKeyCheck(loaded: configuration.settingsVault != nil, subject: subject))
        }
        return DoctorReport(checks: checks)
    }

    /// A loaded merchant's (or platform's) lines.
    func loadedChecks(_ merchant: MerchantConfiguration, subject: String, associationKey: String) async -> [DoctorCheck] {
        let merchantIdentifier = merchant.merchantIdentifier
        var checks = identityChecks(merchant.identity, subject: subject, merchantIdentifier: merchantIdentifier)
        checks.append(associationCheck(merchant.domainAssociation, subject: subject, key: associationKey))
        checks += await domainChecks(merchant.domains, expected: merchant.domainAssociation, subject: subject)
        for (index, key) in merchant.processingKeys.enumerated() {
            checks.append(keyCheck(key, number: index + 1, subject: subject, merchantIdentifier: merchantIdentifier))
        }
        checks += decryptChecks(
            merchant.processingKeys.enumerated().map { ($0.offset + 1, $0.element) }, after: checks, subject: subject,
            merchantIdentifier: merchantIdentifier)
        if let walletOrders = merchant.walletOrders {
            checks.append(walletOrdersCheck(walletOrders, merchantIdentifier: merchantIdentifier))
        }
        if let googlePay = merchant.googlePay {
            checks.append(await googlePayCheck(googlePay, processor: merchant.processor, subject: subject))
        }
        return checks + (await sessionChecks(merchant, subject: subject))
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

    /// The association file: its size when configured. None configured is legitimate (the shop's
    /// own web server serves Apple's file): the line says Orchard will not serve it.
    func associationCheck(_ bytes: [UInt8]?, subject: String, key: String) -> DoctorCheck {
        guard let bytes else {
            return DoctorCheck(
                subject: subject, check: "association file", passed: true,
                detail:
                    "no \(key): Orchard will not serve /.well-known/apple-developer-merchantid-domain-association, so each domain's own web server must serve Apple's file (check with --domains)"
            )
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

    func sessionChecks(_ merchant: MerchantConfiguration, subject: String) async -> [DoctorCheck] {
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
                        subject: subject, check: check, passed: true, detail: "Apple returned a merchant session"))
            } catch let error as GatewayError {
                checks.append(DoctorCheck(subject: subject, check: check, passed: false, detail: error.hint))
            } catch {
                checks.append(DoctorCheck(subject: subject, check: check, passed: false, detail: "\(error)"))
            }
        }
        return checks
    }
}
