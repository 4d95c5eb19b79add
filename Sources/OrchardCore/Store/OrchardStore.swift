import ApplePay
import Foundation

/// Durable orders and payments. SQLite is the embedded default; PostgreSQL serves several
/// instances sharing one database.
///
/// Several instances: every state move is a compare-and-set in one transaction, so two
/// instances never both apply the same move. Background work (re-sending unknown payments and
/// refunds, delivering webhooks) is taken with a lease: one transaction picks the due items and
/// pushes them out of sight until the lease ends, so each is worked by one instance at a time;
/// an instance that dies lets its leases run out and another takes the items over (webhooks
/// are thus delivered at least once, under the same event ID). Instances' clocks must agree
/// (NTP): leases, staleness and expiry compare times each instance writes.
///
/// The store is the composition of one small repository per aggregate; a consumer holds only
/// the ones it uses, and only the composition root (which opens the store and closes it) holds
/// the whole.
public protocol OrchardStore: OrderPayments, Refunds, MandateRecords, PaymentRequests, APIKeys, WebhookOutbox, TokenEventInbox,
    MerchantRegistry, GuardRecords, WalletOrderRecords, MerchantTokenUsageRecords, RecordPurging, OperationalCounting
{}
