import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Keeps this instance's ``MerchantDirectory`` in step with the registry in the store, so a
/// merchant registered (or a setting changed) through another instance sharing the database is
/// served here within one interval. Each pass reads the registry and the sealed settings and
/// swaps in only what changed; settings that do not open or check are logged and the ones this
/// instance holds are kept (the instance that saved them checked them with the same key).
public struct RegistrySync: Service {
    let store: any MerchantRegistry
    let directory: MerchantDirectory
    let processors: PaymentProcessors
    let processorMaker: (any ProcessorMaker)?
    /// Opens and checks one merchant's sealed settings, as the configuration allows them.
    let openSettings: @Sendable (_ sealed: [UInt8], _ partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings
    let interval: Duration
    let logger: Logger

    public init(
        store: any MerchantRegistry, directory: MerchantDirectory, processors: PaymentProcessors, processorMaker: (any ProcessorMaker)?,
        openSettings: @escaping @Sendable (_ sealed: [UInt8], _ partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings,
        interval: Duration, logger: Logger
    ) {
        self.store = store
        self.directory = directory
        self.processors = processors
        self.processorMaker = processorMaker
        self.openSettings = openSettings
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var seen: [String: [UInt8]] = [:]
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                seen = await refresh(seenSettings: seen)
            }
        }
    }

    /// One pass; returns the sealed settings now applied, to compare against next time (the
    /// first pass re-applies what startup loaded: once, and harmless). Nothing is applied when
    /// this instance changed its directory while the pass read the store: what was read may be
    /// older, and the next pass reads again.
    func refresh(seenSettings: [String: [UInt8]]) async -> [String: [UInt8]] {
        let generation = directory.generation
        let before = Set(directory.registrations.map(\.partnerIdentifier))
        let registered: [RegisteredMerchant]
        let sealed: [String: [UInt8]]
        do {
            registered = try await store.registeredMerchants()
            sealed = try await store.sealedMerchantSettings()
        } catch {
            logger.warning("the registry could not be read; the next pass tries again", metadata: ["error": "\(error)"])
            return seenSettings
        }
        var applied = seenSettings
        var changed: [String: MerchantSettings] = [:]
        for (partner, bytes) in sealed where seenSettings[partner] != bytes {
            applied[partner] = bytes
            do throws(ConfigurationError) {
                changed[partner] = try openSettings(bytes, partner)
            } catch {
                logger.error(
                    "a registered merchant's settings changed in the store but do not open here",
                    metadata: ["merchant": "\(partner)", "error": "\(error.message)"])
            }
        }
        guard
            changed.isEmpty && directory.registrations == registered
                || directory.replaceRegistrations(registered, settings: changed, ifGeneration: generation)
        else { return seenSettings }
        for (partner, settings) in changed {
            processors.setRegistered(processorMaker?.processor(for: settings.processor), forMerchant: partner)
        }
        // Unregistered elsewhere: its processor goes with its settings (the directory dropped them).
        for gone in before.subtracting(registered.map(\.partnerIdentifier)) {
            processors.setRegistered(nil, forMerchant: gone)
        }
        return applied.filter { sealed[$0.key] != nil }
    }
}
