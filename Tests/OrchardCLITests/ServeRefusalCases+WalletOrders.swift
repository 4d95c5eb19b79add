import Foundation

extension RefusalCase {
    /// The demo merchant's `walletOrders`, valid, then changed.
    static func walletOrders(_ name: String, _ change: @escaping @Sendable (inout [String: Any]) -> Void) -> RefusalCase {
        .edit(name) { json, _ in
            var section: [String: Any] = [
                "orderTypeIdentifier": "order.dev.orchard.demo", "identityCertificate": "order-type.pem", "identityKey": "order-type.key",
                "intermediateCertificate": "order-type-wwdr.pem", "webServiceURL": "https://pay.shop.example/wallet-orders",
                "url": "https://shop.example", "orderManagementURL": "https://shop.example/orders/{orderNumber}",
            ]
            change(&section)
            json.merchant["walletOrders"] = section
        }
    }

    static let walletOrdersCases: [RefusalCase] = [
        .edit("an Order Type ID certificate as the merchant identity") { json, _ in
            json.merchant["identityCertificate"] = "order-type.pem"
            json.merchant["identityKey"] = "order-type.key"
        },
        walletOrders("walletOrders.orderTypeIdentifier with a space") { $0["orderTypeIdentifier"] = "order dev" },
        walletOrders("walletOrders.orderTypeIdentifier of another type") { $0["orderTypeIdentifier"] = "order.dev.other" },
        walletOrders("walletOrders.webServiceURL over http") { $0["webServiceURL"] = "http://pay.shop.example/wallet-orders" },
        walletOrders("walletOrders.webServiceURL under /v1") { $0["webServiceURL"] = "https://pay.shop.example/v1/wallet" },
        walletOrders("walletOrders with an expired certificate") {
            $0["identityCertificate"] = "order-type-expired.pem"
            $0["identityKey"] = "order-type-expired.key"
            $0["intermediateCertificate"] = "order-type-expired-wwdr.pem"
        },
        walletOrders("walletOrders.logo not a PNG") { $0["logo"] = "logo.txt" },
        walletOrders("walletOrders.apns.baseURL with a path") { $0["apns"] = ["baseURL": "https://api.push.apple.com/3"] },
        walletOrders("walletOrders.apns.baseURL a test host") { $0["apns"] = ["baseURL": "https://127.0.0.1:9443"] },
        walletOrders("walletOrders.apns.caFile with no PEM") { $0["apns"] = ["caFile": "junk.pem"] },
        walletOrders("walletOrders.apns.tokenKey without keyId") { $0["apns"] = ["tokenKey": "junk.pem", "teamId": "TEAM123456"] },
        walletOrders("walletOrders.apns.keyId in lower case") {
            $0["apns"] = ["tokenKey": "junk.pem", "keyId": "abc123defg", "teamId": "TEAM123456"]
        },
        walletOrders("walletOrders.apns.tokenKey not a key") {
            $0["apns"] = ["tokenKey": "junk.pem", "keyId": "ABC123DEFG", "teamId": "TEAM123456"]
        },
        .edit("two merchants with one Order Type ID") { json, _ in
            let section: [String: Any] = [
                "orderTypeIdentifier": "order.dev.orchard.demo", "identityCertificate": "order-type.pem", "identityKey": "order-type.key",
                "intermediateCertificate": "order-type-wwdr.pem", "webServiceURL": "https://pay.shop.example/wallet-orders",
                "url": "https://shop.example", "orderManagementURL": "https://shop.example/orders/{orderNumber}",
            ]
            json.merchant["walletOrders"] = section
            var second = json.merchant.fields
            second["merchantIdentifier"] = "merchant.dev.orchard.second"
            second["domains"] = ["second.example"]
            second["catalogue"] = nil
            second["processingKeys"] = nil
            second["webhook"] = nil
            json["merchants"] = [json.merchant.fields, second]
        },
    ]
}
