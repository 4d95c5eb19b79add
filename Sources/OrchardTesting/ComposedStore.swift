import OrchardCore

/// An ``OrchardStore`` made of one value per repository, each the base store's unless a test
/// puts a decorator of that one repository in its place (payments whose moves fail, say): what
/// a server or an engine under test is given instead of the store itself.
public final class ComposedStore: OrchardStore, ForwardingOrderPayments, ForwardingRefunds, ForwardingMandateRecords,
    ForwardingPaymentRequests, ForwardingAPIKeys, ForwardingWebhookOutbox, ForwardingTokenEventInbox, ForwardingMerchantRegistry,
    ForwardingGuardRecords, ForwardingRecordPurging, ForwardingOperationalCounting
{
    public let base: any OrchardStore
    public let orderPaymentsTarget: any OrderPayments
    public let refundsTarget: any Refunds
    public var mandateRecordsTarget: any MandateRecords { base }
    public var paymentRequestsTarget: any PaymentRequests { base }
    public var apiKeysTarget: any APIKeys { base }
    public var webhookOutboxTarget: any WebhookOutbox { base }
    public var tokenEventInboxTarget: any TokenEventInbox { base }
    public var merchantRegistryTarget: any MerchantRegistry { base }
    public var guardRecordsTarget: any GuardRecords { base }
    public var recordPurgingTarget: any RecordPurging { base }
    public var operationalCountingTarget: any OperationalCounting { base }

    /// `base`, with the given repositories in place of its own.
    public init(_ base: any OrchardStore, orderPayments: (any OrderPayments)? = nil, refunds: (any Refunds)? = nil) {
        self.base = base
        orderPaymentsTarget = orderPayments ?? base
        refundsTarget = refunds ?? base
    }
}
