import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// ``MerchantRegistryService`` in memory: Apple asked only once the registration is one this
/// server can serve, recorded once Apple accepted it, a merchant without domains retired, and
/// settings checked and sealed before they are stored and put to use.
@Suite("MerchantRegistryService: registering, unregistering and settings, in memory")
struct MerchantRegistryServiceTests {
    static let platform = "merchant.platform"
    static let quiet = Logger(label: "test.registry") { _ in SwiftLogNoOpLogHandler() }

    let store = InMemoryStore()
    let clock = TestClock()
    let directory = TestDirectory()
    let apple = InMemoryApple()
    let processors = PaymentProcessors()
    let maker = FixedMaker()

    func service(apple: InMemoryApple? = nil) -> MerchantRegistryService {
        let lifecycle = MandateLifecycle(
            store: store, processors: processors, tokens: nil, directory: NoMerchants(), time: clock.source, logger: Self.quiet)
        let retirement = TenantRetirement(
            merchantRegistry: store, mandates: store, apiKeys: store, directory: directory, processors: processors, lifecycle: lifecycle,
            webhooks: nil, time: clock.source,
            logger: Self.quiet)
        return MerchantRegistryService(
            merchantRegistry: store, directory: directory, apple: apple, retirement: retirement, processors: processors,
            processorMaker: maker,
            time: clock.source)
    }

    var registry: MerchantRegistryService { service(apple: apple) }

    func register(_ id: String, _ domains: [String], encryptTo: String? = nil) async throws -> (RegisteredMerchant, Bool) {
        let draft = MerchantRegistrationDraft(
            partnerInternalMerchantIdentifier: id, partnerMerchantName: "Shop \(id)", domainNames: domains, encryptTo: encryptTo)
        let (merchant, created) = try await registry.register({ draft }, logger: Self.quiet)
        return (merchant, created)
    }

    func refusal(_ body: () async throws -> Void) async -> CoreError? { await ServiceFixtures.refusal(body) }

    @Test("a new merchant is registered with Apple (encrypted to the platform), then here; registering again adds its domains")
    func registered() async throws {
        let (merchant, created) = try await register("tenant-1", ["One.example"])
        #expect(created && merchant.domains == ["one.example"] && merchant.encryptTo == Self.platform)
        #expect(apple.registered.map(\.encryptTo) == [Self.platform])
        #expect(try await store.registeredMerchants() == [merchant] && directory.registrations == [merchant])

        clock.advance(60)
        let (again, createdAgain) = try await register("tenant-1", ["two.example", "one.example"])
        #expect(!createdAgain && again.domains == ["one.example", "two.example"] && again.createdAt == merchant.createdAt)
        #expect(again.updatedAt == merchant.createdAt.addingTimeInterval(60) && directory.registrations == [again])
    }

    @Test("no platform, a bad registration, another encryptTo, a reserved ID or a taken domain: refused before Apple, nothing recorded")
    func refusedBeforeApple() async throws {
        let read = Mutex(false)
        let unconfigured = await refusal {
            _ = try await service(apple: nil).register(
                {
                    read.withLock { $0 = true }
                    return MerchantRegistrationDraft(
                        partnerInternalMerchantIdentifier: "t", partnerMerchantName: "T", domainNames: ["t.example"])
                }, logger: Self.quiet)
        }
        #expect(unconfigured?.code == .notConfigured && !read.withLock { $0 }, "the body is not read")
        let cases: [(String, [String], String?, CoreError.Code)] = [
            ("tenant-2", ["not a domain"], nil, .invalidRegistration),
            ("tenant-2", ["two.example"], "merchant.elsewhere", .invalidRegistration),
            ("Merchant.Configured", ["two.example"], nil, .identifierTaken),
            ("tenant-2", ["configured.example"], nil, .domainTaken),
        ]
        for (id, domains, encryptTo, code) in cases {
            #expect(await refusal { _ = try await register(id, domains, encryptTo: encryptTo) }?.code == code, "\(id) \(domains)")
        }
        let recorded = try await store.registeredMerchants()
        #expect(apple.calls == 0 && recorded.isEmpty)
    }

    @Test("Apple's refusal is kept as Apple's (for the operator), and nothing is recorded")
    func appleRefuses() async throws {
        apple.failure.withLock { $0 = GatewayError(.rejected, "Apple says no", appleStatus: 400) }
        do {
            _ = try await register("tenant-3", ["three.example"])
            Issue.record("Apple refused")
        } catch let error as RegistrationCallError {
            #expect(error.gateway.appleStatus == 400)
        }
        #expect((try await store.registeredMerchants()).isEmpty && directory.registrations.isEmpty)
    }

    @Test("unregistering some domains keeps the merchant; its last retires it: keys revoked, settings and processor dropped")
    func unregistered() async throws {
        _ = try await register("tenant-4", ["a.example", "b.example"])
        let (key, _) = APIKeyRecord.generate(merchantIdentifier: "tenant-4", at: clock.source.now)
        try await store.insertAPIKey(key)
        _ = try await registry.setSettings(of: "tenant-4", sealer: TestSealer(), { "worldline" }, logger: Self.quiet)
        #expect(processors.processor(forMerchant: "tenant-4").name == maker.made.name)

        let unknown = await refusal {
            _ = try await registry.unregister(
                "tenant-9", { MerchantUnregistrationDraft(domainNames: ["a.example"], reason: "gone") }, logger: Self.quiet)
        }
        let notItsOwn = await refusal {
            _ = try await registry.unregister(
                "tenant-4", { MerchantUnregistrationDraft(domainNames: ["c.example"], reason: "gone") }, logger: Self.quiet)
        }
        #expect(unknown?.code == .notFound && notItsOwn?.message == "c.example is not registered to tenant-4" && apple.calls == 1)

        let left = try await registry.unregister(
            "tenant-4", { MerchantUnregistrationDraft(domainNames: ["a.example"], reason: "moved") }, logger: Self.quiet)
        #expect(left == ["b.example"] && directory.registrations.first?.domains == ["b.example"])
        let none = try await registry.unregister(
            "tenant-4", { MerchantUnregistrationDraft(domainNames: ["b.example"], reason: "closed") }, logger: Self.quiet)
        let recorded = try await store.registeredMerchants()
        #expect(none.isEmpty && directory.registrations.isEmpty && recorded.isEmpty)
        #expect(try await store.apiKeys(merchantIdentifier: "tenant-4").allSatisfy { $0.revokedAt != nil })
        #expect(processors.processor(forMerchant: "tenant-4").name == "record" && directory.settings["tenant-4"] == nil)
    }

    @Test("leaving: it stops being served (no domains, keys revoked) before Apple is asked; a retry after Apple's refusal finishes it")
    func offboardingOrder() async throws {
        _ = try await register("leaver", ["leaver.example"])
        try await store.insertAPIKey(APIKeyRecord.generate(merchantIdentifier: "leaver", at: clock.source.now).record)
        let seen = Mutex<(domains: [String]?, activeKeys: Int)?>(nil)
        apple.whileUnregistering.withLock { hook in
            hook = { [store, directory] in
                let active = (try? await store.apiKeys(merchantIdentifier: "leaver"))?.filter { $0.revokedAt == nil }.count ?? -1
                let domains = directory.registrations.first { $0.partnerIdentifier == "leaver" }?.domains
                seen.withLock { $0 = (domains, active) }
            }
        }
        apple.failure.withLock { $0 = GatewayError(.unreachable, "connection refused") }
        await #expect(throws: RegistrationCallError.self) {
            _ = try await registry.unregister(
                "leaver", { MerchantUnregistrationDraft(domainNames: ["leaver.example"], reason: "closed") }, logger: Self.quiet)
        }
        #expect(seen.withLock { $0 }?.domains == [] && seen.withLock { $0 }?.activeKeys == 0, "\(String(describing: seen.withLock { $0 }))")
        // Apple refused: it stays unserved, not yet retired, and the guard has nothing of it to repair.
        #expect(try await store.registeredMerchants().map(\.domains) == [[]])

        apple.failure.withLock { $0 = nil }
        let none = try await registry.unregister(
            "leaver", { MerchantUnregistrationDraft(domainNames: ["leaver.example"], reason: "closed") }, logger: Self.quiet)
        let recorded = try await store.registeredMerchants()
        #expect(none.isEmpty && recorded.isEmpty && directory.registrations.isEmpty)
    }

    @Test("settings: refused without a key (body unread), for an unknown merchant, or when they do not check; else sealed, stored, used")
    func settings() async throws {
        _ = try await register("tenant-5", ["five.example"])
        let read = Mutex(false)
        let noKey = await refusal {
            _ = try await registry.setSettings(
                of: "tenant-5", sealer: TestSealer?.none,
                {
                    read.withLock { $0 = true }
                    return "record"
                }, logger: Self.quiet)
        }
        #expect(noKey?.code == .notConfigured && !read.withLock { $0 })
        #expect(
            await refusal { _ = try await registry.setSettings(of: "tenant-9", sealer: TestSealer(), { "record" }, logger: Self.quiet) }?
                .code == .notFound)
        let bad = await refusal {
            _ = try await registry.setSettings(of: "tenant-5", sealer: TestSealer(), { "bogus" }, logger: Self.quiet)
        }
        #expect(bad == CoreError(.invalidRequest, "processor.type must be record or worldline"))
        #expect(try await store.sealedMerchantSettings().isEmpty && directory.settings.isEmpty)
        #expect(try registry.settings(of: "tenant-5") == nil)

        let settings = try await registry.setSettings(of: "tenant-5", sealer: TestSealer(), { "worldline" }, logger: Self.quiet)
        #expect(settings.processor.type == "worldline")
        #expect(try await store.sealedMerchantSettings()["tenant-5"] == TestSealer().seal("worldline", partnerIdentifier: "tenant-5"))
        #expect(try registry.settings(of: "tenant-5")?.processor.type == "worldline")
        #expect(processors.processor(forMerchant: "tenant-5").name == maker.made.name)
        #expect(await refusal { _ = try registry.settings(of: "tenant-9") }?.code == .notFound)
    }

    @Test("details: this registry's record and Apple's; not found only when neither knows the merchant")
    func details() async throws {
        let (merchant, _) = try await register("tenant-6", ["six.example"])
        let known = try await registry.details("tenant-6")
        #expect(known.registered == merchant && known.apple?.domainNames == ["six.example"])
        #expect(
            await refusal { _ = try await registry.details("tenant-9") } == CoreError(.notFound, "no merchant tenant-9 is registered"))
        apple.failure.withLock { $0 = GatewayError(.timedOut, "no answer") }
        await #expect(throws: RegistrationCallError.self) { _ = try await registry.details("tenant-6") }
    }
}

/// The server's view of its merchants, in memory: one configured merchant holds
/// `configured.example`, and the platform's and that merchant's IDs are reserved.
final class TestDirectory: RegistryDirectory {
    private let state = Mutex<(registrations: [RegisteredMerchant], settings: [String: MerchantSettings])>(([], [:]))

    var platformIdentifier: String? { MerchantRegistryServiceTests.platform }
    var registrations: [RegisteredMerchant] { state.withLock { $0.registrations } }
    var settings: [String: MerchantSettings] { state.withLock { $0.settings } }

    func reservation(of identifier: String) -> String? {
        ["merchant.configured", MerchantRegistryServiceTests.platform].contains(identifier.lowercased()) ? "reserved here" : nil
    }

    func owner(of domain: String) -> String? {
        domain == "configured.example"
            ? "merchant.configured" : registrations.first { $0.domains.contains(domain) }?.partnerIdentifier
    }

    /// As the server's directory: a merchant no longer registered takes its settings with it.
    func replaceRegistrations(_ merchants: [RegisteredMerchant]) {
        state.withLock { state in
            state.registrations = merchants
            state.settings = state.settings.filter { entry in merchants.contains { $0.partnerIdentifier == entry.key } }
        }
    }

    func setSettings(_ settings: MerchantSettings, forPartner partnerIdentifier: String) {
        state.withLock { $0.settings[partnerIdentifier] = settings }
    }

    func walletOrderTypeOwner(_ orderTypeIdentifier: String) -> String? {
        state.withLock { state in
            state.settings.first { $0.value.walletOrders?.orderTypeIdentifier == orderTypeIdentifier }?.key
        }
    }
}

/// Apple's registration API in memory: records what it was asked, knows what it registered,
/// and fails every call with `failure` when one is set.
final class InMemoryApple: MerchantRegistrationService {
    let failure = Mutex<GatewayError?>(nil)
    /// Runs when an unregistration reaches Apple, before it is answered: what the rest of Orchard
    /// looks like while Apple is being asked.
    let whileUnregistering = Mutex<(@Sendable () async -> Void)?>(nil)
    private let state = Mutex<(registered: [MerchantRegistration], calls: Int, domains: [String: [String]])>(([], 0, [:]))

    var registered: [MerchantRegistration] { state.withLock { $0.registered } }
    var calls: Int { state.withLock { $0.calls } }

    private func answer() throws(GatewayError) {
        state.withLock { $0.calls += 1 }
        if let failure = failure.withLock({ $0 }) { throw failure }
    }

    func register(_ registration: MerchantRegistration) async throws(GatewayError) {
        try answer()
        state.withLock {
            $0.registered.append(registration)
            let known = $0.domains[registration.partnerInternalMerchantIdentifier] ?? []
            $0.domains[registration.partnerInternalMerchantIdentifier] = known + registration.domainNames.filter { !known.contains($0) }
        }
    }

    func unregister(_ unregistration: MerchantUnregistration) async throws(GatewayError) {
        if let meanwhile = whileUnregistering.withLock({ $0 }) { await meanwhile() }
        try answer()
        state.withLock {
            $0.domains[unregistration.partnerInternalMerchantIdentifier]?.removeAll { unregistration.domainNames.contains($0) }
        }
    }

    func details(partnerIdentifier: String) async throws(GatewayError) -> RegisteredMerchantDetails {
        try answer()
        guard let domains = state.withLock({ $0.domains[partnerIdentifier] }), !domains.isEmpty else {
            throw GatewayError(.rejected, "no such merchant", appleStatus: 404)
        }
        return RegisteredMerchantDetails(
            domainNames: domains, partnerMerchantName: nil, partnerInternalMerchantIdentifier: partnerIdentifier,
            partnerMerchantValidationURI: nil, encryptTo: MerchantRegistryServiceTests.platform)
    }
}

/// Settings as a processor type's name: `record` and `worldline` check, anything else does not.
/// Sealed as the name reversed under a marker, so a test sees that what is stored is not the file.
struct TestSealer: MerchantSettingsSealer {
    struct Named: ProcessorSettings {
        var type: String
        var endpoint: RemoteEndpoint? { nil }
        func cannotDecrypt(_ scheme: PaymentData.Scheme) -> String? { "a test double decrypts nothing" }
    }

    func check(_ file: String, partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        guard ["record", "worldline"].contains(file) else { throw ConfigurationError("processor.type must be record or worldline") }
        return MerchantSettings(processor: Named(type: file), webhook: nil, quote: nil)
    }

    func seal(_ file: String, partnerIdentifier: String) -> [UInt8] {
        Array("sealed:\(partnerIdentifier):".utf8) + Array(file.utf8).reversed()
    }
}

/// Makes the same processor for any settings.
struct FixedMaker: ProcessorMaker {
    let made = ChargingProcessor()

    func processor(for settings: any ProcessorSettings) -> any PaymentProcessor { made }
}
