import Foundation

extension RefusalCase {
    /// The demo merchant's `merchantTokenUsage`, valid, then changed.
    static func merchantTokenUsage(_ name: String, _ change: @escaping @Sendable (inout [String: Any]) -> Void) -> RefusalCase {
        .edit(name) { json, _ in
            var section: [String: Any] = ["webServiceURL": "https://pay.shop.example/apple-pay/merchant-token-usage"]
            change(&section)
            json.merchant["merchantTokenUsage"] = section
        }
    }

    static let merchantTokenUsageCases: [RefusalCase] = [
        merchantTokenUsage("merchantTokenUsage.webServiceURL over http") {
            $0["webServiceURL"] = "http://pay.shop.example/apple-pay/merchant-token-usage"
        },
        merchantTokenUsage("merchantTokenUsage.webServiceURL on another path") { $0["webServiceURL"] = "https://pay.shop.example/usage" },
        merchantTokenUsage("merchantTokenUsage.maximumDataCharacters above Apple's 4000") { $0["maximumDataCharacters"] = 5000 },
        merchantTokenUsage("merchantTokenUsage.validityDays above a year") { $0["validityDays"] = 400 },
        merchantTokenUsage("merchantTokenUsage.scheduledPayments of 0") { $0["scheduledPayments"] = 0 },
        merchantTokenUsage("merchantTokenUsage.merchantName empty") { $0["merchantName"] = " " },
        merchantTokenUsage("merchantTokenUsage.logo not a PNG") { $0["logo"] = "logo.txt" },
    ]
}
