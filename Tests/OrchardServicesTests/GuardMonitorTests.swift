import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// The guard's monitor driven directly: what it watches from the directory, and its passes on
/// the in-memory records with a domain probe that answers in memory.
@Suite("GuardMonitor: watches what the directory holds, and its passes record each check")
struct GuardMonitorTests {
    static let merchant = "merchant.guarded"
    static let platform = "merchant.platform"
    static let file: [UInt8] = Array("association-file".utf8)
    static let platformFile: [UInt8] = Array("platform-file".utf8)

    let store = InMemoryStore()
    let probe = FakeProbe()
    let clock = ManualClock()

    func monitor(_ directory: MerchantDirectory) -> GuardMonitor {
        let service = GuardService(
            records: store, probe: probe, tenantProbe: probe, registration: nil, registry: nil,
            policy: GuardPolicy(interval: 3600, recheck: 60), concurrency: 2, time: clock.source, logger: LoopFixtures.quiet)
        return GuardMonitor(service: service, directory: directory, records: store, time: clock.source, logger: LoopFixtures.quiet)
    }

    func configured() throws -> MerchantDirectory {
        MerchantDirectory(
            merchants: [try LoopFixtures.merchant(Self.merchant, domains: ["good.example", "bad.example"], association: Self.file)],
            platform: nil)
    }

    static func registration(_ partner: String, domains: [String]) -> RegisteredMerchant {
        RegisteredMerchant(
            partnerIdentifier: partner, name: partner, encryptTo: platform, merchantUrl: nil, domains: domains, createdAt: TestRecords.now,
            updatedAt: TestRecords.now)
    }

    func record(_ kind: GuardCheckKind, _ target: String) async throws -> GuardRecord? {
        try await store.guardRecords(merchantIdentifier: nil).first { $0.subject.kind == kind && $0.subject.target == target }
    }

    @Test("the watch: configured merchants' domains and identities; the platform's; registrations that are not leaving")
    func watch() throws {
        let platform = try LoopFixtures.merchant(Self.platform, domains: ["platform.example"], association: Self.platformFile)
        let directory = MerchantDirectory(
            merchants: [try LoopFixtures.merchant(Self.merchant, domains: ["good.example"], association: Self.file)], platform: platform,
            registered: [Self.registration("tenant-a", domains: ["tenant-a.example"]), Self.registration("leaving", domains: [])])
        let watch = GuardMonitor.watch(directory)
        #expect(watch.domains.map(\.domain) == ["good.example", "platform.example", "tenant-a.example"])
        #expect(
            watch.domains.map(\.expectedFile) == [Self.file, Self.platformFile, Self.platformFile], "tenants serve the platform's file")
        #expect(watch.domains.map(\.registered) == [false, false, true])
        #expect(watch.certificates.map(\.merchantIdentifier) == [Self.merchant, Self.platform])
        #expect(watch.certificates.allSatisfy { $0.kind == .identityCertificate })
        #expect(watch.registrations.map(\.partnerIdentifier) == ["tenant-a"], "a leaving registration is never repaired")
        #expect(watch.platformIdentifier == Self.platform)
    }

    @Test("a pass checks every watched subject: a domain serving its file is ok, the identity certificate too")
    func passRecords() async throws {
        probe.serve("good.example", Self.file)
        probe.serve("bad.example", Array("someone else's file".utf8))
        let monitor = monitor(try configured())
        await monitor.pass()
        #expect(try await record(.domainFile, "good.example")?.state == .ok)
        #expect(try await record(.domainCertificate, "good.example")?.state == .ok)
        let identities = try await store.guardRecords(merchantIdentifier: Self.merchant).filter { $0.subject.kind == .identityCertificate }
        #expect(identities.map(\.state) == [.ok])
        #expect(try await record(.domainFile, "bad.example")?.state != .ok)
        #expect(probe.asked.withLock { Set($0) } == ["good.example", "bad.example"])
    }

    @Test(
        "a wrong file is confirmed failing by the pass after the recheck, on the injected clock, with one domain.verification_failed event")
    func failureConfirmed() async throws {
        probe.serve("good.example", Self.file)
        probe.serve("bad.example", Array("someone else's file".utf8))
        let monitor = monitor(try configured())
        await monitor.pass()
        clock.advance(60)
        await monitor.pass()
        #expect(try await record(.domainFile, "bad.example")?.state == .failing)
        let events = try await store.webhookEvents(merchantIdentifier: Self.merchant, state: nil, limit: 10)
        #expect(events.map(\.type) == [.domainVerificationFailed])
    }

    @Test("running: the first pass runs at once, not after the recheck interval")
    func running() async throws {
        probe.serve("good.example", Self.file)
        probe.serve("bad.example", Self.file)
        let monitor = monitor(try configured())
        try await LoopFixtures.running(monitor.run) {
            let checked = try await Eventually.until { try await record(.domainFile, "good.example")?.state == .ok }
            #expect(checked)
        }
    }
}

/// Domains' association files in memory: each domain serves what the test says (404 otherwise),
/// over a certificate valid for a year.
final class FakeProbe: DomainProbe {
    let files = Mutex<[String: [UInt8]]>([:])
    let asked = Mutex<[String]>([])

    func serve(_ domain: String, _ file: [UInt8]) { files.withLock { $0[domain] = file } }

    func associationFile(of domain: String) async throws(GatewayError) -> ProbeAnswer {
        asked.withLock { $0.append(domain) }
        guard let file = files.withLock({ $0[domain] }) else {
            return ProbeAnswer(status: 404, contentType: "text/html", location: nil, body: [])
        }
        return ProbeAnswer(
            status: 200, contentType: "application/octet-stream", location: nil, body: file,
            certificateNotValidAfter: Date().addingTimeInterval(365 * 86_400))
    }
}
