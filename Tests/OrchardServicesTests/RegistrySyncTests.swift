import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// Registry sync driven directly: another instance's writes are made straight into the
/// in-memory store this instance's directory is synced from.
@Suite("RegistrySync: registrations and sealed settings written by another instance reach this one's directory")
struct RegistrySyncDirectTests {
    static let platform = "merchant.platform"
    static let partner = "partner-1"
    static let domain = "partner-shop.example"

    let store = InMemoryStore()
    let processors = PaymentProcessors()
    let maker = CountingMaker()
    let directory: MerchantDirectory

    init() throws {
        directory = MerchantDirectory(merchants: [], platform: try LoopFixtures.merchant(Self.platform, domains: ["platform.example"]))
    }

    /// Settings "sealed" as their webhook URL's bytes; `bad` does not open.
    func sync(registry: (any MerchantRegistry)? = nil) -> RegistrySync {
        RegistrySync(
            store: registry ?? store, directory: directory, processors: processors, processorMaker: maker,
            openSettings: { [maker] sealed, partner throws(ConfigurationError) in
                maker.opened.withLock { $0.append(partner) }
                let url = String(decoding: sealed, as: UTF8.self)
                guard url != "bad" else { throw ConfigurationError("the settings key does not open them") }
                return MerchantSettings(
                    processor: RecordOnlySettings(), webhook: WebhookEndpoint(url: url, secret: LoopFixtures.secret), quote: nil)
            }, interval: .milliseconds(20), logger: LoopFixtures.quiet)
    }

    static func registration(_ partner: String = partner, domains: [String] = [domain]) -> RegisteredMerchant {
        RegisteredMerchant(
            partnerIdentifier: partner, name: "Partner", encryptTo: platform, merchantUrl: nil, domains: domains,
            createdAt: TestRecords.now, updatedAt: TestRecords.now)
    }

    func seal(_ url: String, for partner: String = partner) async throws {
        try await store.saveSealedMerchantSettings(partnerIdentifier: partner, sealed: Array(url.utf8), at: TestRecords.now)
    }

    @Test("a registration saved elsewhere is served after one pass, and no longer once deleted elsewhere")
    func registrationComesAndGoes() async throws {
        let sync = sync()
        try await store.saveRegistration(Self.registration())
        var seen = await sync.refresh(seenSettings: [:])
        #expect(directory.registrations == [Self.registration()])
        #expect(directory.merchant(forHost: Self.domain)?.merchant.merchantIdentifier == Self.partner)

        try await store.deleteRegistration(partnerIdentifier: Self.partner, at: TestRecords.now)
        seen = await sync.refresh(seenSettings: seen)
        #expect(directory.registrations.isEmpty)
        #expect(directory.merchant(forHost: Self.domain) == nil)
    }

    @Test("sealed settings are opened once, applied to the directory and the processors; opened again only when they change")
    func settingsApplied() async throws {
        let sync = sync()
        try await store.saveRegistration(Self.registration())
        try await seal("https://partner.example/v1")
        var seen = await sync.refresh(seenSettings: [:])
        #expect(directory.webhook(for: Self.partner)?.url == "https://partner.example/v1")
        #expect(maker.made.withLock { $0 } == 1)
        #expect(processors.processor(forMerchant: Self.partner) as? SimulatedProcessor === maker.last.withLock { $0 })

        seen = await sync.refresh(seenSettings: seen)
        #expect(maker.opened.withLock { $0 } == [Self.partner], "the same bytes are not opened twice")

        try await seal("https://partner.example/v2")
        seen = await sync.refresh(seenSettings: seen)
        #expect(maker.opened.withLock { $0.count } == 2)
        #expect(directory.webhook(for: Self.partner)?.url == "https://partner.example/v2")
        #expect(seen[Self.partner] == Array("https://partner.example/v2".utf8))
    }

    @Test("settings that do not open here are logged and skipped; the settings held here are kept, not retried every pass")
    func badSettingsKept() async throws {
        let sync = sync()
        try await store.saveRegistration(Self.registration())
        try await seal("https://partner.example/good")
        var seen = await sync.refresh(seenSettings: [:])
        try await seal("bad")
        seen = await sync.refresh(seenSettings: seen)
        #expect(directory.webhook(for: Self.partner)?.url == "https://partner.example/good")
        seen = await sync.refresh(seenSettings: seen)
        #expect(maker.opened.withLock { $0.count } == 2, "the bad bytes are tried once")
    }

    @Test("a partner unregistered elsewhere loses its processor with its settings")
    func processorDropped() async throws {
        let sync = sync()
        try await store.saveRegistration(Self.registration())
        try await seal("https://partner.example/v1")
        var seen = await sync.refresh(seenSettings: [:])
        #expect(processors.processor(forMerchant: Self.partner) is SimulatedProcessor)
        try await store.deleteRegistration(partnerIdentifier: Self.partner, at: TestRecords.now)
        seen = await sync.refresh(seenSettings: seen)
        #expect(!(processors.processor(forMerchant: Self.partner) is SimulatedProcessor))
        #expect(seen.isEmpty, "its settings are forgotten with it")
    }

    @Test("a pass that read the store before this instance changed its directory applies nothing; the next pass does")
    func staleReadDropped() async throws {
        try await store.saveRegistration(Self.registration())
        let newer = Self.registration("partner-2", domains: ["newer.example"])
        // The admin API here registers `newer` while the pass is reading the store.
        let racing = ChangesWhileReading(store: store) { directory.replaceRegistrations([newer]) }
        _ = await sync(registry: racing).refresh(seenSettings: [:])
        #expect(directory.registrations == [newer], "what was read may be older: not applied")
        _ = await sync().refresh(seenSettings: [:])
        #expect(directory.registrations == [Self.registration()], "the next pass reads again")
    }

    @Test("a registry that cannot be read changes nothing and keeps what was seen")
    func unreadable() async throws {
        try await store.saveRegistration(Self.registration())
        _ = await sync().refresh(seenSettings: [:])
        let seen = ["someone": [UInt8(1)]]
        let failing = ChangesWhileReading(store: store, fails: true) {}
        #expect(await sync(registry: failing).refresh(seenSettings: seen) == seen)
        #expect(directory.registrations == [Self.registration()])
    }

    @Test("running: a registration saved elsewhere is picked up by a pass of the running loop")
    func running() async throws {
        let sync = sync()
        try await LoopFixtures.running(sync.run) {
            try await store.saveRegistration(Self.registration())
            let served = try await Eventually.until { directory.merchant(forHost: Self.domain) != nil }
            #expect(served)
        }
    }
}

/// Makes a simulated processor for each settings it is given, and counts them; `opened` lists
/// the partners whose settings the sync opened.
final class CountingMaker: ProcessorMaker {
    let opened = Mutex<[String]>([])
    let made = Mutex(0)
    let last = Mutex<SimulatedProcessor?>(nil)

    func processor(for settings: any ProcessorSettings) -> any PaymentProcessor {
        let processor = SimulatedProcessor(clock: ManualClock(), inProgressIsRejection: false)
        made.withLock { $0 += 1 }
        last.withLock { $0 = processor }
        return processor
    }
}

/// The in-memory registry, running `during` while the registrations are read (or failing).
struct ChangesWhileReading: MerchantRegistry {
    struct Unreachable: Error {}

    let store: InMemoryStore
    var fails = false
    let during: @Sendable () -> Void

    func registeredMerchants() async throws -> [RegisteredMerchant] {
        if fails { throw Unreachable() }
        let read = try await store.registeredMerchants()
        during()
        return read
    }
    func saveRegistration(_ merchant: RegisteredMerchant) async throws { try await store.saveRegistration(merchant) }
    func deleteRegistration(partnerIdentifier: String, at date: Date) async throws -> String {
        try await store.deleteRegistration(partnerIdentifier: partnerIdentifier, at: date)
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
