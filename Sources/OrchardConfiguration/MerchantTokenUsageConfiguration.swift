import Foundation
import OrchardCore

extension ConfigurationFile {
    /// `merchants[].merchantTokenUsage`: merchant token usage information, off when absent.
    public struct MerchantTokenUsage: Codable, Sendable {
        /// The public URL the shopper's device fetches from; its path ends in `/apple-pay/merchant-token-usage`.
        public var webServiceURL: String
        /// The name Wallet shows (default: the merchant's `displayName`).
        public var merchantName: String?
        /// The most characters of sealed `data` a package may have (default and most Apple takes: 4000).
        public var maximumDataCharacters: Int?
        /// How many days an announced package stays valid (default 90, at most 365).
        public var validityDays: Int?
        /// A PNG logo to put in each package; none by default (packages stay small).
        public var logo: String?
        /// How many upcoming charges a recurring mandate lists (default 3, 1–12).
        public var scheduledPayments: Int?

        public init(webServiceURL: String) {
            self.webServiceURL = webServiceURL
        }
    }
}

extension ServerConfiguration {
    /// `merchants[].merchantTokenUsage`, checked whole at startup.
    static func resolveMerchantTokenUsage(
        _ file: ConfigurationFile.MerchantTokenUsage?, merchantDisplayName: String, label: String, values: any ConfigurationReader
    ) throws(ConfigurationError) -> MerchantTokenUsageSettings? {
        guard let file else { return nil }
        let section = "\(label).merchantTokenUsage"
        let url = file.webServiceURL.trimmingSuffix("/")
        if let problem = WalletOrdersSettings.checkPublicURL(url) {
            throw ConfigurationError(
                "\(section).webServiceURL \(problem.replacingOccurrences(of: "/wallet-orders", with: MerchantTokenUsageSettings.servicePath))"
            )
        }
        guard (URLComponents(string: url)?.path ?? "").hasSuffix(MerchantTokenUsageSettings.servicePath) else {
            throw ConfigurationError(
                "\(section).webServiceURL must end in \(MerchantTokenUsageSettings.servicePath), where Orchard answers the shopper's device (like https://pay.shop.example\(MerchantTokenUsageSettings.servicePath))"
            )
        }
        let limit = file.maximumDataCharacters ?? MerchantTokenUsageSettings.appleDataLimit
        guard (1000...MerchantTokenUsageSettings.appleDataLimit).contains(limit) else {
            throw ConfigurationError("\(section).maximumDataCharacters must be 1000–4000: Apple takes at most 4000")
        }
        let days = file.validityDays ?? 90
        guard (2...365).contains(days) else {
            throw ConfigurationError("\(section).validityDays must be 2–365: Apple takes an expirationDate at most a year ahead")
        }
        let scheduled = file.scheduledPayments ?? 3
        guard (1...12).contains(scheduled) else { throw ConfigurationError("\(section).scheduledPayments must be 1–12") }
        let name = file.merchantName ?? merchantDisplayName
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 64 else {
            throw ConfigurationError("\(section).merchantName must be 1–64 characters")
        }
        let logo = try file.logo.map { logo throws(ConfigurationError) in
            let bytes = try values.read(logo, what: "\(section).logo")
            guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count <= 2048 else {
                throw ConfigurationError(
                    "\(values.describe(logo)): \(section).logo must be a PNG file of at most 2 KB, or the package outgrows Apple's 4000 characters"
                )
            }
            return bytes
        }
        return MerchantTokenUsageSettings(
            webServiceURL: url, merchantName: name, maximumDataCharacters: limit, validity: TimeInterval(days) * 86_400, logoPNG: logo,
            scheduledPayments: scheduled)
    }
}
