import ApplePay
import Foundation
import NIOCore
import OrchardCore
import PostgresNIO

/// A payment's move in two round trips and no transaction: one statement reads the payment (and
/// what its webhook event shows), Swift builds the moved payment and its events, and one statement
/// moves the order and the payment by compare-and-set and, only if both moved, inserts the events
/// and the mandate. The read is needed because ``PaymentTransition`` names the payment but does
/// not carry it, and the event reports the whole moved payment.
extension PostgresStore {
    /// How often a move reads and writes when the payment changes between the two while it stays
    /// in the move's state; then the move reports a conflict (nil), as one that lost does.
    static let transitionAttempts = 3

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        guard change.move.from != nil else { preconditionFailure("a new payment is claimed, not moved") }
        for _ in 1...Self.transitionAttempts {
            guard let read = try await moveSnapshot(change) else { return nil }
            do {
                return try await write(change, read: read)
            } catch let error as PSQLError where Self.isPartialMove(error) {
                continue
            } catch {
                throw Self.storeError(error)
            }
        }
        return nil
    }

    /// The payment as it stands, with what its event shows; nil when it is not in the move's
    /// states (or not sent as often as the engine saw), as the compare-and-set would find.
    private func moveSnapshot(_ change: PaymentTransition) async throws -> MoveSnapshot? {
        let row = try await rows(
            """
            SELECT \(unescaped: Self.qualified(Self.paymentColumns, by: "p")), o.state AS order_state, o.merchant AS order_merchant,
            r.id AS r_id, r.merchant AS r_merchant, r.reference AS r_reference, r.metadata AS r_metadata, r.cart AS r_cart,
            r.idempotency_key AS r_idempotency_key, r.fingerprint AS r_fingerprint, r.expires_at AS r_expires_at,
            r.created_at AS r_created_at,
            (SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE payment_id = p.id AND state = 'refunded')::bigint AS refunded
            FROM payments p JOIN orders o ON o.id = p.order_id LEFT JOIN payment_requests r ON r.id = p.order_id
            WHERE p.id = \(change.paymentId) AND p.order_id = \(change.orderId)
            """
        ).first
        guard let row else { return nil }
        let payment = try Self.payment(row)
        guard payment.state == change.move.from, try row.text("order_state") == change.move.order.from.rawValue,
            change.expectedSends.map({ $0 == payment.sends }) ?? true
        else { return nil }
        let request =
            try row.optionalText("r_id") == nil
            ? nil
            : PaymentRequestRecord(
                id: try row.text("r_id"), merchantIdentifier: try row.text("r_merchant"), reference: try row.text("r_reference"),
                metadata: try Self.decode([String: String].self, try row.text("r_metadata")),
                cart: try Self.decode(ShopCart.self, try row.text("r_cart")), idempotencyKey: try row.text("r_idempotency_key"),
                fingerprint: try row.bytes("r_fingerprint"), expiresAt: try row.date("r_expires_at"),
                createdAt: try row.date("r_created_at"))
        return MoveSnapshot(
            payment: payment, links: try row.text("links"), merchant: try row.text("order_merchant"), request: request,
            refunded: try row.integer("refunded"))
    }

    /// What ``moveSnapshot(_:)`` read.
    private struct MoveSnapshot {
        var payment: PaymentRecord
        /// The payment's links as stored, compared as text.
        var links: String
        var merchant: String
        var request: PaymentRequestRecord?
        var refunded: Int64
    }

    /// The move in one statement; nil when the order was not in the move's state. The order's
    /// compare-and-set runs first (the payment's waits for it, as an InitPlan), so claims, which
    /// write the order first too, never deadlock with a move. The payment's compare-and-set
    /// requires every column the events report (or decide on) and the move keeps from `read`
    /// unchanged, so the row written is the one the events report; if one changed, the statement
    /// fails as a whole (``partialGuard``) and the move reads again. Times are written as given
    /// (a time read back and bound again may move by a microsecond), never compared.
    private func write(_ change: PaymentTransition, read: MoveSnapshot) async throws -> PaymentRecord? {
        let old = read.payment
        let moved = change.applied(to: old, stored: Self.stored)
        let newLinks = try (change.links ?? change.outcome?.links).map(Self.json)
        let event = try PaymentLifecycle.reportedEvent(change.move, moved: moved).map {
            try WebhookEvent.make(
                $0, merchantIdentifier: read.merchant, payment: moved, request: read.request,
                refunded: moved.state == .settled ? read.refunded : 0, at: change.at)
        }
        let mandate = change.mandate
        let mandateEvent = try mandate.map { try WebhookEvent.make(.mandateCreated, mandate: $0, payment: moved, at: $0.createdAt) }
        let credential = try mandate.map { try Self.json($0.credential) }
        let mandateMetadata = try mandate?.merchantTokenMetadata.map(Self.json)
        let query: PostgresQuery = """
            WITH moved_order AS (
                UPDATE orders SET state = \(change.move.order.to.rawValue)
                WHERE id = \(change.orderId) AND state = \(change.move.order.from.rawValue) RETURNING id),
            attempt AS (
                UPDATE payments SET state = \(moved.state.rawValue), updated_at = \(change.at), operation_until = NULL,
                processor_reference = \(moved.processorReference), processor_code = \(moved.processorCode),
                processor_message = \(moved.processorMessage), links = \(newLinks ?? read.links), sends = \(Int64(moved.sends)),
                reconcile_attempts = \(Int64(moved.reconcileAttempts)), next_reconcile_at = \(change.nextReconcileAt),
                mandate_id = \(moved.mandateId),
                last_sent_at = CASE WHEN \(change.expectedSends != nil) THEN \(change.at) ELSE last_sent_at END,
                retry_payload = CASE WHEN \(PaymentLifecycle.isResolved(change.move.to)) THEN NULL ELSE retry_payload END
                WHERE id = \(change.paymentId) AND order_id = \(change.orderId) AND state = \(old.state.rawValue)
                AND sends = \(Int64(old.sends)) AND reconcile_attempts = \(Int64(old.reconcileAttempts))
                AND processor_reference IS NOT DISTINCT FROM \(old.processorReference)
                AND processor_code IS NOT DISTINCT FROM \(old.processorCode)
                AND processor_message IS NOT DISTINCT FROM \(old.processorMessage) AND links = \(read.links)
                AND mandate_id IS NOT DISTINCT FROM \(old.mandateId)
                AND EXISTS (SELECT 1 FROM moved_order)
                RETURNING \(unescaped: Self.paymentColumns)),
            mandate AS (
                INSERT INTO mandates (\(unescaped: Self.mandateColumns)) SELECT
                \(mandate?.id)::text, \(mandate?.merchantIdentifier)::text, \(mandate?.kind.rawValue)::text, \(mandate?.paymentId)::text,
                \(mandate?.orderId)::text, \(mandate?.processor)::text, \(credential)::text, \(mandate?.merchantTokenIdentifier)::text,
                \(mandateMetadata)::text, \(mandate?.currency)::text, \(mandate?.network)::text, \(mandate?.lastFour)::text,
                \(mandate?.description)::text, \(mandate?.state.rawValue)::text, \(mandate?.endedReason)::text,
                \(mandate?.createdAt)::timestamptz, \(mandate?.updatedAt)::timestamptz, \(mandate?.endedAt)::timestamptz
                FROM attempt WHERE \(mandate != nil)),
            events AS (
                INSERT INTO webhook_events (\(unescaped: Self.eventColumns))
                SELECT id, merchant, type, payload, created_at, state, attempts, next_attempt_at, last_status, last_error, delivered_at
                FROM (
                    SELECT 1 AS position, \(event?.id)::text AS id, \(event?.merchantIdentifier)::text AS merchant,
                    \(event?.type.rawValue)::text AS type, \(event?.payload.bytea)::bytea AS payload,
                    \(event?.createdAt)::timestamptz AS created_at, \(event?.state.rawValue)::text AS state,
                    \(event.map { Int64($0.attempts) })::bigint AS attempts, \(event?.nextAttemptAt)::timestamptz AS next_attempt_at,
                    \(event?.lastStatus.map { Int64($0) })::bigint AS last_status, \(event?.lastError)::text AS last_error,
                    \(event?.deliveredAt)::timestamptz AS delivered_at
                    WHERE \(event != nil)
                    UNION ALL
                    SELECT 2, \(mandateEvent?.id)::text, \(mandateEvent?.merchantIdentifier)::text, \(mandateEvent?.type.rawValue)::text,
                    \(mandateEvent?.payload.bytea)::bytea, \(mandateEvent?.createdAt)::timestamptz, \(mandateEvent?.state.rawValue)::text,
                    \(mandateEvent.map { Int64($0.attempts) })::bigint, \(mandateEvent?.nextAttemptAt)::timestamptz,
                    \(mandateEvent?.lastStatus.map { Int64($0) })::bigint, \(mandateEvent?.lastError)::text,
                    \(mandateEvent?.deliveredAt)::timestamptz
                    WHERE \(mandateEvent != nil)
                ) AS e
                WHERE EXISTS (SELECT 1 FROM attempt) ORDER BY position)
            \(unescaped: Self.partialGuard)
            """
        return try await statement(query).first.map(Self.payment)
    }

    /// `date` as a `timestamptz` column returns it.
    static func stored(_ date: Date) -> Date {
        var buffer = ByteBuffer()
        date.encode(into: &buffer, context: .default)
        return (try? Date(from: &buffer, type: .timestamptz, format: .binary, context: .default)) ?? date
    }
}
