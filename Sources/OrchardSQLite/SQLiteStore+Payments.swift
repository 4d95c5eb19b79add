import ApplePay
import Foundation
import OrchardCore

extension SQLiteStore {
    /// Columns added after the first release; added in place so existing databases keep their payments.
    static let addedPaymentColumns: [(name: String, definition: String)] = [
        ("processor", "TEXT NOT NULL DEFAULT 'record'"),
        ("reference", "TEXT NOT NULL DEFAULT ''"),
        ("processor_code", "TEXT"),
        ("processor_message", "TEXT"),
        ("links", "TEXT NOT NULL DEFAULT '{}'"),
        ("updated_at", "INTEGER NOT NULL DEFAULT 0"),
        ("sends", "INTEGER NOT NULL DEFAULT 1"),
        ("reconcile_attempts", "INTEGER NOT NULL DEFAULT 0"),
        ("next_reconcile_at", "INTEGER"),
        ("retry_payload", "BLOB"),
        ("mandate_id", "TEXT"),
        ("merchant_token_id", "TEXT"),
        ("merchant_token_metadata", "TEXT"),
        ("last_sent_at", "INTEGER"),
        ("operation_until", "INTEGER"),
    ]

    static let paymentColumns = """
        id, order_id, transaction_id, state, amount, currency, network, last_four, processor_reference, created_at,
        processor, reference, processor_code, processor_message, links, updated_at, sends, reconcile_attempts, next_reconcile_at,
        mandate_id, merchant_token_id, merchant_token_metadata, last_sent_at
        """

    static func migratePayments(_ database: SQLiteDatabase) throws {
        let existing = Set(try database.query("PRAGMA table_info(payments)").compactMap { $0[1].text })
        for column in addedPaymentColumns where !existing.contains(column.name) {
            try database.execute("ALTER TABLE payments ADD COLUMN \(column.name) \(column.definition)")
        }
        try database.execute("CREATE INDEX IF NOT EXISTS payments_by_order ON payments(order_id)")
        try database.execute("CREATE INDEX IF NOT EXISTS payments_by_state ON payments(state, created_at)")
        // Every token's transaction ID, the first send's and each retry's: a replay of any loses.
        let hadTransactions = !(try database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'payment_transactions'"))
            .isEmpty
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS payment_transactions (
                transaction_id TEXT PRIMARY KEY, payment_id TEXT NOT NULL REFERENCES payments(id), created_at INTEGER NOT NULL)
            """)
        if !hadTransactions {
            try database.execute("INSERT OR IGNORE INTO payment_transactions SELECT transaction_id, id, created_at FROM payments")
        }
        // Unknown payments from before the reconciler are due for it now.
        try database.execute(
            "UPDATE payments SET next_reconcile_at = updated_at WHERE state = 'unknown' AND next_reconcile_at IS NULL")
    }

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let orderId = claim.draft.orderId
        // The claimed row is read back inside the claim's own transaction: no second trip to the database.
        return try await database.run { db -> PaymentRecord in
            try db.transaction {
                let decision = try PaymentClaimPolicy.decide(claim, try Self.claimSnapshot(claim, in: db))
                let now = Int64(claim.draft.createdAt.timeIntervalSince1970)
                switch decision.attempt {
                case .first(let record):
                    try db.execute(
                        "INSERT INTO payments (\(Self.paymentColumns), retry_payload) VALUES (\(Self.placeholders(24)))",
                        try Self.values(record) + [.blob(claim.sealedRequest)])
                case .resend(let paymentId, let sends):
                    let resent = try db.execute(
                        """
                        UPDATE payments SET state = ?, sends = sends + 1, retry_payload = ?, updated_at = ?, last_sent_at = ?
                        WHERE id = ? AND state = ? AND sends = ?
                        """,
                        [
                            .text(decision.move.to.rawValue), .blob(claim.sealedRequest), .integer(now), .integer(now), .text(paymentId),
                            .text(decision.move.from?.rawValue ?? ""), .integer(Int64(sends)),
                        ])
                    guard resent == 1 else {
                        throw BusinessRefusal(.paymentInProgress, "order \(orderId)'s payment was sent again meanwhile")
                    }
                }
                let claimed = try db.execute(
                    "UPDATE orders SET state = ? WHERE id = ? AND state = ? AND price_version = ?",
                    [
                        .text(decision.move.order.to.rawValue), .text(orderId), .text(decision.move.order.from.rawValue),
                        .integer(Int64(decision.priceVersion)),
                    ])
                guard claimed == 1 else { throw BusinessRefusal(.orderChanged, "order \(orderId) changed") }
                try db.execute(
                    "INSERT INTO payment_transactions (transaction_id, payment_id, created_at) VALUES (?, ?, ?)",
                    [.text(claim.transactionId), .text(decision.paymentId), .integer(now)])
                return try Self.payment(id: decision.paymentId, in: db)
            }
        }
    }

    /// What ``PaymentClaimPolicy`` decides a claim from, read in the claim's transaction.
    static func claimSnapshot(_ claim: PaymentClaim, in db: SQLiteDatabase) throws -> PaymentClaimSnapshot {
        let orderId = claim.draft.orderId
        let order = try db.query("SELECT state, price_version, expires_at FROM orders WHERE id = ?", [.text(orderId)]).first
        let unknown = try db.query(
            "SELECT id, sends FROM payments WHERE order_id = ? AND state = 'unknown' ORDER BY created_at DESC, rowid DESC LIMIT 1",
            [.text(orderId)]
        ).first
        let used = try !db.query("SELECT 1 FROM payment_transactions WHERE transaction_id = ?", [.text(claim.transactionId)]).isEmpty
        let attempts = try db.query("SELECT COUNT(*) FROM payments WHERE order_id = ?", [.text(orderId)]).first?[0].integer ?? 0
        return PaymentClaimSnapshot(
            order: try order.map { row in
                guard let state = row[0].text.flatMap(OrderRecord.State.init(rawValue:)) else {
                    throw StoreError(code: .storage, message: "order \(orderId) has an unreadable state")
                }
                return PaymentClaimSnapshot.Order(
                    state: state, priceVersion: Int(row[1].integer ?? 1),
                    expiresAt: row[2].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
            },
            transactionUsed: used, unknownAttempt: unknown.map { .init(id: $0[0].text ?? "", sends: Int($0[1].integer ?? 1)) },
            attempts: Int(attempts))
    }

    /// A payment as the current transaction sees it.
    static func payment(id: String, in db: SQLiteDatabase) throws -> PaymentRecord {
        guard let row = try db.query("SELECT \(paymentColumns) FROM payments WHERE id = ?", [.text(id)]).first else {
            throw StoreError(code: .storage, message: "payment \(id) vanished inside its own transaction")
        }
        return payment(row)
    }

    /// Thrown inside a transaction to roll it back when a compare-and-set finds another state.
    private struct Conflict: Error {}

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        guard let from = change.move.from else { preconditionFailure("a new payment is claimed, not moved") }
        var assignments = ["state = ?", "updated_at = ?", "operation_until = NULL"]
        var values: [SQLiteValue] = [.text(change.move.to.rawValue), .integer(Int64(change.at.timeIntervalSince1970))]
        if let outcome = change.outcome {
            assignments += ["processor_reference = ?", "processor_code = ?", "processor_message = ?"]
            values += [
                outcome.processorReference.map(SQLiteValue.text) ?? .null, outcome.code.map(SQLiteValue.text) ?? .null,
                outcome.message.map(SQLiteValue.text) ?? .null,
            ]
        }
        if let links = change.links ?? change.outcome?.links {
            assignments.append("links = ?")
            values.append(.text(try Self.linksJSON(links)))
        }
        if change.countsReconcileAttempt {
            assignments += ["sends = sends + 1", "reconcile_attempts = reconcile_attempts + 1"]
        }
        var condition = "WHERE id = ? AND order_id = ? AND state = ?"
        var expected: [SQLiteValue] = []
        if let sends = change.expectedSends {
            // A re-send: only as often sent as the engine saw it, and sent last now.
            assignments.append("last_sent_at = ?")
            values.append(.integer(Int64(change.at.timeIntervalSince1970)))
            condition += " AND sends = ?"
            expected.append(.integer(Int64(sends)))
        }
        assignments.append("next_reconcile_at = ?")
        values.append(change.nextReconcileAt.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null)
        if PaymentLifecycle.isResolved(change.move.to) {
            assignments.append("retry_payload = NULL")
        }
        let sql = "UPDATE payments SET \(assignments.joined(separator: ", ")) \(condition)"
        let parameters = values + [.text(change.paymentId), .text(change.orderId), .text(from.rawValue)] + expected
        return try await database.run { db -> PaymentRecord? in
            do {
                return try db.transaction {
                    guard try db.execute(sql, parameters) == 1 else { throw Conflict() }
                    let order = try db.execute(
                        "UPDATE orders SET state = ? WHERE id = ? AND state = ?",
                        [.text(change.move.order.to.rawValue), .text(change.orderId), .text(change.move.order.from.rawValue)])
                    guard order == 1 else { throw Conflict() }
                    var payment = try Self.payment(id: change.paymentId, in: db)
                    // The payment's own event first, naming its mandate.
                    if let mandate = change.mandate { payment.mandateId = mandate.id }
                    if let type = PaymentLifecycle.reportedEvent(change.move, moved: payment) {
                        try Self.insertPaymentEvent(type, paymentId: change.paymentId, payment: payment, in: db, at: change.at)
                    }
                    if let mandate = change.mandate { try Self.insertMandate(mandate, payment: payment, in: db) }
                    return payment
                }
            } catch is Conflict {
                return nil
            }
        }
    }

    public func retryPayload(paymentId: String) async throws -> [UInt8]? {
        let rows = try await database.read { db in
            try db.query("SELECT retry_payload FROM payments WHERE id = ?", [.text(paymentId)])
        }
        guard case .blob(let bytes) = rows.first?[0] else { return nil }
        return bytes
    }

    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await database.run { db in
            try db.transaction {
                let due = try db.query(
                    """
                    SELECT \(Self.paymentColumns) FROM payments WHERE state = 'unknown' AND next_reconcile_at IS NOT NULL
                    AND next_reconcile_at <= ? ORDER BY next_reconcile_at, rowid LIMIT ?
                    """, [.time(date), .integer(Int64(limit))]
                ).map(Self.payment)
                for payment in due {
                    try db.execute(
                        "UPDATE payments SET next_reconcile_at = ? WHERE id = ? AND state = 'unknown'",
                        [.time(leaseEnd), .text(payment.id)])
                }
                return due.map { payment in
                    var leased = payment
                    leased.nextReconcileAt = SQLiteValue.time(leaseEnd).date
                    return leased
                }
            }
        }
    }

    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        try await query(
            "WHERE state = 'pending' AND updated_at < ? ORDER BY updated_at, rowid", [.integer(Int64(date.timeIntervalSince1970))])
    }

    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        try await database.run { db in
            try db.execute(
                "UPDATE payments SET next_reconcile_at = ? WHERE id = ? AND state = 'unknown'",
                [date.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null, .text(paymentId)])
        } == 1
    }

    public func payments(orderId: String) async throws -> [PaymentRecord] {
        try await query("WHERE order_id = ? ORDER BY created_at, rowid", [.text(orderId)])
    }

    public func payment(id: String) async throws -> PaymentRecord? {
        try await query("WHERE id = ?", [.text(id)]).first
    }

    public func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        if let state {
            return try await query(
                "WHERE state = ? ORDER BY created_at DESC, rowid DESC LIMIT ?", [.text(state.rawValue), .integer(Int64(limit))])
        }
        return try await query("ORDER BY created_at DESC, rowid DESC LIMIT ?", [.integer(Int64(limit))])
    }

    private func query(_ clause: String, _ parameters: [SQLiteValue]) async throws -> [PaymentRecord] {
        let rows = try await database.read { db in
            try db.query("SELECT \(Self.paymentColumns) FROM payments \(clause)", parameters)
        }
        return rows.map(Self.payment)
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    static func values(_ payment: PaymentRecord) throws -> [SQLiteValue] {
        [
            .text(payment.id), .text(payment.orderId), .text(payment.transactionId), .text(payment.state.rawValue),
            .integer(payment.amount), .text(payment.currency), payment.network.map(SQLiteValue.text) ?? .null, .text(payment.lastFour),
            payment.processorReference.map(SQLiteValue.text) ?? .null, .integer(Int64(payment.createdAt.timeIntervalSince1970)),
            .text(payment.processor), .text(payment.reference), payment.processorCode.map(SQLiteValue.text) ?? .null,
            payment.processorMessage.map(SQLiteValue.text) ?? .null,
            .text(try linksJSON(payment.links)),
            .integer(Int64(payment.updatedAt.timeIntervalSince1970)), .integer(Int64(payment.sends)),
            .integer(Int64(payment.reconcileAttempts)),
            payment.nextReconcileAt.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null,
            payment.mandateId.map(SQLiteValue.text) ?? .null, payment.merchantTokenIdentifier.map(SQLiteValue.text) ?? .null,
            try payment.merchantTokenMetadata.map { .text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) } ?? .null,
            payment.lastSentAt.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null,
        ]
    }

    /// Most payments have no links: `{}` is written and read without a JSON coder, which costs
    /// more than the rest of the row and runs on the database's one writer thread.
    static func linksJSON(_ links: [String: String]) throws -> String {
        links.isEmpty ? "{}" : String(decoding: try JSONEncoder().encode(links), as: UTF8.self)
    }

    static func payment(_ row: [SQLiteValue]) -> PaymentRecord {
        let text = row[14].text ?? "{}"
        let links = text == "{}" ? [:] : (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
        let created = Date(timeIntervalSince1970: TimeInterval(row[9].integer ?? 0))
        let updated = row[15].integer.flatMap { $0 > 0 ? Date(timeIntervalSince1970: TimeInterval($0)) : nil } ?? created
        return PaymentRecord(
            id: row[0].text ?? "", orderId: row[1].text ?? "", transactionId: row[2].text ?? "",
            state: PaymentState(rawValue: row[3].text ?? "") ?? .unknown, amount: row[4].integer ?? 0, currency: row[5].text ?? "",
            network: row[6].text, lastFour: row[7].text ?? "", processor: row[10].text ?? "record", reference: row[11].text ?? "",
            processorReference: row[8].text, processorCode: row[12].text, processorMessage: row[13].text, links: links,
            sends: Int(row[16].integer ?? 1), reconcileAttempts: Int(row[17].integer ?? 0),
            nextReconcileAt: row[18].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) }, mandateId: row[19].text,
            merchantTokenIdentifier: row[20].text,
            merchantTokenMetadata: row[21].text.flatMap {
                try? JSONDecoder().decode(DecryptedPayment.MerchantTokenMetadata.self, from: Data($0.utf8))
            }, createdAt: created, updatedAt: updated,
            lastSentAt: row[22].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
    }

    public func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        try await database.run { db in
            try db.execute(
                """
                UPDATE payments SET operation_until = ?
                WHERE id = ? AND state = ? AND (operation_until IS NULL OR operation_until <= ?)
                """, [.time(leaseEnd), .text(paymentId), .text(state.rawValue), .time(date)])
        } == 1
    }

    public func releaseOperation(paymentId: String) async throws {
        _ = try await database.run { db in
            try db.execute("UPDATE payments SET operation_until = NULL WHERE id = ?", [.text(paymentId)])
        }
    }
}
