import ApplePay
import Foundation

/// What retiring a registered merchant leaves in the outbox.
public enum RetiredTenant {
    /// The error recorded on a webhook event its tenant was unregistered before it was delivered.
    public static let skippedEventError = "the merchant was unregistered before this event was delivered"

    /// The tables whose `merchant` column a retirement moves to ``recordKey(for:)``: what the
    /// tenant owned. Payments and refunds belong to their orders.
    public static let ownedTables = ["orders", "payment_requests", "mandates", "api_keys", "webhook_events", "token_events"]

    /// The owner a retired tenant's records move to, in the retirement's own transaction:
    /// `retired/<partner>/<16 hex digits>`. No partner ID can be it (their alphabet has no `/`),
    /// nor can a merchant ID, so a later registration under the same identifier owns none of the
    /// old records (its checks compare the owner) and hears of none of them; and each retirement
    /// gets its own.
    public static func recordKey(for partner: String) -> String {
        "retired/\(partner)/\(RecordIdentifier.random().prefix(16))"
    }

    /// Whether `owner` is a retirement's ``recordKey(for:)``: records of a tenant that has gone.
    /// A mandate such an owner holds can be charged by no one, so it must not stay active.
    public static func isRecordKey(_ owner: String) -> Bool {
        owner.hasPrefix("retired/")
    }
}
