import ApplePay
import Foundation
import Logging
import Metrics
import OrchardCore
import ServiceLifecycle
import X509

/// Runs the guard beside the server: a pass every `recheck` seconds (each record is due only
/// every interval, or sooner to confirm a failure), then the guard's gauges from the store.
public struct GuardMonitor: Service {
    let service: GuardService
    let directory: MerchantDirectory
    let records: any GuardRecords
    let time: TimeSource
    let logger: Logger

    public init(
        service: GuardService, directory: MerchantDirectory, records: any GuardRecords,
        time: TimeSource, logger: Logger
    ) {
        self.service = service
        self.directory = directory
        self.records = records
        self.time = time
        self.logger = logger
    }

    public func run() async throws {
        // 0 until the first pass, so an alert on a guard that never finishes one can fire.
        Gauge(label: "orchard_guard_last_pass_timestamp_seconds").record(0)
        await repeatUntilShutdown(every: .seconds(service.policy.recheck)) { await pass() }
    }

    /// One pass and the gauges after it.
    public func pass() async {
        do {
            try await service.pass(Self.watch(directory))
            Gauge(label: "orchard_guard_last_pass_timestamp_seconds").record(time.now.timeIntervalSince1970)
        } catch {
            logger.error("the guard could not read or lease its records; the next pass tries again", metadata: ["error": "\(error)"])
        }
        do {
            recordGauges(try await records.guardRecords(merchantIdentifier: nil))
        } catch {
            logger.warning("the guard's records could not be read for the metrics", metadata: ["error": "\(error)"])
        }
    }

    /// What the configuration and the registry say must keep working.
    static func watch(_ directory: MerchantDirectory) -> GuardWatch {
        var domains: [GuardWatch.Domain] = []
        var certificates: [GuardWatch.Certificate] = []
        for merchant in directory.merchants + (directory.platform.map { [$0] } ?? []) {
            for domain in merchant.domains {
                domains.append(
                    GuardWatch.Domain(
                        merchantIdentifier: merchant.merchantIdentifier, domain: domain, expectedFile: merchant.domainAssociation))
            }
            let identity = merchant.identity.certificate
            certificates.append(
                GuardWatch.Certificate(
                    merchantIdentifier: merchant.merchantIdentifier, kind: .identityCertificate, target: identity.serialNumber.description,
                    notValidAfter: identity.notValidAfter))
            for key in merchant.processingKeys {
                guard let certificate = key.certificate else { continue }
                certificates.append(
                    GuardWatch.Certificate(
                        merchantIdentifier: merchant.merchantIdentifier, kind: .processingCertificate,
                        target: Data(key.publicKeyHash).base64EncodedString(), notValidAfter: certificate.notValidAfter))
            }
        }
        // A registration without domains is leaving (TenantRetirement.stopServing): never repaired.
        let registrations = directory.platform == nil ? [] : directory.registrations.filter { !$0.isLeaving }
        for merchant in registrations {
            for domain in merchant.domains {
                domains.append(
                    GuardWatch.Domain(
                        merchantIdentifier: merchant.partnerIdentifier, domain: domain,
                        expectedFile: directory.platform?.domainAssociation,
                        registered: true))
            }
        }
        return GuardWatch(
            domains: domains, certificates: certificates, registrations: registrations,
            platformIdentifier: directory.platform?.merchantIdentifier)
    }

    /// Counts by check and state for everyone; per-record series only for the merchants of the
    /// configuration file (a bounded set), never for registered ones.
    func recordGauges(_ all: [GuardRecord]) {
        var counts: [GuardCheckKind: [GuardState: Int]] = [:]
        for record in all { counts[record.subject.kind, default: [:]][record.state, default: 0] += 1 }
        for kind in GuardCheckKind.allCases {
            for state in GuardState.allCases {
                Gauge(label: "orchard_guard_records", dimensions: [("check", kind.rawValue), ("state", state.rawValue)])
                    .record(counts[kind]?[state] ?? 0)
            }
        }
        let configured = Set(
            directory.merchants.map(\.merchantIdentifier) + (directory.platform.map { [$0.merchantIdentifier] } ?? []))
        let now = time.now
        for record in all where configured.contains(record.subject.merchantIdentifier) {
            let dimensions = [
                ("merchant", record.subject.merchantIdentifier), ("check", record.subject.kind.rawValue), ("target", record.subject.target),
            ]
            Gauge(label: "orchard_guard_failing", dimensions: dimensions).record(record.state == .failing ? 1 : 0)
            if let expiresAt = record.expiresAt {
                Gauge(label: "orchard_guard_certificate_days_left", dimensions: dimensions)
                    .record(GuardPolicy.daysLeft(notValidAfter: expiresAt, at: now))
            }
        }
    }
}
