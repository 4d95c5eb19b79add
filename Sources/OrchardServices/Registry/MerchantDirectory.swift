import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// Which merchant serves a host: the configured merchants, then the merchants a platform
/// integrator registered (from the registry in the store). Every controller asks here, so
/// a request on one merchant's domain only ever sees that merchant.
public final class MerchantDirectory: MerchantLookup, RegistryDirectory {
    /// The merchants the configuration file lists.
    public let merchants: [MerchantConfiguration]
    /// The platform integrator, the template for registered merchants; nil: none is configured.
    public let platform: MerchantConfiguration?
    private let registered: Mutex<Registered>
    /// The configured merchants by domain (the first to name a domain keeps it), looked up on every request.
    private let configuredByDomain: [String: MerchantConfiguration]

    struct Registered {
        var merchants: [RegisteredMerchant] = []
        var byDomain: [String: MerchantConfiguration] = [:]
        /// Processor and webhook, by partner identifier, as an operator set them.
        var settings: [String: MerchantSettings] = [:]
        /// Counts changes, so a background refresh that read the store before a change made
        /// here does not put the older contents back (``replaceRegistrations(_:ifGeneration:)``).
        var generation = 0
    }

    /// A directory of the configured `merchants`, the `platform` integrator, and `registered`
    /// merchants with their `settings`.
    public init(
        merchants: [MerchantConfiguration], platform: MerchantConfiguration?, registered: [RegisteredMerchant] = [],
        settings: [String: MerchantSettings] = [:]
    ) {
        self.merchants = merchants
        self.platform = platform
        var byDomain: [String: MerchantConfiguration] = [:]
        for merchant in merchants {
            for domain in merchant.domains where byDomain[domain] == nil { byDomain[domain] = merchant }
        }
        configuredByDomain = byDomain
        self.registered = Mutex(Registered(settings: settings))
        replaceRegistrations(registered)
    }

    /// The platform integrator's merchant ID, when one is configured.
    public var platformIdentifier: String? { platform?.merchantIdentifier }

    /// Registered merchants' settings, by partner identifier.
    public var settings: [String: MerchantSettings] {
        registered.withLock { $0.settings }
    }

    /// Sets a registered merchant's processor and webhook.
    public func setSettings(_ settings: MerchantSettings, forPartner partnerIdentifier: String) {
        registered.withLock { $0.settings[partnerIdentifier] = settings }
        replaceRegistrations(registrations)
    }

    /// Changes made to the registrations and settings so far.
    public var generation: Int {
        registered.withLock { $0.generation }
    }

    /// Swaps in `merchants` and `settings` read from the store, unless something changed here
    /// since `generation` was read (then what was read may be older than what is here: the
    /// next refresh reads again). False when nothing was applied.
    @discardableResult
    public func replaceRegistrations(
        _ merchants: [RegisteredMerchant], settings: [String: MerchantSettings], ifGeneration generation: Int
    ) -> Bool {
        registered.withLock { state in
            guard state.generation == generation else { return false }
            state.settings.merge(settings) { $1 }
            Self.apply(merchants, to: &state, platform: platform, configured: configuredByDomain)
            return true
        }
    }

    /// The merchant serving a Host header value (port ignored, case-insensitive), if any.
    public func merchant(forHost host: String?) -> (merchant: MerchantConfiguration, domain: String)? {
        guard let domain = host.flatMap(Self.domain(fromHost:)) else { return nil }
        if let merchant = configuredByDomain[domain] { return (merchant, domain) }
        return registered.withLock { $0.byDomain[domain] }.map { ($0, domain) }
    }

    /// A configured merchant, or a registered one (served through the platform), by identifier.
    public func merchant(identifier: String) -> MerchantConfiguration? {
        if let merchant = merchants.first(where: { $0.merchantIdentifier == identifier }) { return merchant }
        guard let platform else { return nil }
        return registered.withLock { state in
            state.merchants.first { $0.partnerIdentifier == identifier }.map {
                Self.configuration(for: $0, platform: platform, settings: state.settings[$0.partnerIdentifier])
            }
        }
    }

    /// Where events addressed to `identifier` go: a merchant's endpoint, or for the platform
    /// integrator's own merchant ID (the guard's reports about registered merchants) its
    /// `platformIntegrator.webhook`. The platform is no merchant otherwise: ``merchant(identifier:)``
    /// does not know it.
    public func webhook(for identifier: String) -> WebhookEndpoint? {
        if let platform, platform.merchantIdentifier == identifier { return platform.webhook }
        return merchant(identifier: identifier)?.webhook
    }

    /// Registered merchants, by partner identifier.
    public var registrations: [RegisteredMerchant] {
        registered.withLock { $0.merchants }
    }

    /// Registered merchants with Wallet orders, as served: partner ID and settings, in registration order.
    var registeredWalletOrders: [(merchantIdentifier: String, settings: WalletOrdersSettings)] {
        registered.withLock { state in
            state.merchants.compactMap { merchant in
                state.settings[merchant.partnerIdentifier]?.walletOrders.map { (merchant.partnerIdentifier, $0) }
            }
        }
    }

    /// Why `identifier` cannot be a registered merchant's on this server (it is a configured
    /// merchant's, or the platform integrator's own), or nil. Compared without case: two tenants
    /// differing only in case would be one merchant to a reader, and to Apple's portal.
    public func reservation(of identifier: String) -> String? {
        let wanted = identifier.lowercased()
        if platform?.merchantIdentifier.lowercased() == wanted { return "the platform integrator's own merchant ID" }
        if merchants.contains(where: { $0.merchantIdentifier.lowercased() == wanted }) {
            return "a merchant configured on this server"
        }
        return nil
    }

    /// Who holds `domain` (a configured merchant ID or a registered partner ID), if anyone.
    public func owner(of domain: String) -> String? {
        if let merchant = configuredByDomain[domain] {
            return merchant.merchantIdentifier
        }
        return registered.withLock { $0.byDomain[domain]?.merchantIdentifier }
    }

    /// Swaps in the registry's current contents (after a registration change).
    public func replaceRegistrations(_ merchants: [RegisteredMerchant]) {
        registered.withLock { Self.apply(merchants, to: &$0, platform: platform, configured: configuredByDomain) }
    }

    private static func apply(
        _ merchants: [RegisteredMerchant], to state: inout Registered, platform: MerchantConfiguration?,
        configured: [String: MerchantConfiguration]
    ) {
        var byDomain: [String: MerchantConfiguration] = [:]
        if let platform {
            for merchant in merchants {
                let serving = Self.configuration(for: merchant, platform: platform, settings: state.settings[merchant.partnerIdentifier])
                for domain in merchant.domains where configured[domain] == nil {
                    byDomain[domain] = serving
                }
            }
        }
        // A merchant no longer registered takes its settings with it: a later registration under
        // the same identifier starts clean, on this instance and on every one that syncs.
        let registered = Set(merchants.map(\.partnerIdentifier))
        state.settings = state.settings.filter { registered.contains($0.key) }
        state.merchants = merchants
        state.byDomain = byDomain
        state.generation += 1
    }

    /// A registered merchant served through the platform: the platform's certificate and
    /// keys, the partner's identifier as `merchantIdentifier`, its name on the sheet, and the
    /// processor and webhook an operator set for it (record only and none until then).
    static func configuration(for merchant: RegisteredMerchant, platform: MerchantConfiguration, settings: MerchantSettings?)
        -> MerchantConfiguration
    {
        var serving = platform
        serving.merchantIdentifier = merchant.partnerIdentifier
        serving.displayName = merchant.name
        serving.domains = merchant.domains
        serving.processor = settings?.processor ?? RecordOnlySettings()
        serving.webhook = settings?.webhook
        serving.quote = settings?.quote
        serving.walletOrders = settings?.walletOrders
        return serving
    }

    /// `Shop.Example:8443` → `shop.example`; `[::1]:80` → `::1`.
    public static func domain(fromHost host: String) -> String? {
        if let domain = lowercaseASCIIDomain(fromHost: host) { return domain }
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return nil }
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.lastIndex(of: ":") {
            guard name[name.index(after: colon)...].allSatisfy(\.isNumber) else { return nil }
            name = name[..<colon]
        }
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        return name.lowercased()
    }

    /// The Host every request carries (lowercase ASCII, maybe `:port`) read byte by byte: this
    /// runs on every request. Nil for anything else, which `domain(fromHost:)` reads in full.
    private static func lowercaseASCIIDomain(fromHost host: String) -> String? {
        let bytes = host.utf8
        guard let first = bytes.first, first != UInt8(ascii: "["),
            bytes.allSatisfy({ $0 < 0x80 && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
        else { return nil }
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")) else {
            return bytes.count <= 253 ? host : nil
        }
        guard bytes[bytes.index(after: colon)...].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        let name = host[..<colon]
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        return String(name)
    }
}

extension PaymentProcessors {
    /// Gives every merchant of `directory` with sealed settings the processor `maker` makes from
    /// them (record-only without a maker). Whoever assembles the application does it once, before
    /// serving; the admin routes and ``RegistrySync`` keep it in step afterwards.
    public func register(_ directory: MerchantDirectory, maker: (any ProcessorMaker)?) {
        for (partner, settings) in directory.settings {
            setRegistered(maker?.processor(for: settings.processor), forMerchant: partner)
        }
    }
}
