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
    /// What is read: an update alone sets `merchant_token` (Apple's MPAN details), so an insert leaves it NULL.
    static let mandateReadColumns = mandateColumns + ", merchant_token"

    /// Inserts the mandate a move creates, names it on its payment and reports it, inside the move's transaction.
    static func insertMandate(_ mandate: MandateRecord, payment: PaymentRecord, in db: SQLiteDatabase) throws {
        let (credential, metadata) = (try json(mandate.credential), try mandate.merchantTokenMetadata.map(json))
        try db.execute(
            """
            INSERT INTO mandates (\(unescaped: mandateColumns)) VALUES (
            \(mandate.id), \(mandate.merchantIdentifier), \(mandate.kind), \(mandate.paymentId), \(mandate.orderId), \(mandate.processor),
            \(credential), \(mandate.merchantTokenIdentifier), \(metadata), \(mandate.currency), \(mandate.network),
            \(mandate.lastFour), \(mandate.description), \(mandate.state), \(mandate.endedReason), \(mandate.createdAt),
            \(mandate.updatedAt), \(mandate.endedAt))
            """)
        try db.execute("UPDATE payments SET mandate_id = \(mandate.id) WHERE id = \(payment.id)")
        var named = payment
        named.mandateId = mandate.id
        try insertEvent(in: db, try WebhookEvent.make(.mandateCreated, mandate: mandate, payment: named, at: mandate.createdAt))
    }

    public func mandate(id: String) async throws -> MandateRecord? {
        try await mandates("WHERE id = \(id)").first
    }

    public func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        if let state {
            return try await mandates(
                "WHERE merchant = \(merchantIdentifier) AND state = \(state) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        }
        return try await mandates("WHERE merchant = \(merchantIdentifier) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
    }

    public func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        try await mandates(
            "WHERE merchant = \(merchantIdentifier) AND merchant_token_id = \(merchantTokenIdentifier) ORDER BY created_at DESC, rowid DESC"
        )
    }

    public func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        try await change(
            id: id, "state = 'ended', ended_reason = \(reason), ended_at = \(date), updated_at = \(date)", event: .mandateEnded, at: date)
    }

    public func updateMandate(
        id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, merchantToken: MerchantTokenDetails?, at date: Date
    ) async throws -> MandateRecord? {
        let (metadata, details) = (try metadata.map(Self.json), try merchantToken.map(Self.json))
        return try await change(
            id: id, "merchant_token_metadata = \(metadata), merchant_token = \(details), updated_at = \(date)", event: .mandateUpdated,
            at: date)
    }

    /// A compare-and-set on `active` and its event, in one transaction.
    private func change(id: String, _ assignments: SQLiteStatement, event: WebhookEventType, at date: Date) async throws
        -> MandateRecord?
    {
        try await database.run { db -> MandateRecord? in
            guard try db.execute("UPDATE mandates SET \(assignments) WHERE id = \(id) AND state = 'active'") == 1,
                let mandate = try db.query("SELECT \(unescaped: Self.mandateReadColumns) FROM mandates WHERE id = \(id)").first
                    .map(Self.mandate)
            else { return nil }
            try Self.insertEvent(in: db, try WebhookEvent.make(event, mandate: mandate, at: date))
            return mandate
        }
    }

    private func mandates(_ clause: SQLiteStatement) async throws -> [MandateRecord] {
        try await rows("SELECT \(unescaped: Self.mandateReadColumns) FROM mandates \(clause)").map(Self.mandate)
    }

    static func mandate(_ row: SQLiteRow) -> MandateRecord {
        MandateRecord(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), kind: row.value("kind") ?? .recurring,
            paymentId: row.text("payment_id"), orderId: row.text("order_id"), processor: row.text("processor"),
            credential: row.json("credential", as: StoredCredential.self) ?? StoredCredential(reference: ""),
            merchantTokenIdentifier: row.optionalText("merchant_token_id"),
            merchantTokenMetadata: row.json("merchant_token_metadata", as: DecryptedPayment.MerchantTokenMetadata.self),
            merchantToken: row.json("merchant_token", as: MerchantTokenDetails.self), currency: row.text("currency"),
            network: row.optionalText("network"), lastFour: row.text("last_four"),
            description: row.text("description"), state: row.value("state") ?? .ended, endedReason: row.optionalText("ended_reason"),
            createdAt: row.date("created_at"), updatedAt: row.date("updated_at"), endedAt: row.optionalDate("ended_at"))
    }
}
