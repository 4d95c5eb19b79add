import ApplePay
import Foundation
import Logging

/// What a registered merchant leaves behind when it goes, and what a new registration under the
/// same identifier must not inherit: its mandates end (`mandate.ended`, the processor's stored
/// credential deleted, so nothing can charge it), its API keys are revoked, its settings
/// (processor, webhook, quote) are dropped on every instance, and its undelivered events are
/// skipped (after one last attempt each). Its merchant tokens are not unlinked one by one: Apple has already deleted the
/// merchant with its last domain, and refuses token calls for a merchant it does not have.
public struct TenantRetirement: Sendable {
    /// Registered merchants and their sealed settings.
    let merchantRegistry: any MerchantRegistry
    /// Mandates.
    let mandates: any MandateRecords
    /// Merchants' API keys.
    let apiKeys: any APIKeys
    let directory: any RegistryDirectory
    let processors: PaymentProcessors
    let lifecycle: MandateLifecycle
    /// Sends the tenant's last events (its `mandate.ended`) before its webhook goes; nil without shop calls.
    let webhooks: (any PendingDeliveries)?
    let time: TimeSource
    let logger: Logger

    /// A retirement over the repositories it uses: the registry, the tenant's mandates and its API keys.
    public init(
        merchantRegistry: any MerchantRegistry, mandates: any MandateRecords, apiKeys: any APIKeys, directory: any RegistryDirectory,
        processors: PaymentProcessors,
        lifecycle: MandateLifecycle, webhooks: (any PendingDeliveries)?, time: TimeSource, logger: Logger
    ) {
        self.merchantRegistry = merchantRegistry
        self.mandates = mandates
        self.apiKeys = apiKeys
        self.directory = directory
        self.processors = processors
        self.lifecycle = lifecycle
        self.webhooks = webhooks
        self.time = time
        self.logger = logger
    }

    /// The `endedReason` of the mandates a retirement ends.
    public static let endedReason = "unregistered"

    /// The first step of a merchant's leaving, before Apple is asked or a mandate ends: it stops
    /// being served. Its domains leave the registry (no `Host` routes to it, and the guard watches
    /// and repairs none of them: other instances follow within their 2 s sync) and its API keys are
    /// revoked, so nothing new can be created or charged for it while it leaves. A registration
    /// without domains is such a retirement in progress; unregistering again finishes it.
    public func stopServing(_ merchant: RegisteredMerchant) async throws {
        var leaving = merchant
        leaving.domains = []
        leaving.updatedAt = time.now
        try await merchantRegistry.saveRegistration(leaving)
        for key in try await apiKeys.apiKeys(merchantIdentifier: merchant.partnerIdentifier) where key.revokedAt == nil {
            _ = try await apiKeys.revokeAPIKey(id: key.id, at: time.now)
        }
        directory.replaceRegistrations(try await merchantRegistry.registeredMerchants())
    }

    /// Retires `partner`: first its mandates, while its processor and its registration at Apple
    /// are still known here, then everything else in one store transaction.
    public func retire(_ partner: String) async throws {
        var ended = 0
        // Pages of active mandates until none is left; each end is a compare-and-set, so a page
        // never comes back, and the bound only guards against a store that ignores the filter.
        for _ in 0..<10_000 {
            let active = try await mandates.mandates(merchantIdentifier: partner, state: .active, limit: 100)
            if active.isEmpty { break }
            for mandate in active where try await lifecycle.end(mandate, reason: Self.endedReason, unlinkAtApple: false) != nil {
                ended += 1
            }
        }
        // The shop hears that its mandates ended while its endpoint is still known here.
        let tried = await webhooks?.deliverPending(merchant: partner) ?? 0
        let retired = try await merchantRegistry.deleteRegistration(partnerIdentifier: partner, at: time.now)
        let late = try await endLate(retired, partner: partner)
        directory.replaceRegistrations(try await merchantRegistry.registeredMerchants())
        processors.setRegistered(nil, forMerchant: partner)
        logger.notice(
            "registered merchant retired: API keys revoked, settings dropped, undelivered events skipped",
            metadata: [
                "partner": "\(partner)", "mandatesEnded": "\(ended + late)", "lastEventsTried": "\(tried)", "recordKey": "\(retired)",
            ])
    }

    /// Ends the mandates that reached `retired` active: a first payment's move that committed
    /// after the loop above and before the registry's transaction created its mandate under the
    /// partner ID, and that transaction moved it here. A move that commits after the transaction
    /// finds the order's owner retired and ends its own mandate (``PaymentsEngine``): the order's
    /// row orders the two, on every store and across instances, so each such mandate is met by
    /// one of them, and ended (and its credential deleted) by whichever wins the compare-and-set.
    /// The credential is deleted through the tenant's processor, still known here until the end
    /// of ``retire(_:)``.
    private func endLate(_ retired: String, partner: String) async throws -> Int {
        let processor = processors.processor(forMerchant: partner)
        var ended = 0
        for _ in 0..<10_000 {
            let active = try await mandates.mandates(merchantIdentifier: retired, state: .active, limit: 100)
            if active.isEmpty { break }
            for mandate in active
            where try await lifecycle.end(mandate, reason: Self.endedReason, unlinkAtApple: false, through: processor) != nil {
                ended += 1
                logger.warning(
                    "a mandate created while its merchant was being retired was ended",
                    metadata: ["partner": "\(partner)", "mandate": "\(mandate.id)"])
            }
        }
        return ended
    }
}
