import OrchardCore

/// Wallet orders are offered by configured merchants with `walletOrders`; each order type is one
/// merchant's (the configuration refuses a type named twice).
extension MerchantDirectory: WalletOrderMerchants {
    public func walletOrders(of merchantIdentifier: String) -> WalletOrdersSettings? {
        merchants.first { $0.merchantIdentifier == merchantIdentifier }?.walletOrders
    }

    public func walletOrderMerchant(orderTypeIdentifier: String) -> (merchantIdentifier: String, settings: WalletOrdersSettings)? {
        for merchant in merchants {
            if let settings = merchant.walletOrders, settings.orderTypeIdentifier == orderTypeIdentifier {
                return (merchant.merchantIdentifier, settings)
            }
        }
        return nil
    }
}
