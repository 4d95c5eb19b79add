import ApplePay
import Foundation
import OrchardCore

/// Payment requests, their orders and their expiry.
extension SQLiteStore {
    static let requestColumns = "id, merchant, reference, metadata, cart, idempotency_key, fingerprint, expires_at, created_at"

    public func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) {
        let metadata = try Self.json(request.metadata)
        let cart = try Self.json(request.cart)
        let priced = try Self.json(order.priced)
        return try await database.run { db in
            let earlier = try db.query(
                """
                SELECT \(unescaped: Self.requestColumns) FROM payment_requests
                WHERE merchant = \(request.merchantIdentifier) AND idempotency_key = \(request.idempotencyKey)
                """
            ).first.map(Self.paymentRequest)
            if let earlier {
                return (try earlier.replay(for: request), false)
            }
            try Self.insert(order, priced: priced, in: db)
            try db.execute(
                """
                INSERT INTO payment_requests (\(unescaped: Self.requestColumns)) VALUES (
                \(request.id), \(request.merchantIdentifier), \(request.reference), \(metadata), \(cart), \(request.idempotencyKey),
                \(request.fingerprint), \(request.expiresAt), \(request.createdAt))
                """)
            return (request, true)
        }
    }

    public func paymentRequest(id: String) async throws -> PaymentRequestRecord? {
        try await database.read { db in try Self.paymentRequest(in: db, id: id) }
    }

    public func cancelOpenPaymentRequest(id: String, at date: Date) async throws -> Bool {
        try await database.run { db in
            guard let request = try Self.paymentRequest(in: db, id: id),
                try db.execute("UPDATE orders SET state = 'cancelled' WHERE id = \(id) AND state = 'open'") == 1
            else { return false }
            try Self.insertEvent(
                in: db,
                try WebhookEvent.make(
                    .paymentRequestCancelled, merchantIdentifier: request.merchantIdentifier, payment: nil, request: request, at: date))
            return true
        }
    }

    /// The order's compare-and-set, then its request's expiry, in one transaction.
    public func extendPaymentRequest(id: String, until: Date, at date: Date) async throws -> Bool {
        try await database.run { db in
            guard try Self.paymentRequest(in: db, id: id) != nil,
                try db.execute(
                    """
                    UPDATE orders SET expires_at = \(until) WHERE id = \(id) AND state IN ('open', 'pending', 'unknown')
                    AND expires_at > \(date) AND expires_at < \(until)
                    """) == 1
            else { return false }
            return try db.execute("UPDATE payment_requests SET expires_at = \(until) WHERE id = \(id)") == 1
        }
    }

    public func expireOrders(at date: Date, limit: Int) async throws -> [String] {
        try await database.run { db in
            let due = try db.query(
                "SELECT id, merchant FROM orders WHERE state = 'open' AND expires_at IS NOT NULL AND expires_at <= \(date) LIMIT \(limit)")
            var expired: [String] = []
            for row in due {
                let id = row.text("id")
                guard try db.execute("UPDATE orders SET state = 'expired' WHERE id = \(id) AND state = 'open'") == 1 else { continue }
                // A checkout-page order has no payment request, and the shop no event to hear.
                if let request = try Self.paymentRequest(in: db, id: id) {
                    try Self.insertEvent(
                        in: db,
                        try WebhookEvent.make(
                            .paymentRequestExpired, merchantIdentifier: row.text("merchant"), payment: nil, request: request, at: date))
                }
                expired.append(id)
            }
            return expired
        }
    }

    static func paymentRequest(in db: SQLiteDatabase, id: String) throws -> PaymentRequestRecord? {
        try db.query("SELECT \(unescaped: requestColumns) FROM payment_requests WHERE id = \(id)").first.map(paymentRequest)
    }

    static func paymentRequest(_ row: SQLiteRow) -> PaymentRequestRecord {
        PaymentRequestRecord(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), reference: row.text("reference"),
            metadata: row.json("metadata", as: [String: String].self) ?? [:],
            cart: row.json("cart", as: ShopCart.self) ?? ShopCart(currency: "", countryCode: "", amount: 0),
            idempotencyKey: row.text("idempotency_key"), fingerprint: row.blob("fingerprint"), expiresAt: row.date("expires_at"),
            createdAt: row.date("created_at"))
    }
}
