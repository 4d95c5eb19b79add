import ApplePay
import Foundation

/// Orchard's own capture of the payments of a payment request created with
/// `capture: "automatic"`: the one place that says when it is owed, when a refused one is tried
/// again and when Orchard gives up. Stores only write what these decide.
public enum AutomaticCapture {
    /// Refusals after which Orchard stops (the due mark is cleared and `payment.capture_failed`
    /// written); the shop can still capture or cancel.
    public static let maximumRefusals = 5
    /// The wait after the first refusal; it doubles after each (1, 2, 4, 8 minutes).
    public static let firstRetryDelay: TimeInterval = 60

    /// When the capture of a payment that `move` leaves in its state is due: at once for a move
    /// to `authorized` of an automatic order's payment; nil for every other move, which clears
    /// any mark the payment had.
    public static func dueAt(after move: PaymentLifecycle.Move, capture: CaptureMode?, now: Date) -> Date? {
        move.to == .authorized && capture == .automatic ? now : nil
    }

    /// When a capture refused `refusals` times (this one included) is tried again; nil: give up.
    public static func retry(afterRefusals refusals: Int, now: Date) -> Date? {
        guard refusals < maximumRefusals else { return nil }
        return now.addingTimeInterval(firstRetryDelay * pow(2, Double(max(0, min(refusals, 30) - 1))))
    }
}

/// A refused automatic capture, for ``OrderPayments/recordCaptureRefusal(_:)``.
public struct CaptureRefusal: Sendable, Equatable {
    public var paymentId: String
    /// The refusals recorded before this one: the compare-and-set's expected count.
    public var refusalsBefore: Int
    /// When it is tried again; nil: Orchard gives up, clearing the mark and writing
    /// `payment.capture_failed` in the same transaction.
    public var nextAttemptAt: Date?
    public var at: Date

    public init(paymentId: String, refusalsBefore: Int, nextAttemptAt: Date?, at: Date) {
        self.paymentId = paymentId
        self.refusalsBefore = refusalsBefore
        self.nextAttemptAt = nextAttemptAt
        self.at = at
    }

    /// `payment` as the refusal leaves it: what every store writes and the event reports.
    public func applied(to payment: PaymentRecord, stored: (Date) -> Date = { $0 }) -> PaymentRecord {
        var refused = payment
        refused.captureAttempts = refusalsBefore + 1
        refused.captureDueAt = nextAttemptAt.map(stored)
        return refused
    }

    /// The event the refusal writes: `payment.capture_failed` when Orchard gives up, else none.
    public var event: WebhookEventType? { nextAttemptAt == nil ? .paymentCaptureFailed : nil }
}
