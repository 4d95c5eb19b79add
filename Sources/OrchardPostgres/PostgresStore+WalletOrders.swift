import Foundation
import OrchardCore
import PostgresNIO
import WalletOrders

/// Wallet orders, their devices and the push outbox: each change one transaction, each update a
/// compare-and-set on the order's version, pushes leased with `FOR UPDATE SKIP LOCKED`.
extension PostgresStore {
    static let walletOrderColumns = "order_type, order_id, merchant, payment_id, token_hash, created_at, updated_at, version, fulfillments"
    static let walletPushColumns = "id, merchant, order_type, push_token, attempts, created_at, next_attempt_at"

    public func createWalletOrder(_ order: WalletOrderRecord) async throws -> (record: WalletOrderRecord, created: Bool) {
        let fulfillments = try Self.json(order.fulfillments)
        let inserted = try await rows(
            """
            INSERT INTO wallet_orders (\(unescaped: Self.walletOrderColumns)) VALUES (\(order.orderTypeIdentifier),
            \(order.orderIdentifier), \(order.merchantIdentifier), \(order.paymentId), \(order.authenticationTokenHash.bytea),
            \(order.createdAt), \(order.updatedAt), \(Int64(order.version)), \(fulfillments))
            ON CONFLICT (payment_id) DO NOTHING RETURNING order_id
            """)
        if !inserted.isEmpty { return (order, true) }
        guard let existing = try await walletOrder(paymentId: order.paymentId) else {
            throw StoreError(code: .storage, message: "wallet order for payment \(order.paymentId) vanished")
        }
        return (existing, false)
    }

    public func walletOrder(orderTypeIdentifier: String, orderIdentifier: String) async throws -> WalletOrderRecord? {
        try await rows(
            """
            SELECT \(unescaped: Self.walletOrderColumns) FROM wallet_orders
            WHERE order_type = \(orderTypeIdentifier) AND order_id = \(orderIdentifier)
            """
        ).first.flatMap(Self.walletOrder)
    }

    public func walletOrder(paymentId: String) async throws -> WalletOrderRecord? {
        try await rows("SELECT \(unescaped: Self.walletOrderColumns) FROM wallet_orders WHERE payment_id = \(paymentId)").first
            .flatMap(Self.walletOrder)
    }

    public func updateWalletOrder(_ next: WalletOrderRecord, event: WebhookEvent?) async throws -> Int? {
        let fulfillments = try Self.json(next.fulfillments)
        return try await transaction { [self] connection in
            let written = try await connection.rows(
                """
                UPDATE wallet_orders SET updated_at = \(next.updatedAt), version = \(Int64(next.version)), fulfillments = \(fulfillments)
                WHERE order_type = \(next.orderTypeIdentifier) AND order_id = \(next.orderIdentifier)
                AND version = \(Int64(next.version - 1)) RETURNING version
                """, logger)
            guard written.count == 1 else { return nil }
            let devices = try await connection.rows(
                """
                SELECT push_token FROM wallet_order_devices WHERE order_type = \(next.orderTypeIdentifier)
                AND order_id = \(next.orderIdentifier) ORDER BY push_token
                """, logger
            ).map { try $0.text("push_token") }
            for token in devices {
                try await connection.query(
                    """
                    INSERT INTO wallet_order_pushes (\(unescaped: Self.walletPushColumns)) VALUES (\(RecordIdentifier.random()),
                    \(next.merchantIdentifier), \(next.orderTypeIdentifier), \(token), 0, \(next.updatedAt), \(next.updatedAt))
                    ON CONFLICT (push_token, order_type) DO NOTHING
                    """, logger: logger)
            }
            if let event { try await insertEvent(event, on: connection) }
            return devices.count
        }
    }

    public func registerWalletDevice(_ registration: WalletOrderRegistration, limit: Int) async throws -> Bool? {
        try await transaction { [self] connection in
            // The order's row, locked: two registrations of one order count its devices one after the other.
            _ = try await connection.rows(
                """
                SELECT version FROM wallet_orders WHERE order_type = \(registration.orderTypeIdentifier)
                AND order_id = \(registration.orderIdentifier) FOR UPDATE
                """, logger)
            let updated = try await connection.rows(
                """
                UPDATE wallet_order_devices SET push_token = \(registration.pushToken) WHERE device_id = \(registration.deviceIdentifier)
                AND order_type = \(registration.orderTypeIdentifier) AND order_id = \(registration.orderIdentifier) RETURNING device_id
                """, logger)
            if !updated.isEmpty { return false }
            let count =
                try await connection.rows(
                    """
                    SELECT count(*) AS n FROM wallet_order_devices WHERE order_type = \(registration.orderTypeIdentifier)
                    AND order_id = \(registration.orderIdentifier)
                    """, logger
                ).first.map { try $0.integer("n") } ?? 0
            guard count < limit else { return nil }
            try await connection.query(
                """
                INSERT INTO wallet_order_devices (device_id, order_type, order_id, push_token, created_at)
                VALUES (\(registration.deviceIdentifier), \(registration.orderTypeIdentifier), \(registration.orderIdentifier),
                \(registration.pushToken), \(registration.createdAt))
                """, logger: logger)
            return true
        }
    }

    public func unregisterWalletDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String) async throws
        -> Bool
    {
        try await rows(
            """
            DELETE FROM wallet_order_devices WHERE device_id = \(deviceIdentifier) AND order_type = \(orderTypeIdentifier)
            AND order_id = \(orderIdentifier) RETURNING device_id
            """
        ).count == 1
    }

    public func walletOrders(deviceIdentifier: String, orderTypeIdentifier: String, changedAfter since: Date?, limit: Int) async throws
        -> [WalletOrderRecord]
    {
        try await rows(
            """
            SELECT \(unescaped: Self.qualified(Self.walletOrderColumns, by: "o"))
            FROM wallet_order_devices d JOIN wallet_orders o ON o.order_type = d.order_type AND o.order_id = d.order_id
            WHERE d.device_id = \(deviceIdentifier) AND d.order_type = \(orderTypeIdentifier)
            AND (\(since)::timestamptz IS NULL OR o.updated_at > \(since))
            ORDER BY o.updated_at, o.order_id COLLATE "C" LIMIT \(Int64(max(limit, 0)))
            """
        ).compactMap(Self.walletOrder)
    }

    public func leaseWalletPushes(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [WalletOrderPush] {
        let leased = try await rows(
            """
            WITH due AS (
                SELECT id, next_attempt_at AS due_at, seq FROM wallet_order_pushes WHERE next_attempt_at <= \(date)
                ORDER BY next_attempt_at, seq LIMIT \(Int64(max(limit, 0))) FOR UPDATE SKIP LOCKED)
            UPDATE wallet_order_pushes p SET next_attempt_at = \(leaseEnd) FROM due WHERE p.id = due.id
            RETURNING \(unescaped: Self.qualified(Self.walletPushColumns, by: "p")), due.due_at, due.seq
            """)
        // RETURNING comes in no particular order: the longest due first.
        return try leased.map { row in (try row.date("due_at"), try row.integer("seq"), try Self.walletPush(row)) }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
    }

    public func recordWalletPush(_ push: WalletOrderPush, outcome: WalletOrderPushOutcome) async throws -> Bool {
        let (id, attempts) = (push.id, Int64(push.attempts))
        switch outcome {
        case .retry(let at, _):
            return try await rows(
                "UPDATE wallet_order_pushes SET attempts = attempts + 1, next_attempt_at = \(at) WHERE id = \(id) AND attempts = \(attempts) RETURNING id"
            ).count == 1
        case .delivered, .dropped:
            return try await rows("DELETE FROM wallet_order_pushes WHERE id = \(id) AND attempts = \(attempts) RETURNING id").count == 1
        case .unregistered:
            return try await transaction { [self] connection in
                guard
                    try await connection.rows(
                        "DELETE FROM wallet_order_pushes WHERE id = \(id) AND attempts = \(attempts) RETURNING id", logger
                    ).count == 1
                else {
                    return false
                }
                try await connection.query(
                    "DELETE FROM wallet_order_devices WHERE push_token = \(push.pushToken) AND order_type = \(push.orderTypeIdentifier)",
                    logger: logger)
                return true
            }
        }
    }

    static func walletOrder(_ row: PostgresRandomAccessRow) throws -> WalletOrderRecord? {
        guard let fulfillments = try? decode([WalletOrder.Fulfillment].self, try row.text("fulfillments")) else { return nil }
        return WalletOrderRecord(
            orderIdentifier: try row.text("order_id"), orderTypeIdentifier: try row.text("order_type"),
            merchantIdentifier: try row.text("merchant"), paymentId: try row.text("payment_id"),
            authenticationTokenHash: try row.bytes("token_hash"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), version: Int(try row.integer("version")), fulfillments: fulfillments)
    }

    static func walletPush(_ row: PostgresRandomAccessRow) throws -> WalletOrderPush {
        WalletOrderPush(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"), orderTypeIdentifier: try row.text("order_type"),
            pushToken: try row.text("push_token"), attempts: Int(try row.integer("attempts")), createdAt: try row.date("created_at"),
            nextAttemptAt: try row.date("next_attempt_at"))
    }
}
