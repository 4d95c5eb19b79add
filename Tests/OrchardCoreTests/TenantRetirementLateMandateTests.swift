import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// The registry, whose retiring transaction commits just after a first payment's move: the
/// move lands after the retirement's end loop and before its transaction, so its mandate is
/// created active under the partner ID and then moved to the retirement's key.
struct MoveBeforeRetiring: MerchantRegistry {
    let store: InMemoryStore
    let move: @Sendable () async throws -> Void

    func registeredMerchants() async throws -> [RegisteredMerchant] { try await store.registeredMerchants() }
    func saveRegistration(_ merchant: RegisteredMerchant) async throws { try await store.saveRegistration(merchant) }
    func deleteRegistration(partnerIdentifier: String, at date: Date) async throws -> String {
        try await move()
        return try await store.deleteRegistration(partnerIdentifier: partnerIdentifier, at: date)
    }
    func sealedMerchantSettings() async throws -> [String: [UInt8]] { try await store.sealedMerchantSettings() }
    func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        try await store.saveSealedMerchantSettings(partnerIdentifier: partnerIdentifier, sealed: sealed, at: date)
    }
    func claimRegistration(partnerIdentifier: String, holder: String, until: Date, at now: Date) async throws -> RegistrationClaim {
        try await store.claimRegistration(partnerIdentifier: partnerIdentifier, holder: holder, until: until, at: now)
    }
    func releaseRegistration(partnerIdentifier: String, holder: String) async throws {
        try await store.releaseRegistration(partnerIdentifier: partnerIdentifier, holder: holder)
    }
}

@Suite("TenantRetirement: a mandate created after its end loop is ended, its credential deleted through the tenant's processor")
struct TenantRetirementLateMandateTests {
    static let partner = "tenant-9"

    @Test("a first payment's move that commits between the end loop and the registry's transaction leaves no active mandate")
    func lateMandate() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let processor = SimulatedProcessor(clock: ManualClock(), inProgressIsRejection: false)
        let processors = PaymentProcessors()
        processors.setRegistered(processor, forMerchant: Self.partner)
        var order = try TestRecords.order("o1")
        order.merchantIdentifier = Self.partner
        try await store.insert(order)
        let claimed = try await store.claimPayment(TestRecords.claim("o1", transaction: "t1", payment: "p1"))
        let mandate = MandateRecord(
            id: "mdt_late", merchantIdentifier: Self.partner, kind: .recurring, paymentId: claimed.id, orderId: "o1",
            processor: processor.name, credential: StoredCredential(reference: "tok-late", schemeReference: nil),
            merchantTokenIdentifier: nil, merchantTokenMetadata: nil, currency: "EUR", network: "visa", lastFour: "1111",
            description: "Club", createdAt: TestRecords.now)
        let registry = MoveBeforeRetiring(store: store) {
            _ = try await store.transition(
                PaymentTransition(
                    paymentId: claimed.id, orderId: "o1", move: PaymentLifecycle.move(.authorized), at: TestRecords.now,
                    outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-1"), mandate: mandate))
        }
        let quiet = MerchantRegistryServiceTests.quiet
        let lifecycle = MandateLifecycle(
            store: store, processors: processors, tokens: nil, directory: NoMerchants(), time: clock.source, logger: quiet)
        let retirement = TenantRetirement(
            merchantRegistry: registry, mandates: store, apiKeys: store, directory: TestDirectory(), processors: processors,
            lifecycle: lifecycle, webhooks: nil, time: clock.source, logger: quiet)

        try await retirement.retire(Self.partner)

        let stored = try #require(try await store.mandate(id: "mdt_late"))
        #expect(RetiredTenant.isRecordKey(stored.merchantIdentifier), "moved by the registry's transaction")
        #expect(stored.state == .ended && stored.endedReason == TenantRetirement.endedReason)
        #expect(processor.deleted.withLock { $0 } == ["tok-late"], "deleted through the tenant's processor, before it was dropped")
        #expect(processors.processor(forMerchant: Self.partner).name != processor.name, "then the tenant's processor is dropped")
        #expect(try await store.mandates(merchantIdentifier: stored.merchantIdentifier, state: .active, limit: 10).isEmpty)
    }
}
