import ApplePay
import Foundation
import Logging

/// Automatic capture (``AutomaticCapture``): every authorized payment whose capture is due is
/// settled through the same path as the shop's `/capture` (the operation's lease, then the
/// processor, then the move), so a manual capture or cancel meanwhile makes it one call.
extension PaymentsEngine {
    /// What one capture pass did.
    public struct CaptureReport: Sendable, Equatable {
        /// Payments captured (settled).
        public var captured = 0
        /// Captures the processor refused, to be tried again later.
        public var refused = 0
        /// Payments Orchard stopped capturing (`payment.capture_failed` written).
        public var gaveUp = 0
        /// Payments left for now: another capture or cancel held them, or they moved meanwhile.
        public var skipped = 0

        public init() {}
    }

    /// Captures every authorized payment whose automatic capture is due, oldest due first, one
    /// at a time: each is leased (its due time moves past the operation's lease) before it is
    /// tried, so another instance passes it by, and a capture this one does not finish (the
    /// process stopped) is due again when the lease ends.
    public func captureDue(limit: Int = 50) async -> CaptureReport {
        var report = CaptureReport()
        for _ in 0..<limit {
            let now = time.now
            let payment: PaymentRecord
            do {
                let leased = try await orderPayments.leasePaymentsForCapture(
                    at: now, until: now.addingTimeInterval(policy.operationLease), limit: 1)
                guard let first = leased.first else { break }
                payment = first
            } catch {
                logger.error("cannot list payments due for capture", metadata: ["error": "\(error)"])
                break
            }
            switch await captureAutomatically(payment) {
            case .captured: report.captured += 1
            case .refused: report.refused += 1
            case .gaveUp: report.gaveUp += 1
            case .skipped: report.skipped += 1
            }
        }
        return report
    }

    enum CaptureResult { case captured, refused, gaveUp, skipped }

    /// One automatic capture of a leased payment. A refusal (or anything else that stops it
    /// while the payment is still authorized) is recorded by compare-and-set: tried again later,
    /// or given up with `payment.capture_failed`; a payment another call holds is left as leased.
    private func captureAutomatically(_ payment: PaymentRecord) async -> CaptureResult {
        let failure: CoreError
        do {
            switch try await attempt(.settle, on: payment) {
            case .done:
                logger.info("payment captured automatically", metadata: ["payment": "\(payment.id)"])
                return .captured
            case .busy: return .skipped
            }
        } catch {
            failure = error
        }
        guard failure.code != .paymentUnknown else {
            // No definite answer: not a refusal (the capture may have been made). Nothing is
            // counted or given up; the lease ends and the pass tries the same capture again.
            logger.warning(
                "an automatic capture got no definite answer; it is tried again when its lease ends",
                metadata: ["payment": "\(payment.id)", "reason": "\(failure.message)"])
            return .skipped
        }
        let now = time.now
        let refusals = payment.captureAttempts + 1
        let refusal = CaptureRefusal(
            paymentId: payment.id, refusalsBefore: payment.captureAttempts,
            nextAttemptAt: AutomaticCapture.retry(afterRefusals: refusals, now: now), at: now)
        let recorded: PaymentRecord?
        do {
            recorded = try await orderPayments.recordCaptureRefusal(refusal)
        } catch {
            // Still due at the lease's end: tried again then.
            logger.error("cannot record a refused automatic capture", metadata: ["payment": "\(payment.id)", "error": "\(error)"])
            return .skipped
        }
        guard recorded != nil else { return .skipped }
        let metadata: Logger.Metadata = [
            "payment": "\(payment.id)", "refusals": "\(refusals)", "reason": "\(failure.message)",
        ]
        guard refusal.nextAttemptAt != nil else {
            logger.error(
                "Orchard stopped capturing a payment automatically: payment.capture_failed sent; it stays authorized for the shop",
                metadata: metadata)
            return .gaveUp
        }
        logger.warning("an automatic capture was refused; it is tried again later", metadata: metadata)
        return .refused
    }
}
