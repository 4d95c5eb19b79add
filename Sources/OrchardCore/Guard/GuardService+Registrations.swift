import ApplePay
import Foundation
import Logging
import Metrics

extension GuardService {
    /// The most domains the guard registers again for one merchant in one check: five calls of
    /// 99, so a tenant with thousands of missing domains cannot hold a pass (and Apple) for long;
    /// the rest follow at the next checks.
    public static let maximumRepairedDomains = 5 * MerchantRegistrationRules.maximumDomains

    /// Whether Apple's record of `merchant` holds every domain of the registry; the missing ones
    /// are registered again (only they, in calls of at most 99) while ``GuardPolicy/mayRepair(_:)``
    /// allows.
    func registrationObservation(_ record: GuardRecord, merchant: RegisteredMerchant) async -> GuardObservation {
        guard let registration else {
            return .inconclusive("no platformIntegrator is configured: Apple's record cannot be read")
        }
        let atApple: Set<String>
        do {
            atApple = Set(try await registration.details(partnerIdentifier: merchant.partnerIdentifier).domainNames.map { $0.lowercased() })
        } catch  where error.kind == .rejected && error.appleStatus == 404 {
            atApple = []
        } catch {
            return .inconclusive("Apple's record could not be read: \(error.hint)")
        }
        var missing = merchant.domains.filter { !atApple.contains($0) }
        guard !missing.isEmpty else {
            return .ok("Apple's record of \(merchant.partnerIdentifier) holds all \(merchant.domains.count) of its domains")
        }
        let drift = "Apple's record of \(merchant.partnerIdentifier) lacks \(Self.list(missing))"
        guard policy.mayRepair(record) else {
            return .failing(
                "\(drift): Orchard gave up registering them again after \(record.repairs) tries; register them (orchard domains register) or unregister them here"
            )
        }
        // Claimed before the store is read and held across Apple's calls: an unregistration
        // claims it too, so it waits for this repair or wins, and no `register` follows its delete.
        let holder = "guard/\(RecordIdentifier.random())"
        guard let registry, let current = await claimedCurrent(merchant.partnerIdentifier, registry: registry, as: holder) else {
            return .inconclusive(
                "\(drift); not registered again: the registry no longer lists them, could not be read, or is being changed at Apple")
        }
        missing = missing.filter { current.domains.contains($0) }
        let sent = Array(missing.prefix(Self.maximumRepairedDomains))
        let refusals = await registerAgain(sent, of: merchant, with: registration) {
            await self.renew(merchant.partnerIdentifier, registry: registry, as: holder)
        }
        try? await registry.releaseRegistration(partnerIdentifier: merchant.partnerIdentifier, holder: holder)
        let later = missing.count > sent.count ? " (at most \(sent.count) per check: the rest at the next checks)" : ""
        guard let first = refusals.first else {
            logger.warning(
                "the guard registered a merchant's missing domains with Apple again",
                metadata: ["merchant": "\(merchant.partnerIdentifier)", "missing": "\(sent.count)"])
            let which = later.isEmpty ? "them" : "\(sent.count) of them"
            return .failing("\(drift); Orchard registered \(which) again\(later) and checks once more", repaired: true)
        }
        let failed = refusals.reduce(0) { $0 + $1.count }
        let others = sent.count > failed ? "; the other \(sent.count - failed) were registered again\(later)" : later
        return .failing("\(drift); registering \(failed) of them again failed: \(first.hint)\(others)", repaired: true)
    }

    /// Registers `domains` again in calls of at most 99, each on its own, so one refused call
    /// (a domain another platform took meanwhile) does not keep the others from Apple. Returns
    /// each refused call's domain count and why.
    /// `stillHeld` renews the claim before each call after the first; once it fails, the rest
    /// are not sent and count as refused.
    func registerAgain(
        _ domains: [String], of merchant: RegisteredMerchant, with registration: any MerchantRegistrationService,
        stillHeld: () async -> Bool = { true }
    ) async -> [(count: Int, hint: String)] {
        var refusals: [(count: Int, hint: String)] = []
        for start in stride(from: 0, to: domains.count, by: MerchantRegistrationRules.maximumDomains) {
            let batch = Array(domains[start..<min(start + MerchantRegistrationRules.maximumDomains, domains.count)])
            if start > 0, await !stillHeld() {
                refusals.append((domains.count - start, "the registration was claimed by an unregistration meanwhile"))
                break
            }
            let outcome: String
            do {
                let again = try MerchantRegistration(
                    domainNames: batch, encryptTo: merchant.encryptTo, partnerInternalMerchantIdentifier: merchant.partnerIdentifier,
                    partnerMerchantName: merchant.name, merchantUrl: merchant.merchantUrl
                ).validated()
                try await registration.register(again)
                outcome = "registered"
            } catch let error as GatewayError {
                outcome = error.kind == .rejected ? "refused" : "unreachable"
                refusals.append((batch.count, error.hint))
                logger.error(
                    "the guard could not register a merchant's domains again",
                    metadata: ["merchant": "\(merchant.partnerIdentifier)", "domains": "\(batch.count)", "error": "\(error.message)"])
            } catch {
                outcome = "refused"
                refusals.append((batch.count, "\(error)"))
            }
            Counter(label: "orchard_guard_repairs_total", dimensions: [("outcome", outcome)]).increment()
        }
        return refusals
    }

    /// How long the guard's claim on a registration lasts: past its calls to Apple (at most
    /// five, each within the gateway's timeout); a crashed instance's blocks no longer.
    public static let repairClaimSeconds: TimeInterval = 300

    /// `partner`'s registration as the store has it once claimed as `holder`, unless it is
    /// leaving; nil (the claim given up) when it is gone, leaving, held by another, or unreadable.
    func claimedCurrent(_ partner: String, registry: any MerchantRegistry, as holder: String) async -> RegisteredMerchant? {
        guard await renew(partner, registry: registry, as: holder) else { return nil }
        // The store, not this pass's watch: a merchant that began leaving (no domains left) or
        // gave some up meanwhile must not be registered again.
        if let current = try? await registry.registeredMerchants().first(where: { $0.partnerIdentifier == partner }), !current.isLeaving {
            return current
        }
        try? await registry.releaseRegistration(partnerIdentifier: partner, holder: holder)
        return nil
    }

    /// Claims (or renews) `partner`'s registration as `holder`; false when another holds it.
    func renew(_ partner: String, registry: any MerchantRegistry, as holder: String) async -> Bool {
        let now = time.now
        let claim = try? await registry.claimRegistration(
            partnerIdentifier: partner, holder: holder, until: now.addingTimeInterval(Self.repairClaimSeconds), at: now)
        return claim == .claimed
    }

    /// Domains as a record's detail names them: the first ten, then how many more, so a tenant's
    /// hundreds of domains do not fill a record, a webhook and a log line.
    static func list(_ domains: [String]) -> String {
        guard domains.count > 10 else { return domains.joined(separator: ", ") }
        return "\(domains.count) domains: \(domains.prefix(10).joined(separator: ", ")) and \(domains.count - 10) more"
    }

    /// Decides and writes one result with its event (to the merchant, and to the platform for a
    /// registered merchant); nil when another instance overtook the lease.
    func write(_ record: GuardRecord, _ observation: GuardObservation, watch: GuardWatch) async -> GuardRecord? {
        let now = time.now
        let (next, event) = policy.next(after: record, observed: observation, at: now)
        Counter(
            label: "orchard_guard_checks_total",
            dimensions: [("check", record.subject.kind.rawValue), ("outcome", Self.outcome(observation, at: now))]
        )
        .increment()
        var events: [WebhookEvent] = []
        if let event {
            var recipients = [record.subject.merchantIdentifier]
            if let platform = watch.platformIdentifier,
                watch.registrations.contains(where: { $0.partnerIdentifier == record.subject.merchantIdentifier })
            {
                recipients.append(platform)
            }
            do {
                events = try recipients.map { try WebhookEvent.make(event, guard: next, recipient: $0, at: now) }
            } catch {
                logger.error("a guard event could not be rendered", metadata: ["error": "\(error)"])
            }
        }
        do {
            guard try await records.recordGuardCheck(next, events: events) else { return nil }
        } catch {
            logger.error(
                "a guard result could not be recorded; the record is checked again after its lease", metadata: ["error": "\(error)"])
            return nil
        }
        if let event { log(event, next) }
        var written = next
        written.version += 1
        return written
    }

    private func log(_ event: WebhookEventType, _ record: GuardRecord) {
        let metadata: Logger.Metadata = [
            "merchant": "\(record.subject.merchantIdentifier)", "check": "\(record.subject.kind.rawValue)",
            "target": "\(record.subject.target)", "event": "\(event.rawValue)", "detail": "\(record.detail)",
        ]
        switch record.state {
        case .failing: logger.error("Apple Pay guard: failing", metadata: metadata)
        case .expiring: logger.warning("Apple Pay guard: certificate expiring", metadata: metadata)
        case .ok, .pending: logger.notice("Apple Pay guard: restored", metadata: metadata)
        }
    }

    static func outcome(_ observation: GuardObservation, at now: Date) -> String {
        switch observation {
        case .ok: "ok"
        case .failing: "failing"
        case .inconclusive: "inconclusive"
        case .certificate(let notValidAfter, _): notValidAfter > now ? "ok" : "failing"
        }
    }
}
