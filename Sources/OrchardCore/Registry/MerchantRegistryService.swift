import ApplePay
import Foundation
import Logging

/// What the admin API sends to register a merchant (or add domains to one) with Apple.
public struct MerchantRegistrationDraft: Decodable, Sendable {
    public var partnerInternalMerchantIdentifier: String
    public var partnerMerchantName: String
    public var domainNames: [String]
    public var merchantUrl: String?
    /// Nil: the platform integrator's merchant ID, the only one Orchard takes.
    public var encryptTo: String?

    public init(
        partnerInternalMerchantIdentifier: String, partnerMerchantName: String, domainNames: [String], merchantUrl: String? = nil,
        encryptTo: String? = nil
    ) {
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.partnerMerchantName = partnerMerchantName
        self.domainNames = domainNames
        self.merchantUrl = merchantUrl
        self.encryptTo = encryptTo
    }
}

/// What the admin API sends to unregister some of a merchant's domains.
public struct MerchantUnregistrationDraft: Decodable, Sendable {
    public var domainNames: [String]
    public var reason: String

    public init(domainNames: [String], reason: String) {
        self.domainNames = domainNames
        self.reason = reason
    }
}

/// The merchant registry of a platform integrator: registering merchants and their domains with
/// Apple and here, unregistering them (a merchant without domains is retired), and their sealed
/// settings. Apple is called first; what Apple accepted is then recorded, and a failure to
/// record says to repeat the call (Apple's calls are idempotent). Every refusal before Apple's
/// call changes nothing anywhere.
public struct MerchantRegistryService: Sendable {
    /// Registered merchants and their sealed settings.
    let merchantRegistry: any MerchantRegistry
    let directory: any RegistryDirectory
    /// Apple's registration API; nil without a platform integrator.
    let apple: (any MerchantRegistrationService)?
    let retirement: TenantRetirement
    /// Where a registered merchant's processor is put to use when its settings change.
    let processors: PaymentProcessors
    let processorMaker: (any ProcessorMaker)?
    let time: TimeSource

    /// A service over the one repository it uses, the registry.
    public init(
        merchantRegistry: any MerchantRegistry, directory: any RegistryDirectory, apple: (any MerchantRegistrationService)?,
        retirement: TenantRetirement, processors: PaymentProcessors, processorMaker: (any ProcessorMaker)?, time: TimeSource
    ) {
        self.merchantRegistry = merchantRegistry
        self.directory = directory
        self.apple = apple
        self.retirement = retirement
        self.processors = processors
        self.processorMaker = processorMaker
        self.time = time
    }

    /// Apple's registration API, or the refusal that says what to configure.
    func registrationAPI() throws(CoreError) -> any MerchantRegistrationService {
        guard let apple else {
            throw CoreError(
                .notConfigured, "domain registration needs a platformIntegrator (identity certificate and key) in the configuration")
        }
        return apple
    }

    /// Registers `draft`'s merchant and domains with Apple, then here: a new merchant starts
    /// clean (whatever an earlier one under its identifier left is retired first); a known one
    /// gains the domains. `created` says which.
    /// - Parameter draft: the request's body, read once the platform can register at all.
    public func register(_ draft: () async throws -> MerchantRegistrationDraft, logger: Logger) async throws -> (
        merchant: RegisteredMerchant, created: Bool
    ) {
        let apple = try registrationAPI()
        let body = try await draft()
        let registration: MerchantRegistration
        do throws(ApplePayError) {
            registration = try MerchantRegistration(
                domainNames: body.domainNames, encryptTo: body.encryptTo ?? directory.platformIdentifier ?? "",
                partnerInternalMerchantIdentifier: body.partnerInternalMerchantIdentifier, partnerMerchantName: body.partnerMerchantName,
                merchantUrl: body.merchantUrl
            ).validated()
        } catch {
            throw CoreError(.invalidRegistration, error.message)
        }
        try checkAvailable(registration, registered: directory.registrations)
        // The store too: another instance may have registered a case variant a moment ago.
        try checkAvailable(registration, registered: try await merchantRegistry.registeredMerchants())
        try await call { () async throws(GatewayError) in try await apple.register(registration) }
        let id = registration.partnerInternalMerchantIdentifier
        // The store, not this instance's copy, says whether the merchant is new: another instance
        // may have registered it a moment ago.
        var existing: RegisteredMerchant?
        do {
            existing = try await merchantRegistry.registeredMerchants().first { $0.partnerIdentifier == id }
            // A registration without domains was leaving: its retirement finishes before anyone new starts.
            if existing?.isLeaving ?? true {
                existing = nil
                try await retirement.retire(id)
            }
        } catch {
            throw CoreError(.unrecorded, "Apple registered the merchant but the registry could not record it; repeat the call")
        }
        let now = time.now
        let known = existing?.domains ?? []
        let merchant = RegisteredMerchant(
            partnerIdentifier: id, name: registration.partnerMerchantName, encryptTo: registration.encryptTo,
            merchantUrl: registration.merchantUrl, domains: known + registration.domainNames.filter { !known.contains($0) },
            createdAt: existing?.createdAt ?? now, updatedAt: now)
        do {
            try await save(merchant, after: "registered")
        } catch let refusal as CoreError where refusal.code == .identifierTaken && existing == nil {
            throw await undo(registration, refused: refusal, apple: apple, logger: logger)
        }
        logger.info("merchant registered", metadata: ["partner": "\(id)", "domains": "\(registration.domainNames.joined(separator: ","))"])
        return (merchant, existing == nil)
    }

    /// What stops a registration before Apple is asked: tokens encrypted to anyone but the
    /// platform, an identifier this server reserves, another merchant's identifier in other
    /// letter case (`ACME` beside `acme`: one tenant to an operator, two to a string compare),
    /// a domain another merchant holds.
    func checkAvailable(_ registration: MerchantRegistration, registered: [RegisteredMerchant]) throws(CoreError) {
        // A registered merchant's tokens are decrypted with the platform's processing keys, so Apple
        // must encrypt them to the platform: any other encryptTo would make every payment undecryptable.
        if let platform = directory.platformIdentifier, registration.encryptTo != platform {
            throw CoreError(
                .invalidRegistration,
                "encryptTo must be the platform integrator's merchant ID, \(platform) (the default): Orchard decrypts registered merchants' payments with its processing keys"
            )
        }
        let id = registration.partnerInternalMerchantIdentifier
        if let reservation = directory.reservation(of: id) {
            throw CoreError(
                .identifierTaken, "\(id) is \(reservation): a registered merchant needs a partnerInternalMerchantIdentifier of its own")
        }
        if let variant = registered.first(where: { $0.partnerIdentifier != id && $0.partnerIdentifier.lowercased() == id.lowercased() }) {
            throw RegisteredMerchant.caseVariant(id, of: variant.partnerIdentifier)
        }
        for domain in registration.domainNames {
            if let owner = directory.owner(of: domain), owner != id {
                throw CoreError(.domainTaken, "\(domain) already belongs to \(owner) on this server")
            }
        }
    }

    /// Unregisters some of merchant `id`'s domains at Apple, then here; a merchant left without
    /// domains is retired (Apple deletes it with its last one). Returns the domains left.
    /// - Parameter draft: the request's body, read once the platform can register at all.
    public func unregister(_ id: String, _ draft: () async throws -> MerchantUnregistrationDraft, logger: Logger) async throws
        -> [String]
    {
        let apple = try registrationAPI()
        let body = try await draft()
        let unregistration: MerchantUnregistration
        do throws(ApplePayError) {
            unregistration = try MerchantUnregistration(
                domainNames: body.domainNames, partnerInternalMerchantIdentifier: id, reason: body.reason
            )
            .validated()
        } catch {
            throw CoreError(.invalidRegistration, error.message)
        }
        _ = try registered(id)
        // Held from before the first step until the registry has recorded Apple's answer: a repair
        // by the guard waits or gives up meanwhile, so its `register` never follows this delete.
        let holder = "unregister/\(RecordIdentifier.random())"
        try await claim(id, as: holder, logger: logger)
        do {
            let left = try await unregister(id, unregistration, apple: apple)
            try? await merchantRegistry.releaseRegistration(partnerIdentifier: id, holder: holder)
            logger.info(
                "merchant domains unregistered",
                metadata: [
                    "partner": "\(id)", "domains": "\(unregistration.domainNames.joined(separator: ","))", "reason": "\(body.reason)",
                ])
            return left
        } catch {
            try? await merchantRegistry.releaseRegistration(partnerIdentifier: id, holder: holder)
            throw error
        }
    }

    /// The unregistration itself, under its claim: the merchant as the store has it now (another
    /// instance may have changed it while the claim waited), Apple, then the registry.
    private func unregister(_ id: String, _ unregistration: MerchantUnregistration, apple: any MerchantRegistrationService) async throws
        -> [String]
    {
        guard var merchant = try await merchantRegistry.registeredMerchants().first(where: { $0.partnerIdentifier == id }) else {
            throw CoreError(.notFound, "no merchant \(id) is registered on this server")
        }
        // No domains left here: an earlier call stopped serving it and did not finish; this one does.
        let unfinished = merchant.isLeaving
        if !unfinished, let missing = unregistration.domainNames.first(where: { !merchant.domains.contains($0) }) {
            throw CoreError(.notFound, "\(missing) is not registered to \(id)")
        }
        let leaving = merchant.domains.allSatisfy { unregistration.domainNames.contains($0) }
        if leaving && !unfinished {
            // Before Apple is asked: nothing may be served, charged or repaired for it meanwhile.
            try await retirement.stopServing(merchant)
        }
        try await call { () async throws(GatewayError) in try await apple.unregister(unregistration) }
        merchant.domains.removeAll { unregistration.domainNames.contains($0) }
        merchant.updatedAt = time.now
        do {
            if leaving {
                try await retirement.retire(id)
            } else {
                try await merchantRegistry.saveRegistration(merchant)
                directory.replaceRegistrations(try await merchantRegistry.registeredMerchants())
            }
        } catch {
            throw CoreError(.unrecorded, "Apple unregistered the domains but the registry could not record it; repeat the call")
        }
        return merchant.domains
    }

    /// Merchant `id` as this registry and as Apple know it; "not found" only when neither does.
    public func details(_ id: String) async throws -> (registered: RegisteredMerchant?, apple: RegisteredMerchantDetails?) {
        let local = directory.registrations.first { $0.partnerIdentifier == id }
        let api = try registrationAPI()
        var apple: RegisteredMerchantDetails?
        do throws(GatewayError) {
            apple = try await api.details(partnerIdentifier: id)
        } catch  where error.appleStatus == 404 {
            apple = nil
        } catch {
            throw RegistrationCallError(error)
        }
        guard local != nil || apple != nil else { throw CoreError(.notFound, "no merchant \(id) is registered") }
        return (local, apple)
    }

    /// Registered merchant `id`'s settings as in use here (nil: none set, it records only).
    public func settings(of id: String) throws(CoreError) -> MerchantSettings? {
        _ = try registered(id)
        return directory.settings[id]
    }

    /// Checks, seals, stores and puts to use registered merchant `id`'s settings; nothing changes
    /// on any refusal. `sealer` is nil when no settings key is configured: settings are never
    /// stored in clear.
    /// - Parameter file: the request's body, read once the merchant is known to take settings.
    public func setSettings<Sealer: MerchantSettingsSealer>(
        of id: String, sealer: Sealer?, _ file: () async throws -> Sealer.File, logger: Logger
    ) async throws -> MerchantSettings {
        guard let sealer else {
            throw CoreError(
                .notConfigured,
                "registered merchants' settings are sealed at rest: set platformIntegrator.settingsKey (64 hex digits, env: or a file) first"
            )
        }
        _ = try registered(id)
        let file = try await file()
        let settings: MerchantSettings
        do throws(ConfigurationError) {
            settings = try sealer.check(file, partnerIdentifier: id)
        } catch {
            throw CoreError(.invalidRequest, error.message)
        }
        // An order type names one merchant to Wallet's web service: a second would answer for the first's orders.
        if let type = settings.walletOrders?.orderTypeIdentifier, let owner = directory.walletOrderTypeOwner(type), owner != id {
            throw CoreError(.identifierTaken, "the Order Type ID \(type) is \(owner)'s on this server; each merchant needs its own")
        }
        do {
            try await merchantRegistry.saveSealedMerchantSettings(
                partnerIdentifier: id, sealed: try sealer.seal(file, partnerIdentifier: id), at: time.now)
        } catch {
            throw CoreError(.unrecorded, "the settings could not be stored; nothing changed")
        }
        directory.setSettings(settings, forPartner: id)
        processors.setRegistered(processorMaker?.processor(for: settings.processor), forMerchant: id)
        logger.info(
            "registered merchant's settings changed",
            metadata: ["partner": "\(id)", "processor": "\(settings.processor.type)", "webhook": "\(settings.webhook != nil)"])
        return settings
    }

    /// Merchant `id` as registered on this server.
    func registered(_ id: String) throws(CoreError) -> RegisteredMerchant {
        guard let merchant = directory.registrations.first(where: { $0.partnerIdentifier == id }) else {
            throw CoreError(.notFound, "no merchant \(id) is registered on this server")
        }
        return merchant
    }

    /// Records a change Apple already accepted; Apple's calls are idempotent, so a failure here is
    /// fixed by repeating. The store's one owner per domain, and its one merchant per ID in any
    /// letter case, may still refuse it (another instance gave the domain away meanwhile).
    func save(_ merchant: RegisteredMerchant, after what: String) async throws {
        do {
            try await merchantRegistry.saveRegistration(merchant)
            directory.replaceRegistrations(try await merchantRegistry.registeredMerchants())
        } catch let error as CoreError where [.domainTaken, .identifierTaken].contains(error.code) {
            // Another instance gave the domain away, or registered a case variant of the ID, meanwhile.
            throw error
        } catch {
            throw CoreError(.unrecorded, "Apple \(what) the merchant but the registry could not record it; repeat the call")
        }
    }

    /// A registration call, its failure kept as Apple's for the operator.
    func call(_ body: () async throws(GatewayError) -> Void) async throws(RegistrationCallError) {
        do {
            try await body()
        } catch {
            throw RegistrationCallError(error)
        }
    }
}
