import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// A probe that answers the association file and remembers which domains it was asked for.
final class RecordingProbe: DomainProbe {
    let file: [UInt8]
    private let asked = Mutex<[String]>([])

    init(file: [UInt8]) {
        self.file = file
    }

    var domains: [String] { asked.withLock { $0 } }

    func associationFile(of domain: String) async throws(GatewayError) -> ProbeAnswer {
        asked.withLock { $0.append(domain) }
        return ProbeAnswer(status: 200, contentType: "text/plain", location: nil, body: file)
    }
}

/// Another instance's records: this instance's sync leaves them as they are, so a pass leases
/// subjects its own watch does not list (that instance knows a registry this one has not read yet).
struct OtherInstanceRecords: GuardRecords {
    let store: InMemoryStore

    func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws {}
    func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord] {
        try await store.leaseGuardChecks(at: date, until: leaseEnd, limit: limit)
    }
    func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool {
        try await store.recordGuardCheck(record, events: events)
    }
    func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord] {
        try await store.guardRecords(merchantIdentifier: merchantIdentifier)
    }
}

extension GuardTests {
    @Test("a domain is fetched with the unrestricted client only when the watch says it is a configured merchant's; else the tenant client")
    func tenantClientUnlessConfigured() async throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        let (configured, registered, unknown) = ("shop.example", "tea.example", "stray.example")
        let watch = GuardWatch(
            domains: [
                GuardWatch.Domain(merchantIdentifier: "merchant.shop", domain: configured, expectedFile: [1]),
                GuardWatch.Domain(merchantIdentifier: "tea-house", domain: registered, expectedFile: [1], registered: true),
            ], certificates: [], registrations: [], platformIdentifier: nil)
        // The stray domain is a registered merchant's another instance watches: this watch knows nothing of it.
        var subjects = watch.subjects
        subjects.insert(GuardSubject(merchantIdentifier: "new-tenant", kind: .domainFile, target: unknown))
        try await store.syncGuardSubjects(subjects, at: clock.now)
        let (probe, tenantProbe) = (RecordingProbe(file: [1]), RecordingProbe(file: [1]))
        let service = GuardService(
            records: OtherInstanceRecords(store: store), probe: probe, tenantProbe: tenantProbe, registration: nil,
            policy: GuardPolicy(interval: Self.interval, recheck: Self.recheck), concurrency: 1, time: clock.source,
            logger: Logger(label: "orchard.guard-test"))
        try await service.pass(watch)
        #expect(probe.domains == [configured], "only the configured merchant's domain goes through the unrestricted client")
        #expect(Set(tenantProbe.domains) == [registered, unknown])
    }
}
