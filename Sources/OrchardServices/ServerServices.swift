import OrchardCore
import ServiceLifecycle

/// Every service the routes and the loops beside them use, made once by the composition root
/// (`OrchardComposition`): the routes are handed them and only wire them.
public struct ServerServices: Sendable {
    public var engine: PaymentsEngine
    public var mandates: MandateLifecycle
    /// Orders priced from the catalogue (or the shop's quote URL) and their payment requests.
    public var orders: OrderService
    /// The payments API's payment requests.
    public var paymentRequests: PaymentRequestService
    /// Charges of a stored mandate through the payments API.
    public var mandateCharges: MandateChargeService
    /// The admin API's registered merchants: registration at Apple, settings, retirement.
    public var registry: MerchantRegistryService
    /// Delivers the outbox in the background; a retirement sends a leaving tenant's last events
    /// through it. Nil: events are kept, not sent.
    public var webhooks: WebhookDispatcher?
    /// Fetches Apple's token events in the background; nil where Apple cannot be asked.
    public var tokenEvents: TokenEventFetcher?
    /// Wallet orders: made at authorization, changed by fulfilments, refunds and cancellations.
    public var walletOrders: WalletOrderService?
    /// Merchant token usage information: announced to Apple, served to the shopper's device.
    public var merchantTokenUsage: MerchantTokenUsageService?
    /// Expiry, reconciliation, purges, the guard, registry sync, gauges, webhooks, token events:
    /// run beside the server and stopped with it.
    public var background: [any Service]

    public init(
        engine: PaymentsEngine, mandates: MandateLifecycle, orders: OrderService, paymentRequests: PaymentRequestService,
        mandateCharges: MandateChargeService, registry: MerchantRegistryService, webhooks: WebhookDispatcher?,
        tokenEvents: TokenEventFetcher?, background: [any Service], walletOrders: WalletOrderService? = nil,
        merchantTokenUsage: MerchantTokenUsageService? = nil
    ) {
        self.walletOrders = walletOrders
        self.merchantTokenUsage = merchantTokenUsage
        self.engine = engine
        self.mandates = mandates
        self.orders = orders
        self.paymentRequests = paymentRequests
        self.mandateCharges = mandateCharges
        self.registry = registry
        self.webhooks = webhooks
        self.tokenEvents = tokenEvents
        self.background = background
    }
}
