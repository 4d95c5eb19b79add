/// One value per repository: what the composition root hands its consumers, each taking the
/// fields it uses. Built from one store, every field is that store; a test puts a decorator of
/// one repository in its field (payments whose moves fail, say) and leaves the others alone,
/// as SwiftPackageIndex-Server's dependencies are overridden one at a time.
public struct Repositories: Sendable {
    /// Orders and their payments.
    public var orderPayments: any OrderPayments
    /// Payments' refunds.
    public var refunds: any Refunds
    /// Stored credentials (mandates) and their lifecycle.
    public var mandates: any MandateRecords
    /// Payment requests, and the orders they open and expire.
    public var paymentRequests: any PaymentRequests
    /// Merchants' API keys.
    public var apiKeys: any APIKeys
    /// Webhook events waiting to be, or already, delivered.
    public var webhookOutbox: any WebhookOutbox
    /// Apple's token notifications, queued for fetching.
    public var tokenEventInbox: any TokenEventInbox
    /// Merchants registered through the admin API, and their sealed settings.
    public var merchantRegistry: any MerchantRegistry
    /// The guard's subjects and checks.
    public var guardRecords: any GuardRecords
    /// The retention purge.
    public var purging: any RecordPurging
    /// The operational counts and the store's availability check.
    public var counting: any OperationalCounting
    /// Wallet orders, with the orders, payments, refunds and payment requests they are built from.
    public var walletOrders: any WalletOrderService.Store
    /// Merchants' usage keys and their tokens' usage announcements.
    public var merchantTokenUsage: any MerchantTokenUsageRecords

    /// Every repository from `store`.
    public init(_ store: some OrchardStore) {
        orderPayments = store
        refunds = store
        mandates = store
        paymentRequests = store
        apiKeys = store
        webhookOutbox = store
        tokenEventInbox = store
        merchantRegistry = store
        guardRecords = store
        purging = store
        counting = store
        walletOrders = store
        merchantTokenUsage = store
    }
}
