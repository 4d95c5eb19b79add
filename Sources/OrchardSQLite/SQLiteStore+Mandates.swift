import ApplePay
import Foundation
import OrchardCore

/// Mandates: created in the move that authorizes their first payment, then ended or updated by
/// compare-and-set on `active`, each change with its webhook event in the same transaction.
extension SQLiteStore {
    static let mandateColumns = """
        id, merchant, kind, payment_id, order_id, processor, credential, merchant_token_id, merchant_token_metadata, currency,
        network, last_four, description, state, ended_reason, created_at, updated_at, ended_at
        """

    static func migrateMandates(_ database: SQLiteDatabase) throws {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS mandates (
                id TEXT PRIMARY KEY, merchant TEXT NOT NULL, kind TEXT NOT NULL, payment_id TEXT NOT NULL REFERENCES payments(id),
                order_id TEXT NOT NULL, processor TEXT NOT NULL, credential TEXT NOT NULL, merchant_token_id TEXT,
                merchant_token_metadata TEXT, currency TEXT NOT NULL, network TEXT, last_four TEXT NOT NULL, description TEXT NOT NULL,
                state TEXT NOT NULL, ended_reason TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, ended_at INTEGER)
            """)
        try database.execute("CREATE INDEX IF NOT EXISTS mandates_by_merchant ON mandates(merchant, created_at)")
        try database.execute("CREATE INDEX IF NOT EXISTS mandates_by_token ON mandates(merchant_token_id)")
    }

    /// Inserts the mandate a move creates, names it on its payment and reports it, inside the move's transaction.
    static func insertMandate(_ mandate: MandateRecord, payment: PaymentRecord, in db: SQLiteDatabase) throws {
        try db.execute(
            "INSERT INTO mandates (\(mandateColumns)) VALUES (\(placeholders(18)))",
            [
                .text(mandate.id), .text(mandate.merchantIdentifier), .text(mandate.kind.rawValue), .text(mandate.paymentId),
                .text(mandate.orderId), .text(mandate.processor), .text(try json(mandate.credential)),
                mandate.merchantTokenIdentifier.map(SQLiteValue.text) ?? .null,
                try mandate.merchantTokenMetadata.map { .text(try json($0)) } ?? .null, .text(mandate.currency),
                mandate.network.map(SQLiteValue.text) ?? .null, .text(mandate.lastFour), .text(mandate.description),
                .text(mandate.state.rawValue), mandate.endedReason.map(SQLiteValue.text) ?? .null, .time(mandate.createdAt),
                .time(mandate.updatedAt), mandate.endedAt.map(SQLiteValue.time) ?? .null,
            ])
        try db.execute("UPDATE payments SET mandate_id = ? WHERE id = ?", [.text(mandate.id), .text(payment.id)])
        var named = payment
        named.mandateId = mandate.id
        try insertEvent(in: db, try WebhookEvent.make(.mandateCreated, mandate: mandate, payment: named, at: mandate.createdAt))
    }

    public func mandate(id: String) async throws -> MandateRecord? {
        try await mandates("WHERE id = ?", [.text(id)]).first
    }

    public func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        if let state {
            return try await mandates(
                "WHERE merchant = ? AND state = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                [.text(merchantIdentifier), .text(state.rawValue), .integer(Int64(limit))])
        }
        return try await mandates(
            "WHERE merchant = ? ORDER BY created_at DESC, rowid DESC LIMIT ?", [.text(merchantIdentifier), .integer(Int64(limit))])
    }

    public func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        try await mandates(
            "WHERE merchant = ? AND merchant_token_id = ? ORDER BY created_at DESC, rowid DESC",
            [.text(merchantIdentifier), .text(merchantTokenIdentifier)])
    }

    public func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        try await change(
            id: id, "state = 'ended', ended_reason = ?, ended_at = ?, updated_at = ?", [.text(reason), .time(date), .time(date)],
            event: .mandateEnded, at: date)
    }

    public func updateMandate(id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, at date: Date) async throws
        -> MandateRecord?
    {
        try await change(
            id: id, "merchant_token_metadata = ?, updated_at = ?", [try metadata.map { .text(try Self.json($0)) } ?? .null, .time(date)],
            event: .mandateUpdated, at: date)
    }

    /// A compare-and-set on `active` and its event, in one transaction.
    private func change(id: String, _ assignments: String, _ values: [SQLiteValue], event: WebhookEventType, at date: Date)
        async throws -> MandateRecord?
    {
        try await database.run { db -> MandateRecord? in
            try db.transaction {
                guard try db.execute("UPDATE mandates SET \(assignments) WHERE id = ? AND state = 'active'", values + [.text(id)]) == 1,
                    let mandate = try db.query("SELECT \(Self.mandateColumns) FROM mandates WHERE id = ?", [.text(id)]).first
                        .map(Self.mandate)
                else { return nil }
                try Self.insertEvent(in: db, try WebhookEvent.make(event, mandate: mandate, at: date))
                return mandate
            }
        }
    }

    private func mandates(_ clause: String, _ parameters: [SQLiteValue]) async throws -> [MandateRecord] {
        try await database.read { db in
            try db.query("SELECT \(Self.mandateColumns) FROM mandates \(clause)", parameters)
        }.map(Self.mandate)
    }

    static func mandate(_ row: [SQLiteValue]) -> MandateRecord {
        MandateRecord(
            id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "",
            kind: PaymentAgreement.Kind(rawValue: row[2].text ?? "") ?? .recurring, paymentId: row[3].text ?? "",
            orderId: row[4].text ?? "", processor: row[5].text ?? "",
            credential: (try? JSONDecoder().decode(StoredCredential.self, from: Data((row[6].text ?? "").utf8)))
                ?? StoredCredential(reference: ""),
            merchantTokenIdentifier: row[7].text,
            merchantTokenMetadata: row[8].text.flatMap {
                try? JSONDecoder().decode(DecryptedPayment.MerchantTokenMetadata.self, from: Data($0.utf8))
            }, currency: row[9].text ?? "", network: row[10].text, lastFour: row[11].text ?? "", description: row[12].text ?? "",
            state: MandateRecord.State(rawValue: row[13].text ?? "") ?? .ended, endedReason: row[14].text, createdAt: row[15].date,
            updatedAt: row[16].date, endedAt: row[17] == .null ? nil : row[17].date)
    }
}
