import ApplePay
import Foundation

/// `merchants[].merchantTokenUsage`: the merchant announces each merchant token's usage
/// information to Apple, and Wallet shows the shopper the token's past and upcoming payments,
/// fetched from Orchard. Absent: nothing is announced and the device route knows no token.
public struct MerchantTokenUsageSettings: Sendable, Equatable {
    /// The path every merchant's device calls come under (after any prefix a proxy adds):
    /// `{webServiceURL}/v1/merchantToken/{id}/usageInformation`.
    public static let servicePath = "/apple-pay/merchant-token-usage"
    /// Apple's limit on the sealed `data`, in characters (base64).
    public static let appleDataLimit = 4000

    /// The public URL the device fetches from: https, its path ending in ``servicePath``.
    public var webServiceURL: String
    /// The name Wallet shows (default: the merchant's display name).
    public var merchantName: String
    /// The most characters the sealed package's `data` may have; more past payments are left out
    /// (oldest first) to stay within it.
    public var maximumDataCharacters: Int
    /// How long an announced package stays valid in Wallet (`expirationDate`); Orchard announces
    /// again before it runs out. At most a year.
    public var validity: TimeInterval
    /// A PNG logo put in the package (`merchantLogoName`); nil: none (the default, packages stay small).
    public var logoPNG: [UInt8]?
    /// How many upcoming scheduled payments a recurring mandate lists.
    public var scheduledPayments: Int

    public init(
        webServiceURL: String, merchantName: String, maximumDataCharacters: Int = appleDataLimit, validity: TimeInterval = 90 * 86_400,
        logoPNG: [UInt8]? = nil, scheduledPayments: Int = 3
    ) {
        self.webServiceURL = webServiceURL
        self.merchantName = merchantName
        self.maximumDataCharacters = maximumDataCharacters
        self.validity = validity
        self.logoPNG = logoPNG
        self.scheduledPayments = scheduledPayments
    }

    /// Where Apple sends this merchant's token notifications, on the same origin and prefix as
    /// `webServiceURL`: what `updateMerchantMetadata` tells Apple when it has none (a 409).
    public func tokenNotificationURL(merchantIdentifier: String) -> String? {
        guard webServiceURL.hasSuffix(Self.servicePath),
            let segment = merchantIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved)
        else { return nil }
        return String(webServiceURL.dropLast(Self.servicePath.count)) + "/apple-pay/token-events/" + segment
    }
}
