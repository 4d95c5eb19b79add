import Foundation
import OrchardCore
import WalletOrders

/// Wallet orders for the shared test merchant, made in memory as the loader makes them from files.
public enum TestWalletOrders {
    public static let orderType = "order.dev.orchard.test"
    /// A PNG signature and a few bytes: the package treats the logo as bytes.
    public static let logo: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]

    static let made = Result { try TestMaterial.shared.pki.issueOrderTypeIdentity(orderTypeIdentifier: orderType) }

    /// The identity the test PKI issues for ``orderType``, made once.
    public static func issued() throws -> TestOrderTypeIdentity { try made.get() }

    /// Settings whose web service is `webServiceURL` and whose pushes go to `apns`.
    public static func settings(
        webServiceURL: String = "https://pay.shop.example/wallet-orders", apns: RemoteEndpoint? = nil, at now: Date = Date()
    ) throws -> WalletOrdersSettings {
        let issued = try issued()
        let identity = try OrderTypeIdentity(
            orderTypeIdentifier: orderType, certificate: issued.leaf.certificate, privateKey: issued.leaf.privateKey,
            intermediates: [issued.intermediate.certificate], name: "order-type.pem", at: now)
        return WalletOrdersSettings(
            identity: identity, identitySource: "order-type.pem", webServiceURL: webServiceURL, merchantDisplayName: "Orchard Test Shop",
            merchantURL: "https://shop.example", logoPNG: logo, orderManagementURL: "https://shop.example/orders/{orderNumber}",
            apns: apns
                ?? RemoteEndpoint(
                    baseURL: "https://api.push.apple.com", connectTimeout: .seconds(3), timeout: .seconds(10), isProductionHost: true))
    }
}
