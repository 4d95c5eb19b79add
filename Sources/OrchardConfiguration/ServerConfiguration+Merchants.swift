import ApplePay
import Foundation
import OrchardCore
import OrchardServices

extension ServerConfiguration {
    /// `merchants`: at least one; every domain belongs to one merchant.
    static func resolveMerchants(
        _ files: [ConfigurationFile.Merchant], values: ConfigurationValues, time: TimeSource, processors: [any ProcessorDriver]
    ) throws(ConfigurationError) -> [MerchantConfiguration] {
        guard !files.isEmpty else { throw ConfigurationError("merchants: at least one merchant is required") }
        var seenDomains: [String: String] = [:]
        var merchants: [MerchantConfiguration] = []
        for (index, merchant) in files.enumerated() {
            let label = "merchants[\(index)] (\(merchant.merchantIdentifier))"
            let resolved = try resolveMerchant(merchant, label: label, values: values, time: time, processors: processors)
            for domain in resolved.domains {
                if let other = seenDomains[domain] {
                    throw ConfigurationError("\(label): domain \(domain) is already configured for \(other)")
                }
                seenDomains[domain] = merchant.merchantIdentifier
            }
            if let type = resolved.walletOrders?.orderTypeIdentifier,
                let other = merchants.first(where: { $0.walletOrders?.orderTypeIdentifier == type })
            {
                throw ConfigurationError(
                    "\(label).walletOrders: the Order Type ID \(type) is already \(other.merchantIdentifier)'s; each merchant needs its own"
                )
            }
            merchants.append(resolved)
        }
        return merchants
    }

    /// One merchant: its name, domains, identity, association file, catalogue, keys and processor.
    static func resolveMerchant(
        _ merchant: ConfigurationFile.Merchant, label: String, values: ConfigurationValues, time: TimeSource,
        processors: [any ProcessorDriver]
    ) throws(ConfigurationError) -> MerchantConfiguration {
        do {
            _ = try MerchantSessionRequest(merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, domain: "x")
        } catch {
            throw ConfigurationError("\(label): \(error.message)")
        }
        guard !merchant.domains.isEmpty else { throw ConfigurationError("\(label): domains must not be empty") }
        var domains: [String] = []
        for domain in merchant.domains {
            let lowered = domain.lowercased()
            guard DomainName.isValid(lowered) else { throw ConfigurationError("\(label): \(domain) is not a valid domain name") }
            domains.append(lowered)
        }
        let identityFiles = IdentityFiles(
            pkcs12: merchant.identity, certificate: merchant.identityCertificate, key: merchant.identityKey,
            keyPassword: merchant.identityKeyPassword, section: "")
        let identity = try loadIdentity(identityFiles, values: values, time: time)
        let association = try merchant.domainAssociationFile.map { file throws(ConfigurationError) in
            try values.read(file, what: "domainAssociationFile")
        }
        let catalogue = try merchant.catalogue.map { file throws(ConfigurationError) in try loadCatalogue(file, values: values) }
        let keys = try loadProcessingKeys(
            merchant.processingKeys ?? [], merchantIdentifier: merchant.merchantIdentifier, source: values, time: time)
        let processor = try resolveProcessor(merchant.processor, label: label, values: values, drivers: processors)
        for (index, key) in keys.enumerated() {
            if let refusal = ProcessingKeyRules.refusal(key, label: "\(label).processingKeys[\(index)]", processor: processor) {
                throw ConfigurationError(refusal)
            }
        }
        if catalogue != nil && keys.isEmpty {
            throw ConfigurationError("\(label): a merchant with a catalogue needs processingKeys to decrypt payments")
        }
        return MerchantConfiguration(
            merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, domains: domains, identity: identity,
            identitySource: identityFiles.source(values), domainAssociation: association, catalogue: catalogue,
            processingKeys: keys, processor: processor,
            webhook: try resolveWebhook(merchant.webhook, label: "\(label).webhook", values: values),
            quote: try resolveWebhook(merchant.quote, label: "\(label).quote", values: values),
            walletOrders: try resolveWalletOrders(
                merchant.walletOrders, merchantDisplayName: merchant.displayName, label: label, values: values, time: time),
            merchantTokenUsage: try resolveMerchantTokenUsage(
                merchant.merchantTokenUsage, merchantDisplayName: merchant.displayName, label: label, values: values),
            googlePay: try resolveGooglePay(
                merchant.googlePay, merchantDisplayName: merchant.displayName, processor: processor, label: label, values: values))
    }
}
