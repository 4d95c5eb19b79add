import Foundation

extension SQLiteStore {
    /// Columns added after the first release; added in place so existing databases keep their payments.
    static let addedPaymentColumns: [(name: String, definition: String)] = [
        ("processor", "TEXT NOT NULL DEFAULT 'record'"),
        ("reference", "TEXT NOT NULL DEFAULT ''"),
        ("processor_code", "TEXT"),
        ("processor_message", "TEXT"),
        ("links", "TEXT NOT NULL DEFAULT '{}'"),
        ("updated_at", "INTEGER NOT NULL DEFAULT 0"),
    ]

    static let paymentColumns = """
        id, order_id, transaction_id, state, amount, currency, network, last_four, processor_reference, created_at,
        processor, reference, processor_code, processor_message, links, updated_at
        """

    static func migratePayments(_ database: SQLiteDatabase) throws {
        let existing = Set(try database.query("PRAGMA table_info(payments)").compactMap { $0[1].text })
        for column in addedPaymentColumns where !existing.contains(column.name) {
            try database.execute("ALTER TABLE payments ADD COLUMN \(column.name) \(column.definition)")
        }
        try database.execute("CREATE INDEX IF NOT EXISTS payments_by_order ON payments(order_id)")
        try database.execute("CREATE INDEX IF NOT EXISTS payments_by_state ON payments(state, created_at)")
    }

    public func recordPayment(_ payment: PaymentRecord) async throws {
        let values = try Self.values(payment)
        try await database.run { db in
            try db.transaction {
                let changed = try db.execute(
                    "UPDATE orders SET state = 'paid' WHERE id = ? AND state IN ('open', 'unknown')", [.text(payment.orderId)])
                do {
                    try db.execute(
                        "INSERT INTO payments (\(Self.paymentColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
                } catch let failure as SQLiteDatabase.Failure where failure.isConstraint {
                    throw StoreError(
                        code: .duplicateTransaction, message: "transaction \(payment.transactionId.prefix(16))… was already used")
                }
                guard changed == 1 else { throw StoreError(code: .orderNotOpen, message: "order \(payment.orderId) is already paid") }
            }
        }
    }

    public func finishPayment(_ payment: PaymentRecord, orderState: OrderRecord.State) async throws {
        let links = String(decoding: try JSONEncoder().encode(payment.links), as: UTF8.self)
        try await database.run { db in
            try db.transaction {
                try db.execute(
                    """
                    UPDATE payments SET state = ?, processor_reference = ?, processor_code = ?, processor_message = ?, links = ?,
                        updated_at = ? WHERE id = ?
                    """,
                    [
                        .text(payment.state.rawValue), payment.processorReference.map(SQLiteValue.text) ?? .null,
                        payment.processorCode.map(SQLiteValue.text) ?? .null, payment.processorMessage.map(SQLiteValue.text) ?? .null,
                        .text(links), .integer(Int64(payment.updatedAt.timeIntervalSince1970)), .text(payment.id),
                    ])
                try db.execute("UPDATE orders SET state = ? WHERE id = ?", [.text(orderState.rawValue), .text(payment.orderId)])
                if payment.state != .unknown && payment.state != .pending {
                    try db.execute(
                        "UPDATE payments SET state = 'superseded', updated_at = ? WHERE order_id = ? AND reference = ? AND state = 'unknown' AND id != ?",
                        [
                            .integer(Int64(payment.updatedAt.timeIntervalSince1970)), .text(payment.orderId), .text(payment.reference),
                            .text(payment.id),
                        ])
                }
            }
        }
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

    public func transitionPayment(id: String, from: Set<PaymentState>, to: PaymentState, at date: Date) async throws -> Bool {
        let allowed = from.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ")
        let changed = try await database.run { db in
            try db.execute(
                "UPDATE payments SET state = ?, updated_at = ? WHERE id = ? AND state IN (\(allowed))",
                [.text(to.rawValue), .integer(Int64(date.timeIntervalSince1970)), .text(id)])
        }
        return changed == 1
    }

    private func query(_ clause: String, _ parameters: [SQLiteValue]) async throws -> [PaymentRecord] {
        let rows = try await database.run { db in
            try db.query("SELECT \(Self.paymentColumns) FROM payments \(clause)", parameters)
        }
        return rows.map(Self.payment)
    }

    static func values(_ payment: PaymentRecord) throws -> [SQLiteValue] {
        [
            .text(payment.id), .text(payment.orderId), .text(payment.transactionId), .text(payment.state.rawValue),
            .integer(payment.amount), .text(payment.currency), payment.network.map(SQLiteValue.text) ?? .null, .text(payment.lastFour),
            payment.processorReference.map(SQLiteValue.text) ?? .null, .integer(Int64(payment.createdAt.timeIntervalSince1970)),
            .text(payment.processor), .text(payment.reference), payment.processorCode.map(SQLiteValue.text) ?? .null,
            payment.processorMessage.map(SQLiteValue.text) ?? .null,
            .text(String(decoding: try JSONEncoder().encode(payment.links), as: UTF8.self)),
            .integer(Int64(payment.updatedAt.timeIntervalSince1970)),
        ]
    }

    static func payment(_ row: [SQLiteValue]) -> PaymentRecord {
        let links = (try? JSONDecoder().decode([String: String].self, from: Data((row[14].text ?? "{}").utf8))) ?? [:]
        let created = Date(timeIntervalSince1970: TimeInterval(row[9].integer ?? 0))
        let updated = row[15].integer.flatMap { $0 > 0 ? Date(timeIntervalSince1970: TimeInterval($0)) : nil } ?? created
        return PaymentRecord(
            id: row[0].text ?? "", orderId: row[1].text ?? "", transactionId: row[2].text ?? "",
            state: PaymentState(rawValue: row[3].text ?? "") ?? .unknown, amount: row[4].integer ?? 0, currency: row[5].text ?? "",
            network: row[6].text, lastFour: row[7].text ?? "", processor: row[10].text ?? "record", reference: row[11].text ?? "",
            processorReference: row[8].text, processorCode: row[12].text, processorMessage: row[13].text, links: links,
            createdAt: created, updatedAt: updated)
    }
}
