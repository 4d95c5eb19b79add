import ApplePay
import Foundation
import Logging
import Metrics

extension GuardService {
    /// Whether Apple's record of `merchant` holds every domain of the registry; a record
    /// missing some is registered again while ``GuardPolicy/mayRepair(_:)`` allows.
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
        let missing = merchant.domains.filter { !atApple.contains($0) }
        guard !missing.isEmpty else {
            return .ok("Apple's record of \(merchant.partnerIdentifier) holds all \(merchant.domains.count) of its domains")
        }
        let drift = "Apple's record of \(merchant.partnerIdentifier) lacks \(missing.joined(separator: ", "))"
        guard policy.mayRepair(record) else {
            return .failing(
                "\(drift): Orchard gave up registering them again after \(record.repairs) tries; register them (orchard domains register) or unregister them here"
            )
        }
        do {
            let again = try MerchantRegistration(
                domainNames: merchant.domains, encryptTo: merchant.encryptTo, partnerInternalMerchantIdentifier: merchant.partnerIdentifier,
                partnerMerchantName: merchant.name, merchantUrl: merchant.merchantUrl
            ).validated()
            try await registration.register(again)
        } catch let error as GatewayError {
            let outcome = error.kind == .rejected ? "refused" : "unreachable"
            Counter(label: "orchard_guard_repairs_total", dimensions: [("outcome", outcome)]).increment()
            logger.error(
                "the guard could not register a merchant's domains again",
                metadata: ["merchant": "\(merchant.partnerIdentifier)", "missing": "\(missing)", "error": "\(error.message)"])
            return .failing("\(drift); registering them again failed: \(error.hint)", repaired: true)
        } catch {
            Counter(label: "orchard_guard_repairs_total", dimensions: [("outcome", "refused")]).increment()
            return .failing("\(drift); registering them again failed: \(error)", repaired: true)
        }
        Counter(label: "orchard_guard_repairs_total", dimensions: [("outcome", "registered")]).increment()
        logger.warning(
            "the guard registered a merchant's missing domains with Apple again",
            metadata: ["merchant": "\(merchant.partnerIdentifier)", "missing": "\(missing)"])
        return .failing("\(drift); Orchard registered them again and checks once more", repaired: true)
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
