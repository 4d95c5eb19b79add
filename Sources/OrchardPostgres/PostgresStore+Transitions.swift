import ApplePay
import Foundation
import NIOCore
import OrchardCore
import PostgresNIO
import Synchronization

/// A payment's move in one round trip and no transaction: Swift builds the moved payment and its
/// events from the payment as the engine holds it (``PaymentTransition/held``), and one statement
/// moves the order and the payment by compare-and-set and, only if both moved, inserts the events
/// and the mandate. The compare-and-set re-checks every column the move keeps or its events
/// report, so the engine's copy is only a guess: when the payment differs, or the engine holds
/// none, or the move settles (its event reports the refunds so far), one more statement reads the
/// payment first, as the move did before (two round trips).
extension PostgresStore {
    /// How often a move reads and writes when the payment changes between the two while it stays
    /// in the move's state; then the move reports a conflict (nil), as one that lost does.
    static let transitionAttempts = 3

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        guard change.move.from != nil else { preconditionFailure("a new payment is claimed, not moved") }
        forgetOrder(change.orderId)
        if let release = change.release { return try await transition(change, releasing: release) }
        if let guess = try guess(change) {
            do {
                return try await write(change, read: guess)
            } catch let error as PSQLError where Self.isPartialMove(error) {
                // The payment is not as the engine holds it: read it, as below.
            } catch {
                throw Self.storeError(error)
            }
        }
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

    /// What the move is written from without a read: the engine's payment, if it holds one in
    /// the move's state, with the order's context a claim on this instance read; nil otherwise,
    /// or when the move settles the payment.
    private func guess(_ change: PaymentTransition) throws -> MoveSnapshot? {
        guard let held = change.held, held.id == change.paymentId, held.orderId == change.orderId, held.state == change.move.from,
            change.expectedSends.map({ $0 == held.sends }) ?? true, change.move.to != .settled,
            let context = moveContexts.withLock({ $0[change.orderId] })
        else { return nil }
        return MoveSnapshot(payment: held, links: try Self.json(held.links), context: context, refunded: 0)
    }

    /// The payment as it stands, with what its event shows; nil when it is not in the move's
    /// states (or not sent as often as the engine saw), as the compare-and-set would find.
    private func moveSnapshot(_ change: PaymentTransition) async throws -> MoveSnapshot? {
        let row = try await rows(
            """
            SELECT \(unescaped: Self.qualified(Self.paymentColumns, by: "p")), o.state AS order_state, o.merchant AS order_merchant,
            \(unescaped: Self.requestRead),
            (SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE payment_id = p.id AND state = 'refunded')::bigint AS refunded
            FROM payments p JOIN orders o ON o.id = p.order_id LEFT JOIN payment_requests r ON r.id = p.order_id
            WHERE p.id = \(change.paymentId)::text AND p.order_id = \(change.orderId)::text
            """, prepared: Statements.MoveRead.self
        ).first
        guard let row else { return nil }
        let payment = try Self.payment(row)
        guard payment.state == change.move.from, try row.text("order_state") == change.move.order.from.rawValue,
            change.expectedSends.map({ $0 == payment.sends }) ?? true
        else { return nil }
        let context = try MoveContext(row)
        remember(context, of: change.orderId)
        return MoveSnapshot(payment: payment, links: try row.text("links"), context: context, refunded: try row.integer("refunded"))
    }

    /// What a move is written from.
    private struct MoveSnapshot {
        var payment: PaymentRecord
        /// The payment's links as stored (or as this store writes the engine's), compared as text.
        var links: String
        var context: MoveContext
        /// The refunds so far: read only for a move that settles.
        var refunded: Int64
    }

    /// The move in one statement; nil when the order was not in the move's state. The order's
    /// compare-and-set runs first (the payment's waits for it, as an InitPlan), so claims, which
    /// write the order first too, never deadlock with a move. The payment's compare-and-set
    /// requires every column the events report (or decide on) and the move keeps from `read`
    /// unchanged, and the order's merchant and payment request to be the context's, so the row
    /// written is the one the events report. The merchant is compared on the order's row as the
    /// order's compare-and-set wrote it (`moved_order`), not as the statement's snapshot had it:
    /// a retirement that moved the order to its record key while the move waited for the row
    /// lock would otherwise go unseen, and the mandate (``PaymentTransition/mandate(ownedBy:)``)
    /// be created under the identifier a later tenant may take. If one differs, the statement
    /// fails as a whole (``partialGuard``) and the move reads (again). Times are written as given
    /// (a time read back and bound again may move by a microsecond), never compared: the one the
    /// events report beside the new ones, `created_at`, is written only when the payment is inserted.
    private func write(_ change: PaymentTransition, read: MoveSnapshot) async throws -> PaymentRecord? {
        let old = read.payment
        let moved = change.applied(to: old, stored: Self.stored)
        let newLinks = try (change.links ?? change.outcome?.links).map(Self.json)
        let event = try PaymentLifecycle.reportedEvent(change.move, moved: moved).map {
            try WebhookEvent.make(
                $0, merchantIdentifier: read.context.merchant, payment: moved, request: read.context.request,
                refunded: moved.state == .settled ? read.refunded : 0, at: change.at)
        }
        // The order's owner as this statement's compare-and-set finds it (``MoveContext/merchant``, checked on the row it writes).
        let mandate = change.mandate(ownedBy: read.context.merchant)
        let mandateEvent = try mandate.map { try WebhookEvent.make(.mandateCreated, mandate: $0, payment: moved, at: $0.createdAt) }
        let credential = try mandate.map { try Self.json($0.credential) }
        let mandateMetadata = try mandate?.merchantTokenMetadata.map(Self.json)
        let query: PostgresQuery = """
            WITH moved_order AS (
                UPDATE orders SET state = \(change.move.order.to.rawValue)::text
                WHERE id = \(change.orderId)::text AND state = \(change.move.order.from.rawValue)::text RETURNING id, merchant),
            attempt AS (
                UPDATE payments SET state = \(moved.state.rawValue)::text, updated_at = \(change.at)::timestamptz, operation_until = NULL,
                processor_reference = \(moved.processorReference)::text, processor_code = \(moved.processorCode)::text,
                processor_message = \(moved.processorMessage)::text, links = \(newLinks ?? read.links)::text,
                sends = \(Int64(moved.sends))::bigint, reconcile_attempts = \(Int64(moved.reconcileAttempts))::bigint,
                next_reconcile_at = \(change.nextReconcileAt)::timestamptz, mandate_id = \(moved.mandateId)::text,
                capture_due_at = \(change.captureDueAt)::timestamptz, amount_captured = \(moved.amountCaptured)::bigint,
                last_sent_at = CASE WHEN \(change.expectedSends != nil)::boolean THEN \(change.at)::timestamptz ELSE last_sent_at END,
                retry_payload = CASE WHEN \(PaymentLifecycle.isResolved(change.move.to))::boolean THEN NULL ELSE retry_payload END
                WHERE id = \(change.paymentId)::text AND order_id = \(change.orderId)::text AND state = \(old.state.rawValue)::text
                AND sends = \(Int64(old.sends))::bigint AND reconcile_attempts = \(Int64(old.reconcileAttempts))::bigint
                AND processor_reference IS NOT DISTINCT FROM \(old.processorReference)::text
                AND processor_code IS NOT DISTINCT FROM \(old.processorCode)::text
                AND processor_message IS NOT DISTINCT FROM \(old.processorMessage)::text AND links = \(read.links)::text
                AND mandate_id IS NOT DISTINCT FROM \(old.mandateId)::text AND transaction_id = \(old.transactionId)::text
                AND amount = \(old.amount)::bigint AND currency = \(old.currency)::text AND network IS NOT DISTINCT FROM \(old.network)::text
                AND last_four = \(old.lastFour)::text AND processor = \(old.processor)::text AND reference = \(old.reference)::text
                AND merchant_token_id IS NOT DISTINCT FROM \(old.merchantTokenIdentifier)::text
                AND (SELECT COUNT(*) FROM payment_requests WHERE id = \(change.orderId)::text) = \(Int64(read.context.request == nil ? 0 : 1))::bigint
                AND (SELECT COUNT(*) FROM payment_requests WHERE id = \(change.orderId)::text AND reference = \(read.context.request?.reference)::text
                    AND metadata = \(read.context.requestMetadata)::text) = \(Int64(read.context.request == nil ? 0 : 1))::bigint
                AND EXISTS (SELECT 1 FROM moved_order WHERE merchant = \(read.context.merchant)::text)
                RETURNING \(unescaped: Self.paymentColumns)),
            mandate AS (
                INSERT INTO mandates (\(unescaped: Self.mandateColumns)) SELECT
                \(mandate?.id)::text, \(mandate?.merchantIdentifier)::text, \(mandate?.kind.rawValue)::text, \(mandate?.paymentId)::text,
                \(mandate?.orderId)::text, \(mandate?.processor)::text, \(credential)::text, \(mandate?.merchantTokenIdentifier)::text,
                \(mandateMetadata)::text, \(mandate?.currency)::text, \(mandate?.network)::text, \(mandate?.lastFour)::text,
                \(mandate?.description)::text, \(mandate?.state.rawValue)::text, \(mandate?.endedReason)::text,
                \(mandate?.createdAt)::timestamptz, \(mandate?.updatedAt)::timestamptz, \(mandate?.endedAt)::timestamptz
                FROM attempt WHERE \(mandate != nil)::boolean),
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
                    WHERE \(event != nil)::boolean
                    UNION ALL
                    SELECT 2, \(mandateEvent?.id)::text, \(mandateEvent?.merchantIdentifier)::text, \(mandateEvent?.type.rawValue)::text,
                    \(mandateEvent?.payload.bytea)::bytea, \(mandateEvent?.createdAt)::timestamptz, \(mandateEvent?.state.rawValue)::text,
                    \(mandateEvent.map { Int64($0.attempts) })::bigint, \(mandateEvent?.nextAttemptAt)::timestamptz,
                    \(mandateEvent?.lastStatus.map { Int64($0) })::bigint, \(mandateEvent?.lastError)::text,
                    \(mandateEvent?.deliveredAt)::timestamptz
                    WHERE \(mandateEvent != nil)::boolean
                ) AS e
                WHERE EXISTS (SELECT 1 FROM attempt) ORDER BY position)
            \(unescaped: Self.partialGuard)
            """
        return try await statement(query, prepared: Statements.Move.self).first.map(Self.payment)
    }

    /// `date` as a `timestamptz` column returns it.
    static func stored(_ date: Date) -> Date {
        var buffer = ByteBuffer()
        date.encode(into: &buffer, context: .default)
        return (try? Date(from: &buffer, type: .timestamptz, format: .binary, context: .default)) ?? date
    }
}
