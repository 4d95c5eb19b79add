import ApplePay
import Foundation
import OrchardCore

extension SQLiteStore {
    static let paymentColumns = """
        id, order_id, transaction_id, state, amount, currency, network, last_four, processor_reference, created_at,
        processor, reference, processor_code, processor_message, links, updated_at, sends, reconcile_attempts, next_reconcile_at,
        mandate_id, merchant_token_id, merchant_token_metadata, last_sent_at, capture_due_at, capture_attempts,
        amount_captured
        """

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let orderId = claim.draft.orderId
        // The claimed row is read back inside the claim's own transaction: no second trip to the database.
        return try await database.run { db -> PaymentRecord in
            let decision = try PaymentClaimPolicy.decide(claim, try Self.claimSnapshot(claim, in: db))
            let now = claim.draft.createdAt
            switch decision.attempt {
            case .first(let record):
                try Self.insert(record, retryPayload: claim.sealedRequest, in: db)
            case .resend(let paymentId, let sends):
                let resent = try db.execute(
                    """
                    UPDATE payments SET state = \(decision.move.to), sends = sends + 1, retry_payload = \(claim.sealedRequest),
                    updated_at = \(now), last_sent_at = \(now)
                    WHERE id = \(paymentId) AND state = \(decision.move.from?.rawValue ?? "") AND sends = \(sends)
                    """)
                guard resent == 1 else {
                    throw CoreError(.paymentInProgress, "order \(orderId)'s payment was sent again meanwhile")
                }
            }
            let claimed = try db.execute(
                """
                UPDATE orders SET state = \(decision.move.order.to) WHERE id = \(orderId) AND state = \(decision.move.order.from)
                AND price_version = \(decision.priceVersion)
                """)
            guard claimed == 1 else { throw CoreError(.orderChanged, "order \(orderId) changed") }
            try db.execute(
                """
                INSERT INTO payment_transactions (transaction_id, payment_id, created_at)
                VALUES (\(claim.transactionId), \(decision.paymentId), \(now))
                """)
            return try Self.payment(id: decision.paymentId, in: db)
        }
    }

    /// What ``PaymentClaimPolicy`` decides a claim from, read in the claim's transaction.
    static func claimSnapshot(_ claim: PaymentClaim, in db: SQLiteDatabase) throws -> PaymentClaimSnapshot {
        let orderId = claim.draft.orderId
        let order = try db.query("SELECT state, price_version, expires_at FROM orders WHERE id = \(orderId)").first
        let unknown = try db.query(
            "SELECT id, sends FROM payments WHERE order_id = \(orderId) AND state = 'unknown' ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ).first
        let used = try !db.query("SELECT 1 FROM payment_transactions WHERE transaction_id = \(claim.transactionId)").isEmpty
        let attempts = try db.query("SELECT COUNT(*) AS attempts FROM payments WHERE order_id = \(orderId)").first?.int("attempts") ?? 0
        return PaymentClaimSnapshot(
            order: try order.map { row in
                guard let state: OrderRecord.State = row.value("state") else {
                    throw StoreError(code: .storage, message: "order \(orderId) has an unreadable state")
                }
                return PaymentClaimSnapshot.Order(
                    state: state, priceVersion: row.int("price_version"), expiresAt: row.optionalDate("expires_at"))
            },
            transactionUsed: used, unknownAttempt: unknown.map { .init(id: $0.text("id"), sends: $0.int("sends")) }, attempts: attempts)
    }

    /// A payment as the current transaction sees it.
    static func payment(id: String, in db: SQLiteDatabase) throws -> PaymentRecord {
        guard let row = try db.query("SELECT \(unescaped: paymentColumns) FROM payments WHERE id = \(id)").first else {
            throw StoreError(code: .storage, message: "payment \(id) vanished inside its own transaction")
        }
        return payment(row)
    }

    /// Thrown inside a transaction to roll it back when a compare-and-set finds another state.
    private struct Conflict: Error {}

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        guard let from = change.move.from else { preconditionFailure("a new payment is claimed, not moved") }
        // Stored as given when the move brings links, else left as written (compared as text elsewhere).
        let links = try (change.links ?? change.outcome?.links).map(Self.linksJSON)
        do {
            return try await database.run { db -> PaymentRecord in
                // The move as Core writes it (PaymentTransition.applied), from the payment as this
                // transaction reads it; the UPDATE is still a compare-and-set on what was read.
                guard let row = try db.query("SELECT \(unescaped: Self.paymentColumns) FROM payments WHERE id = \(change.paymentId)").first
                else { throw Conflict() }
                let old = Self.payment(row)
                guard old.orderId == change.orderId, old.state == from, change.expectedSends.map({ $0 == old.sends }) ?? true else {
                    throw Conflict()
                }
                let moved = change.applied(to: old)
                let update: SQLiteStatement = """
                    UPDATE payments SET state = \(moved.state), updated_at = \(moved.updatedAt), operation_until = NULL,
                    processor_reference = \(moved.processorReference), processor_code = \(moved.processorCode),
                    processor_message = \(moved.processorMessage), links = COALESCE(\(links), links), sends = \(moved.sends),
                    reconcile_attempts = \(moved.reconcileAttempts), last_sent_at = \(moved.lastSentAt),
                    next_reconcile_at = \(moved.nextReconcileAt), capture_due_at = \(moved.captureDueAt),
                    amount_captured = \(moved.amountCaptured),
                    retry_payload = CASE WHEN \(PaymentLifecycle.isResolved(moved.state)) THEN NULL ELSE retry_payload END
                    WHERE id = \(change.paymentId) AND state = \(from) AND sends = \(old.sends)
                    """
                guard try db.execute(update) == 1 else { throw Conflict() }
                let order = try db.execute(
                    "UPDATE orders SET state = \(change.move.order.to) WHERE id = \(change.orderId) AND state = \(change.move.order.from)")
                guard order == 1 else { throw Conflict() }
                var payment = try Self.payment(id: change.paymentId, in: db)
                // Owned by the order's owner as this transaction reads it, which a retirement may have changed.
                var mandate: MandateRecord?
                if change.mandate != nil {
                    let owner = try db.query("SELECT merchant FROM orders WHERE id = \(change.orderId)").first?.text("merchant")
                    mandate = change.mandate(ownedBy: owner ?? "")
                }
                // The payment's own event first, naming its mandate.
                if let mandate { payment.mandateId = mandate.id }
                if let type = PaymentLifecycle.reportedEvent(change.move, moved: payment) {
                    try Self.insertPaymentEvent(type, paymentId: change.paymentId, payment: payment, in: db, at: change.at)
                }
                if let release = change.release {
                    try Self.insertRelease(release, in: db)
                    try Self.insertPaymentEvent(
                        .paymentRefunded, paymentId: payment.id, payment: payment, refund: release, in: db, at: change.at)
                }
                if let mandate { try Self.insertMandate(mandate, payment: payment, in: db) }
                return payment
            }
        } catch is Conflict {
            return nil
        }
    }

    public func retryPayload(paymentId: String) async throws -> [UInt8]? {
        try await rows("SELECT retry_payload FROM payments WHERE id = \(paymentId)").first?.optionalBlob("retry_payload")
    }

    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await database.run { db in
            let due = try db.query(
                """
                SELECT \(unescaped: Self.paymentColumns) FROM payments WHERE state = 'unknown' AND next_reconcile_at IS NOT NULL
                AND next_reconcile_at <= \(date) ORDER BY next_reconcile_at, rowid LIMIT \(limit)
                """
            ).map(Self.payment)
            for payment in due {
                try db.execute("UPDATE payments SET next_reconcile_at = \(leaseEnd) WHERE id = \(payment.id) AND state = 'unknown'")
            }
            return due.map { payment in
                var leased = payment
                leased.nextReconcileAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        try await payments("WHERE state = 'pending' AND updated_at < \(date) ORDER BY updated_at, rowid")
    }

    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        try await write("UPDATE payments SET next_reconcile_at = \(date) WHERE id = \(paymentId) AND state = 'unknown'") == 1
    }

    public func payments(orderId: String) async throws -> [PaymentRecord] {
        try await payments("WHERE order_id = \(orderId) ORDER BY created_at, rowid")
    }

    public func payments(mandateId: String, limit: Int) async throws -> [PaymentRecord] {
        try await payments("WHERE mandate_id = \(mandateId) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
    }

    public func payment(id: String) async throws -> PaymentRecord? {
        try await payments("WHERE id = \(id)").first
    }

    public func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        if let state {
            return try await payments("WHERE state = \(state) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        }
        return try await payments("ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
    }

    /// Payments matching `clause` (a WHERE clause and its ordering, values bound).
    private func payments(_ clause: SQLiteStatement) async throws -> [PaymentRecord] {
        try await rows("SELECT \(unescaped: Self.paymentColumns) FROM payments \(clause)").map(Self.payment)
    }

    /// Writes a new payment, with the sealed request a retry re-sends.
    static func insert(_ payment: PaymentRecord, retryPayload: [UInt8], in db: SQLiteDatabase) throws {
        let links = try linksJSON(payment.links)
        let metadata = try payment.merchantTokenMetadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try db.execute(
            """
            INSERT INTO payments (\(unescaped: paymentColumns), retry_payload) VALUES (
            \(payment.id), \(payment.orderId), \(payment.transactionId), \(payment.state), \(payment.amount), \(payment.currency),
            \(payment.network), \(payment.lastFour), \(payment.processorReference), \(payment.createdAt), \(payment.processor),
            \(payment.reference), \(payment.processorCode), \(payment.processorMessage), \(links),
            \(payment.updatedAt), \(payment.sends), \(payment.reconcileAttempts), \(payment.nextReconcileAt), \(payment.mandateId),
            \(payment.merchantTokenIdentifier), \(metadata), \(payment.lastSentAt), \(payment.captureDueAt),
            \(payment.captureAttempts), \(payment.amountCaptured), \(retryPayload))
            """)
    }

    /// Most payments have no links: `{}` is written and read without a JSON coder, which costs
    /// more than the rest of the row and runs on the database's one writer thread.
    static func linksJSON(_ links: [String: String]) throws -> String {
        links.isEmpty ? "{}" : String(decoding: try JSONEncoder().encode(links), as: UTF8.self)
    }

    static func payment(_ row: SQLiteRow) -> PaymentRecord {
        let links = row.text("links")
        let created = row.date("created_at")
        var payment = PaymentRecord(
            id: row.text("id"), orderId: row.text("order_id"), transactionId: row.text("transaction_id"),
            state: row.value("state") ?? .unknown, amount: row.integer("amount"), currency: row.text("currency"),
            network: row.optionalText("network"), lastFour: row.text("last_four"), processor: row.text("processor"),
            reference: row.text("reference"), processorReference: row.optionalText("processor_reference"),
            processorCode: row.optionalText("processor_code"), processorMessage: row.optionalText("processor_message"),
            links: links == "{}" ? [:] : row.json("links", as: [String: String].self) ?? [:], sends: row.int("sends"),
            reconcileAttempts: row.int("reconcile_attempts"), nextReconcileAt: row.optionalDate("next_reconcile_at"),
            mandateId: row.optionalText("mandate_id"), merchantTokenIdentifier: row.optionalText("merchant_token_id"),
            merchantTokenMetadata: row.json("merchant_token_metadata", as: DecryptedPayment.MerchantTokenMetadata.self),
            // Rows from before `updated_at` was added read 0 there: they last changed when created.
            createdAt: created, updatedAt: row.integer("updated_at") > 0 ? row.date("updated_at") : created,
            lastSentAt: row.optionalDate("last_sent_at"))
        payment.captureDueAt = row.optionalDate("capture_due_at")
        payment.captureAttempts = row.int("capture_attempts")
        payment.amountCaptured = row.optionalInteger("amount_captured")
        return payment
    }

    public func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        try await write(
            """
            UPDATE payments SET operation_until = \(leaseEnd)
            WHERE id = \(paymentId) AND state = \(state) AND (operation_until IS NULL OR operation_until <= \(date))
            """) == 1
    }

    public func releaseOperation(paymentId: String) async throws {
        try await write("UPDATE payments SET operation_until = NULL WHERE id = \(paymentId)")
    }
}
