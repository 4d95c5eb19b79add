import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardIntegrationTesting
import OrchardServerTesting
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
            records: OtherInstanceRecords(store: store), probe: probe, tenantProbe: tenantProbe, registration: nil, registry: nil,
            policy: GuardPolicy(interval: Self.interval, recheck: Self.recheck), concurrency: 1, time: clock.source,
            logger: Logger(label: "orchard.guard-test"))
        try await service.pass(watch)
        #expect(probe.domains == [configured], "only the configured merchant's domain goes through the unrestricted client")
        #expect(Set(tenantProbe.domains) == [registered, unknown])
    }
}

extension GuardTests {
    @Test("a domain answering other bytes under their plain SHA-256 Repr-Digest is the shop's failure, never reported as Orchard's defect")
    func forgedDigestIsNoDefect() async throws {
        try await Self.with { rig in
            let other = Array("<html>app</html>".utf8)
            let digest = "sha-256=:" + Data(SHA256.hash(data: other)).base64EncodedString() + ":"
            rig.host.setPage(
                .response(
                    status: 200, headers: [(name: "Content-Type", value: "text/html"), (name: "Repr-Digest", value: digest)], body: other),
                for: ServerHarness.domain)
            await rig.pass(after: 0)
            let record = try #require(try await rig.record(.domainFile, ServerHarness.domain))
            #expect(record.detail.contains("differ from domainAssociationFile"), "\(record.detail)")
            #expect(!record.detail.contains("Orchard itself served"), "\(record.detail)")

            // Orchard's own signature of these bytes, made for another domain: replayed here, not Orchard's answer either.
            let signer = rig.server.vault.domainFileSigner
            let header = DomainFileSigner.headerName
            let replayed = signer.signature(of: other, domain: ServerHarness.unregisteredDomain)
            rig.host.setPage(.response(status: 200, headers: [(name: header, value: replayed)], body: other), for: ServerHarness.domain)
            await rig.pass(after: Self.recheck)
            let again = try #require(try await rig.record(.domainFile, ServerHarness.domain))
            #expect(again.state == .failing && !again.detail.contains("Orchard itself served"), "\(again.detail)")

            // Orchard's own answer (its signature of exactly these bytes at this domain) is still told apart.
            let own = signer.signature(of: other, domain: ServerHarness.domain)
            rig.host.setPage(.response(status: 200, headers: [(name: header, value: own)], body: other), for: ServerHarness.domain)
            await rig.pass(after: Self.interval)
            let defect = try #require(try await rig.record(.domainFile, ServerHarness.domain))
            #expect(defect.detail.contains("Orchard itself served these bytes"), "\(defect.detail)")
        }
    }
}

/// Apple's registration API as far as the guard's repair needs it: a record that gains the
/// domains each call sends, at most 99 per call, and refuses any call naming a `refused` domain.
final class RecordingRegistration: MerchantRegistrationService {
    let refused: Set<String>
    private let state: Mutex<(held: [String], calls: [[String]])>

    init(held: [String], refused: Set<String> = []) {
        self.refused = refused
        state = Mutex((held, []))
    }

    var held: [String] { state.withLock { $0.held } }
    var calls: [[String]] { state.withLock { $0.calls } }

    func register(_ registration: MerchantRegistration) async throws(GatewayError) {
        try state.withLock { (state) throws(GatewayError) in
            state.calls.append(registration.domainNames)
            guard registration.domainNames.count <= MerchantRegistrationRules.maximumDomains else {
                throw GatewayError(.rejected, "domainNames exceeds 99 entries", appleStatus: 400)
            }
            if let bad = registration.domainNames.first(where: refused.contains) {
                throw GatewayError(.rejected, "domain \(bad) is already registered elsewhere", appleStatus: 400)
            }
            state.held += registration.domainNames.filter { !state.held.contains($0) }
        }
    }

    func unregister(_ unregistration: MerchantUnregistration) async throws(GatewayError) {}

    func details(partnerIdentifier: String) async throws(GatewayError) -> RegisteredMerchantDetails {
        RegisteredMerchantDetails(
            domainNames: held, partnerMerchantName: "Tea House", partnerInternalMerchantIdentifier: partnerIdentifier,
            partnerMerchantValidationURI: nil, encryptTo: "merchant.platform")
    }
}

extension GuardTests {
    static func repairRig(domains: [String], registration: RecordingRegistration, clock: ManualClock = ManualClock()) async throws -> (
        GuardService, GuardWatch, InMemoryStore
    ) {
        let store = InMemoryStore()
        let merchant = RegisteredMerchant(
            partnerIdentifier: "tea-house", name: "Tea House", encryptTo: "merchant.platform", merchantUrl: nil, domains: domains,
            createdAt: Date(), updatedAt: Date())
        let watch = GuardWatch(domains: [], certificates: [], registrations: [merchant], platformIdentifier: "merchant.platform")
        try await store.saveRegistration(merchant)
        let service = GuardService(
            records: store, probe: nil, tenantProbe: nil, registration: registration, registry: store,
            policy: GuardPolicy(interval: Self.interval, recheck: Self.recheck), concurrency: 1, time: clock.source,
            logger: Logger(label: "orchard.guard-test"))
        return (service, watch, store)
    }

    @Test("a repair sends only the missing domains, at most 99 per call, and a refused call does not stop the others")
    func repairInBatches() async throws {
        let domains = (1...250).map { "d\($0).tea.example" }
        // Apple still holds the first ten; one missing domain, in the second batch, is refused.
        let registration = RecordingRegistration(held: Array(domains.prefix(10)), refused: ["d150.tea.example"])
        let (service, watch, store) = try await Self.repairRig(domains: domains, registration: registration)
        try await service.pass(watch)

        let calls = registration.calls
        #expect(calls.count == 3 && calls.allSatisfy { $0.count <= MerchantRegistrationRules.maximumDomains }, "\(calls.map(\.count))")
        #expect(calls.flatMap { $0 } == Array(domains.dropFirst(10)), "only the missing ones, each once")
        let refusedBatch = try #require(calls.first { $0.contains("d150.tea.example") })
        #expect(Set(registration.held) == Set(domains).subtracting(refusedBatch), "the other batches were registered")
        let record = try #require(try await store.guardRecords(merchantIdentifier: "tea-house").first)
        #expect(record.state == .failing && record.repairs == 1)
        #expect(record.detail.contains("lacks 240 domains") && record.detail.count < 1000, "\(record.detail)")
        #expect(record.detail.contains("registering 99 of them again failed"), "\(record.detail)")
    }
}

extension GuardTests {
    @Test("a merchant that began leaving after the pass's watch was made is not registered again: the store is read first")
    func noRepairWhileLeaving() async throws {
        let domains = ["a.tea.example", "b.tea.example"]
        let registration = RecordingRegistration(held: [])
        let (service, watch, store) = try await Self.repairRig(domains: domains, registration: registration)
        // Unregistering its last domain stopped serving it (TenantRetirement.stopServing) while
        // Apple was being asked: the watch still lists its domains, the store none.
        var leaving = try #require(try await store.registeredMerchants().first)
        leaving.domains = []
        try await store.saveRegistration(leaving)
        try await service.pass(watch)
        #expect(registration.calls.isEmpty, "Apple was asked to register a leaving merchant: \(registration.calls)")
        let record = try #require(try await store.guardRecords(merchantIdentifier: "tea-house").first)
        #expect(record.repairs == 0 && record.detail.contains("not registered again"), "\(record.detail)")
    }

    @Test("a repair registers at most maximumRepairedDomains of one merchant's domains per check; the next check the rest")
    func repairCapPerMerchant() async throws {
        let cap = GuardService.maximumRepairedDomains
        let domains = (1...(cap + 30)).map { "d\($0).tea.example" }
        let registration = RecordingRegistration(held: [])
        let clock = ManualClock()
        let (service, watch, store) = try await Self.repairRig(domains: domains, registration: registration, clock: clock)
        try await service.pass(watch)
        #expect(registration.calls.count == cap / MerchantRegistrationRules.maximumDomains)
        #expect(registration.held == Array(domains.prefix(cap)))
        let record = try #require(try await store.guardRecords(merchantIdentifier: "tea-house").first)
        #expect(record.detail.contains("registered \(cap) of them again (at most \(cap) per check"), "\(record.detail)")
        // The second look, after recheckSeconds, registers the rest.
        clock.advance(Self.recheck)
        try await service.pass(watch)
        #expect(registration.held == domains)
        #expect(registration.calls.last?.count == 30)
    }
}
