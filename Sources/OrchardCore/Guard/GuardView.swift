import Foundation

/// A guard record as the admin API, `orchard guard status` and the guard's webhooks show it.
public struct GuardView: Sendable, Codable, Equatable {
    public var merchantIdentifier: String
    public var check: GuardCheckKind
    public var target: String
    public var state: GuardState
    /// For `expiring`: the warning given (30, 15 or 7 days).
    public var warningDays: Int?
    public var detail: String
    public var expiresAt: Date?
    public var daysLeft: Int?
    public var checkedAt: Date?
    public var firstFailureAt: Date?
    public var changedAt: Date?

    /// `record` as seen at `now` (which gives ``daysLeft``).
    public init(_ record: GuardRecord, at now: Date) {
        merchantIdentifier = record.subject.merchantIdentifier
        check = record.subject.kind
        target = record.subject.target
        state = record.state
        warningDays = record.state == .expiring ? record.stage : nil
        detail = record.detail
        expiresAt = record.expiresAt
        daysLeft = record.expiresAt.map { GuardPolicy.daysLeft(notValidAfter: $0, at: now) }
        checkedAt = record.checkedAt
        firstFailureAt = record.firstFailureAt
        changedAt = record.changedAt
    }
}

extension WebhookEvent {
    /// A new event about a guard record's change, for `recipient` (the merchant the record is
    /// about, or the platform of a registered merchant).
    public static func make(_ type: WebhookEventType, guard record: GuardRecord, recipient: String, at date: Date) throws
        -> WebhookEvent
    {
        let id = "evt_" + RecordIdentifier.random()
        let body = Body(
            id: id, type: type.rawValue, created: date, merchantIdentifier: record.subject.merchantIdentifier,
            data: Body.Data(payment: nil, paymentRequest: nil, refund: nil, mandate: nil, guard: GuardView(record, at: date)))
        return WebhookEvent(
            id: id, merchantIdentifier: recipient, type: type, payload: try PaymentView.encoder.encode(body).asBytes, createdAt: date,
            nextAttemptAt: date)
    }
}
