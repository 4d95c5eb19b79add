import OrchardCore
import ServiceLifecycle

/// What the routes and the loops beside them share, made once by the composition root: the
/// payments engine, the mandate lifecycle, the webhook dispatcher and the token-event fetcher,
/// and the loops the server runs in its lifetime.
public struct ServerServices: Sendable {
    public var engine: PaymentsEngine
    public var mandates: MandateLifecycle
    /// Delivers the outbox in the background; a retirement sends a leaving tenant's last events
    /// through it. Nil: events are kept, not sent.
    public var webhooks: WebhookDispatcher?
    /// Fetches Apple's token events in the background; nil where Apple cannot be asked.
    public var tokenEvents: TokenEventFetcher?
    /// Expiry, reconciliation, purges, the guard, registry sync, gauges, webhooks, token events:
    /// run beside the server and stopped with it.
    public var background: [any Service]

    public init(
        engine: PaymentsEngine, mandates: MandateLifecycle, webhooks: WebhookDispatcher?, tokenEvents: TokenEventFetcher?,
        background: [any Service]
    ) {
        self.engine = engine
        self.mandates = mandates
        self.webhooks = webhooks
        self.tokenEvents = tokenEvents
        self.background = background
    }
}
