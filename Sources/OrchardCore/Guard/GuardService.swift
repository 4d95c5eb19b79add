import ApplePay
import Foundation
import Logging
import Metrics

/// What the guard watches now, as the configuration and the registry say.
public struct GuardWatch: Sendable {
    /// A domain and the association file it must serve.
    public struct Domain: Sendable {
        public var merchantIdentifier: String
        public var domain: String
        /// Nil when no file is configured: the check fails with the doctor's advice.
        public var expectedFile: [UInt8]?
        /// A registered merchant's: the domain is a tenant's word, fetched only at public addresses.
        public var registered: Bool

        public init(merchantIdentifier: String, domain: String, expectedFile: [UInt8]?, registered: Bool = false) {
            self.merchantIdentifier = merchantIdentifier
            self.domain = domain
            self.expectedFile = expectedFile
            self.registered = registered
        }
    }

    /// An identity or processing certificate Orchard holds.
    public struct Certificate: Sendable {
        public var merchantIdentifier: String
        /// ``GuardCheckKind/identityCertificate`` or ``GuardCheckKind/processingCertificate``.
        public var kind: GuardCheckKind
        public var target: String
        public var notValidAfter: Date

        public init(merchantIdentifier: String, kind: GuardCheckKind, target: String, notValidAfter: Date) {
            self.merchantIdentifier = merchantIdentifier
            self.kind = kind
            self.target = target
            self.notValidAfter = notValidAfter
        }
    }

    public var domains: [Domain]
    public var certificates: [Certificate]
    /// Registered merchants, whose record at Apple must hold every domain of the registry.
    public var registrations: [RegisteredMerchant]
    /// The platform integrator's merchant ID: registered merchants' events go to it too.
    public var platformIdentifier: String?

    public init(domains: [Domain], certificates: [Certificate], registrations: [RegisteredMerchant], platformIdentifier: String?) {
        self.domains = domains
        self.certificates = certificates
        self.registrations = registrations
        self.platformIdentifier = platformIdentifier
    }

    /// Every subject: a domain's file and certificate, each certificate, each registration.
    public var subjects: Set<GuardSubject> {
        var subjects = Set<GuardSubject>()
        for domain in domains {
            subjects.insert(GuardSubject(merchantIdentifier: domain.merchantIdentifier, kind: .domainFile, target: domain.domain))
            subjects.insert(GuardSubject(merchantIdentifier: domain.merchantIdentifier, kind: .domainCertificate, target: domain.domain))
        }
        for certificate in certificates {
            subjects.insert(
                GuardSubject(merchantIdentifier: certificate.merchantIdentifier, kind: certificate.kind, target: certificate.target))
        }
        for merchant in registrations {
            subjects.insert(
                GuardSubject(merchantIdentifier: merchant.partnerIdentifier, kind: .registration, target: merchant.partnerIdentifier))
        }
        return subjects
    }
}

/// Checks what Apple Pay on the web needs, continuously: every pass leases the records that are
/// due (so one instance of many checks each), looks at each (domains over HTTPS as Apple fetches
/// them, certificates by their expiry, registrations by Apple's record, with at most
/// `concurrency` at once), lets ``GuardPolicy`` decide, and writes each result with the one
/// event its change reports. The only thing it repairs is a registration: Orchard registered
/// those domains, so it registers them again.
public struct GuardService: Sendable {
    let records: any GuardRecords
    /// Fetches configured merchants' domains; nil: they are not fetched.
    let probe: (any DomainProbe)?
    /// Fetches registered merchants' domains, only at public addresses (a tenant names them).
    let tenantProbe: (any DomainProbe)?
    /// Recognises the association file Orchard itself served; nil: none is.
    let signer: DomainFileSigner?
    /// Apple's registration API; nil without a platform integrator.
    let registration: (any MerchantRegistrationService)?
    /// The registry as the store has it, read again before any repair: the watch a pass began
    /// with may be older than a merchant's leaving. Nil: no repair is made.
    let registry: (any MerchantRegistry)?
    public let policy: GuardPolicy
    let concurrency: Int
    /// How long a leased record is this instance's to check.
    let lease: TimeInterval
    let batch: Int
    let time: TimeSource
    let logger: Logger

    public init(
        records: any GuardRecords, probe: (any DomainProbe)?, tenantProbe: (any DomainProbe)?, signer: DomainFileSigner? = nil,
        registration: (any MerchantRegistrationService)?, registry: (any MerchantRegistry)?, policy: GuardPolicy,
        concurrency: Int, lease: TimeInterval = 300, batch: Int? = nil, time: TimeSource, logger: Logger
    ) {
        self.registry = registry
        self.records = records
        self.probe = probe
        self.tenantProbe = tenantProbe
        self.signer = signer
        self.registration = registration
        self.policy = policy
        self.concurrency = max(1, concurrency)
        self.lease = lease
        // At most 25 checks per slot: with a probe's 10-second limit a pass ends within its
        // 300-second lease, so no other instance takes the same records over meanwhile.
        self.batch = batch ?? self.concurrency * 25
        self.time = time
        self.logger = logger
    }

    /// One pass: syncs the subjects with `watch`, leases the due records and checks them.
    /// Returns the records as written (a result another instance overtook is left out).
    @discardableResult
    public func pass(_ watch: GuardWatch) async throws -> [GuardRecord] {
        let now = time.now
        try await records.syncGuardSubjects(watch.subjects, at: now)
        let leased = try await records.leaseGuardChecks(at: now, until: now.addingTimeInterval(lease), limit: batch)
        let jobs = Self.jobs(leased)
        var written: [GuardRecord] = []
        await withTaskGroup(of: [GuardRecord].self) { group in
            var next = jobs.makeIterator()
            for _ in 0..<concurrency {
                guard let job = next.next() else { break }
                group.addTask { await self.run(job, watch: watch) }
            }
            while let done = await group.next() {
                written += done
                if let job = next.next() { group.addTask { await self.run(job, watch: watch) } }
            }
        }
        return written
    }

    /// The leased records, one job per domain (its file and certificate come from one fetch)
    /// and one per other record.
    static func jobs(_ leased: [GuardRecord]) -> [[GuardRecord]] {
        var byDomain: [GuardSubject: [GuardRecord]] = [:]
        var jobs: [[GuardRecord]] = []
        for record in leased {
            switch record.subject.kind {
            case .domainFile, .domainCertificate:
                var key = record.subject
                key.kind = .domainFile
                byDomain[key, default: []].append(record)
            case .identityCertificate, .processingCertificate, .registration:
                jobs.append([record])
            }
        }
        return jobs + byDomain.keys.sorted { $0.target < $1.target }.compactMap { byDomain[$0] }
    }

    private func run(_ job: [GuardRecord], watch: GuardWatch) async -> [GuardRecord] {
        var written: [GuardRecord] = []
        for (record, observation) in await observe(job, watch: watch) {
            if let record = await write(record, observation, watch: watch) { written.append(record) }
        }
        return written
    }

    private func observe(_ job: [GuardRecord], watch: GuardWatch) async -> [(GuardRecord, GuardObservation)] {
        guard let first = job.first else { return [] }
        let subject = first.subject
        switch subject.kind {
        case .domainFile, .domainCertificate:
            let expected = watch.domains.first { $0.merchantIdentifier == subject.merchantIdentifier && $0.domain == subject.target }
            let (file, certificate) = await domain(subject.target, expected: expected?.expectedFile, probe: client(for: expected))
            return job.map { ($0, $0.subject.kind == .domainFile ? file : certificate) }
        case .identityCertificate, .processingCertificate:
            guard
                let held = watch.certificates.first(where: {
                    GuardSubject(merchantIdentifier: $0.merchantIdentifier, kind: $0.kind, target: $0.target) == subject
                })
            else { return [] }
            return [(first, Self.certificate(held, at: time.now))]
        case .registration:
            guard let merchant = watch.registrations.first(where: { $0.partnerIdentifier == subject.target }) else { return [] }
            return [(first, await registrationObservation(first, merchant: merchant))]
        }
    }

    /// The client a domain is fetched with. Fails closed: the unrestricted one only for a domain
    /// this watch lists as a configured merchant's (the operator's own word); a registered
    /// merchant's, or one leased without a watch entry (another instance, on a newer registry,
    /// synced it), is a tenant's word and is fetched only at public addresses.
    func client(for expected: GuardWatch.Domain?) -> (any DomainProbe)? {
        guard let expected, !expected.registered else { return tenantProbe }
        return probe
    }

    /// The file's and the certificate's observations, from one fetch as Apple makes it.
    func domain(_ domain: String, expected: [UInt8]?, probe: (any DomainProbe)?) async -> (
        file: GuardObservation, certificate: GuardObservation
    ) {
        guard let probe else {
            let off = GuardObservation.inconclusive("domains are not fetched by this server")
            return (off, off)
        }
        do {
            let answer = try await probe.associationFile(of: domain)
            let verdict = DomainFileVerdict(answer, domain: domain, expected: expected, signer: signer)
            if verdict.servedWronglyByOrchard {
                logger.error(
                    "defect: Orchard itself served a domain something other than its association file; please report it",
                    metadata: ["domain": "\(domain)", "detail": "\(verdict.detail)"])
            }
            let file: GuardObservation = verdict.passed ? .ok(verdict.detail) : .failing(verdict.detail)
            guard let notValidAfter = answer.certificateNotValidAfter else {
                return (file, .inconclusive("the certificate \(domain) presented could not be read"))
            }
            return (file, Self.domainCertificate(domain, notValidAfter: notValidAfter, at: time.now))
        } catch {
            let verdict = DomainFileVerdict(unreachable: error, domain: domain)
            // libcurl stops an expired certificate's handshake before it hands the certificate
            // over: OpenSSL's verify result, in its message, is all there is to know it by.
            guard error.message.contains("certificate has expired") else {
                return (.failing(verdict.detail), .inconclusive("no TLS certificate read: \(error.message)"))
            }
            return (
                .failing(verdict.detail),
                .failing("\(domain)'s TLS certificate has expired (the TLS handshake refused it): Safari and Apple refuse it; renew it now")
            )
        }
    }

    static func domainCertificate(_ domain: String, notValidAfter: Date, at now: Date) -> GuardObservation {
        let days = GuardPolicy.daysLeft(notValidAfter: notValidAfter, at: now)
        let until = notValidAfter.formatted(.iso8601)
        guard notValidAfter > now else {
            return .certificate(
                notValidAfter: notValidAfter, "\(domain)'s TLS certificate expired \(until): Safari and Apple refuse it; renew it now")
        }
        return .certificate(
            notValidAfter: notValidAfter,
            "\(domain)'s TLS certificate is valid until \(until) (\(days) days); Apple verifies the domain again when it is renewed: check the association file then"
        )
    }

    static func certificate(_ held: GuardWatch.Certificate, at now: Date) -> GuardObservation {
        let days = GuardPolicy.daysLeft(notValidAfter: held.notValidAfter, at: now)
        let until = held.notValidAfter.formatted(.iso8601)
        let what =
            held.kind == .identityCertificate ? "the Merchant Identity certificate" : "the Payment Processing certificate \(held.target)"
        guard held.notValidAfter > now else {
            return .certificate(
                notValidAfter: held.notValidAfter,
                "\(what) expired \(until): renew it in the Apple Developer portal now (orchard certs rotate)")
        }
        let advice =
            GuardPolicy.standing(notValidAfter: held.notValidAfter, at: now).0 == .ok ? "" : ": renew it now (orchard certs rotate)"
        return .certificate(notValidAfter: held.notValidAfter, "\(what) is valid until \(until) (\(days) days)\(advice)")
    }
}
