import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Mandates: created in the move that authorizes their first payment, then ended or updated by
/// compare-and-set on `active`, each change with its webhook event in the same transaction.
extension PostgresStore {
    static let mandateColumns = """
        id, merchant, kind, payment_id, order_id, processor, credential, merchant_token_id, merchant_token_metadata, currency, \
        network, last_four, description, state, ended_reason, created_at, updated_at, ended_at
        """
    /// What is read: an update alone sets `merchant_token` (Apple's MPAN details), so an insert
    /// leaves it NULL (migration 12).
    static let mandateReadColumns = mandateColumns + ", merchant_token"

    public func mandate(id: String) async throws -> MandateRecord? {
        try await mandates("WHERE id = \(id)").first
    }

    public func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        try await mandates(
            """
            WHERE merchant = \(merchantIdentifier) AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
            ORDER BY created_at DESC, seq DESC LIMIT \(Int64(limit))
            """)
    }

    public func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        try await mandates(
            "WHERE merchant = \(merchantIdentifier) AND merchant_token_id = \(merchantTokenIdentifier) ORDER BY created_at DESC, seq DESC")
    }

    public func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        try await change(
            """
            UPDATE mandates SET state = 'ended', ended_reason = \(reason), ended_at = \(date), updated_at = \(date)
            WHERE id = \(id) AND state = 'active' RETURNING \(unescaped: Self.mandateReadColumns)
            """, event: .mandateEnded, at: date)
    }

    public func updateMandate(
        id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, merchantToken: MerchantTokenDetails?, at date: Date
    ) async throws -> MandateRecord? {
        let (text, details) = (try metadata.map(Self.json), try merchantToken.map(Self.json))
        return try await change(
            """
            UPDATE mandates SET merchant_token_metadata = \(text), merchant_token = \(details), updated_at = \(date)
            WHERE id = \(id) AND state = 'active' RETURNING \(unescaped: Self.mandateReadColumns)
            """, event: .mandateUpdated, at: date)
    }

    /// A compare-and-set on `active` (the statement) and its event, in one transaction.
    private func change(_ statement: PostgresQuery, event: WebhookEventType, at date: Date) async throws -> MandateRecord? {
        try await transaction { [self] connection -> MandateRecord? in
            guard let mandate = try await connection.rows(statement, logger).first.map(Self.mandate) else { return nil }
            try await insertEvent(try WebhookEvent.make(event, mandate: mandate, at: date), on: connection)
            return mandate
        }
    }

    private func mandates(_ clause: PostgresQuery) async throws -> [MandateRecord] {
        try await rows(PostgresQuery(unsafeSQL: "SELECT \(Self.mandateReadColumns) FROM mandates " + clause.sql, binds: clause.binds))
            .map(Self.mandate)
    }

    static func mandate(_ row: PostgresRandomAccessRow) throws -> MandateRecord {
        MandateRecord(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"),
            kind: PaymentAgreement.Kind(rawValue: try row.text("kind")) ?? .recurring, paymentId: try row.text("payment_id"),
            orderId: try row.text("order_id"), processor: try row.text("processor"),
            credential: try decode(StoredCredential.self, try row.text("credential")),
            merchantTokenIdentifier: try row.optionalText("merchant_token_id"),
            merchantTokenMetadata: try row.optionalText("merchant_token_metadata").flatMap {
                try? decode(DecryptedPayment.MerchantTokenMetadata.self, $0)
            },
            merchantToken: try row.optionalText("merchant_token").flatMap { try? decode(MerchantTokenDetails.self, $0) },
            currency: try row.text("currency"), network: try row.optionalText("network"), lastFour: try row.text("last_four"),
            description: try row.text("description"), state: MandateRecord.State(rawValue: try row.text("state")) ?? .ended,
            endedReason: try row.optionalText("ended_reason"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), endedAt: try row.optionalDate("ended_at"))
    }
}
