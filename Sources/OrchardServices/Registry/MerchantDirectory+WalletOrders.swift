import OrchardCore

/// Wallet orders are offered by configured merchants with `walletOrders`, and by registered
/// merchants whose settings have them; each order type is one merchant's (the configuration
/// refuses a type named twice, the admin API a type another merchant has), configured ones first.
extension MerchantDirectory: WalletOrderMerchants {
    public func walletOrders(of merchantIdentifier: String) -> WalletOrdersSettings? {
        merchant(identifier: merchantIdentifier)?.walletOrders
    }

    public func walletOrderMerchant(orderTypeIdentifier: String) -> (merchantIdentifier: String, settings: WalletOrdersSettings)? {
        for merchant in merchants {
            if let settings = merchant.walletOrders, settings.orderTypeIdentifier == orderTypeIdentifier {
                return (merchant.merchantIdentifier, settings)
            }
        }
        return registeredWalletOrders.first { $0.settings.orderTypeIdentifier == orderTypeIdentifier }
    }

    public func walletOrderTypeOwner(_ orderTypeIdentifier: String) -> String? {
        walletOrderMerchant(orderTypeIdentifier: orderTypeIdentifier)?.merchantIdentifier
    }
}
