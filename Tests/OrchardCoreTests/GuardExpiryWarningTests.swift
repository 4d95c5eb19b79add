import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing
import X509

/// Core's guard on certificates close to expiry, in memory on an injected clock (the
/// certificates' own `/admin/health` view is the integration tests' ExpiryTests).
@Suite("Guard: certificate expiry warnings on an injected clock")
struct GuardExpiryWarningTests {
    @Test("the guard warns once per stage for certificates under 30 days, and only those, on an injected clock")
    func guardWarnsOncePerStage() async throws {
        let pki = TestMaterial.shared.pki
        let now = Date()
        let soon = try pki.issueMerchantIdentity(
            merchantIdentifier: "merchant.soon", notValidAfter: now.addingTimeInterval(10 * 86_400 + 60))
        let later = try pki.issueMerchantIdentity(merchantIdentifier: "merchant.later", notValidAfter: now.addingTimeInterval(90 * 86_400))
        let handler = CapturingLogHandler()
        let clock = ManualClock()
        let store = InMemoryStore()
        let service = GuardService(
            records: store, probe: nil, tenantProbe: nil, registration: nil, registry: nil,
            policy: GuardPolicy(interval: 3600, recheck: 60),
            concurrency: 2, time: clock.source, logger: Logger(label: "test") { _ in handler })
        let watch = GuardWatch(
            domains: [],
            certificates: [("merchant.soon", soon), ("merchant.later", later)].map { owner, identity in
                GuardWatch.Certificate(
                    merchantIdentifier: owner, kind: .identityCertificate, target: identity.certificate.serialNumber.description,
                    notValidAfter: identity.certificate.notValidAfter)
            }, registrations: [], platformIdentifier: nil)
        try await service.pass(watch)
        clock.advance(3600)
        try await service.pass(watch)
        let warnings = handler.warnings(containing: "certificate expiring")
        #expect(warnings.count == 1, "once for the stage, not once per check")
        #expect(warnings.first?.metadata["merchant"] == "merchant.soon")
        #expect(warnings.first?.metadata["detail"]?.contains("days): renew it now") == true)
        #expect(try await store.guardRecords(merchantIdentifier: "merchant.later").map(\.state) == [.ok])

        // The clock decides: 85 days on, the first has expired and the other warns.
        clock.advance(85 * 86_400)
        try await service.pass(watch)
        #expect(handler.warnings(containing: "certificate expiring").count == 2)
        #expect(handler.records.withLock { $0.filter { $0.level == .error && $0.metadata["event"] == "certificate.expired" }.count } == 1)
    }
}
