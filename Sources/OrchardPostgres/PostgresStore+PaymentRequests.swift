import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Payment requests, their orders and their expiry.
extension PostgresStore {
    static let requestColumns = "id, merchant, reference, metadata, cart, idempotency_key, fingerprint, expires_at, created_at"

    public func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) {
        let metadata = try Self.json(request.metadata)
        let cart = try Self.json(request.cart)
        let insertOrder = try Self.insertion(order)
        return try await transaction { [self] connection in
            // Two instances given the same key at once: the second waits, then finds the first's request.
            try await connection.query(
                """
                SELECT pg_advisory_xact_lock(\(LockSpace.idempotencyKey.rawValue),
                hashtext(\(request.merchantIdentifier) || ' ' || \(request.idempotencyKey)))
                """, logger: logger)
            let earlier = try await connection.rows(
                """
                SELECT \(unescaped: Self.requestColumns) FROM payment_requests
                WHERE merchant = \(request.merchantIdentifier) AND idempotency_key = \(request.idempotencyKey)
                """, logger
            ).first.map(Self.paymentRequest)
            if let earlier {
                return (try earlier.replay(for: request), false)
            }
            try await connection.query(insertOrder, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO payment_requests (\(unescaped: Self.requestColumns)) VALUES (
                \(request.id), \(request.merchantIdentifier), \(request.reference), \(metadata), \(cart), \(request.idempotencyKey),
                \(request.fingerprint.bytea), \(request.expiresAt), \(request.createdAt))
                """, logger: logger)
            return (request, true)
        }
    }

    public func paymentRequest(id: String) async throws -> PaymentRequestRecord? {
        try await rows("SELECT \(unescaped: Self.requestColumns) FROM payment_requests WHERE id = \(id)").first.map(Self.paymentRequest)
    }

    static func paymentRequest(on connection: PostgresConnection, id: String, logger: Logger) async throws -> PaymentRequestRecord? {
        try await connection.rows("SELECT \(unescaped: requestColumns) FROM payment_requests WHERE id = \(id)", logger).first.map(
            paymentRequest)
    }

    static func paymentRequest(_ row: PostgresRandomAccessRow) throws -> PaymentRequestRecord {
        PaymentRequestRecord(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"), reference: try row.text("reference"),
            metadata: try decode([String: String].self, try row.text("metadata")), cart: try decode(ShopCart.self, try row.text("cart")),
            idempotencyKey: try row.text("idempotency_key"), fingerprint: try row.bytes("fingerprint"),
            expiresAt: try row.date("expires_at"), createdAt: try row.date("created_at"))
    }

    /// The order's compare-and-set and its event, in one transaction.
    public func cancelOpenPaymentRequest(id: String, at date: Date) async throws -> Bool {
        try await transaction { [self] connection in
            // A checkout-page order has no payment request: the shop has none to withdraw.
            guard let request = try await Self.paymentRequest(on: connection, id: id, logger: logger) else { return false }
            let moved = try await connection.rows(
                "UPDATE orders SET state = 'cancelled' WHERE id = \(id) AND state = 'open' RETURNING id", logger)
            guard !moved.isEmpty else { return false }
            try await insertEvent(
                try WebhookEvent.make(
                    .paymentRequestCancelled, merchantIdentifier: request.merchantIdentifier, payment: nil, request: request, at: date),
                on: connection)
            return true
        }
    }

    /// The order's compare-and-set, then its request's expiry, in one transaction.
    public func extendPaymentRequest(id: String, until: Date, at date: Date) async throws -> Bool {
        try await transaction { [self] connection in
            let moved = try await connection.rows(
                """
                UPDATE orders SET expires_at = \(until) WHERE id = \(id) AND state IN ('open', 'pending', 'unknown')
                AND expires_at > \(date) AND expires_at < \(until)
                AND EXISTS (SELECT 1 FROM payment_requests WHERE id = \(id)) RETURNING id
                """, logger)
            guard !moved.isEmpty else { return false }
            let request = try await connection.rows(
                "UPDATE payment_requests SET expires_at = \(until) WHERE id = \(id) RETURNING id", logger)
            return !request.isEmpty
        }
    }

    /// One statement closes the due orders it could lock (others are being claimed or expired
    /// elsewhere right now, and are passed by); their events are written in the same transaction.
    public func expireOrders(at date: Date, limit: Int) async throws -> [String] {
        try await transaction { [self] connection in
            let expired = try await connection.rows(
                """
                WITH due AS (
                    SELECT id FROM orders WHERE state = 'open' AND expires_at <= \(date) ORDER BY expires_at LIMIT \(Int64(limit))
                    FOR UPDATE SKIP LOCKED)
                UPDATE orders o SET state = 'expired' FROM due WHERE o.id = due.id AND o.state = 'open' RETURNING o.id, o.merchant
                """, logger)
            var ids: [String] = []
            for row in expired {
                let id = try row.text("id")
                // A checkout-page order has no payment request, and the shop no event to hear.
                if let request = try await Self.paymentRequest(on: connection, id: id, logger: logger) {
                    try await insertEvent(
                        try WebhookEvent.make(
                            .paymentRequestExpired, merchantIdentifier: try row.text("merchant"), payment: nil, request: request, at: date),
                        on: connection)
                }
                ids.append(id)
            }
            return ids
        }
    }
}
