import Foundation
import OrchardCore
import WalletOrders

/// Wallet orders, their devices and the push outbox: each change one transaction, each update a
/// compare-and-set on the order's version.
extension SQLiteStore {
    static let walletOrderColumns = "order_type, order_id, merchant, payment_id, token_hash, created_at, updated_at, version, fulfillments"
    static let walletPushColumns = "id, merchant, order_type, push_token, attempts, created_at, next_attempt_at"

    public func createWalletOrder(_ order: WalletOrderRecord) async throws -> (record: WalletOrderRecord, created: Bool) {
        let fulfillments = try Self.json(order.fulfillments)
        return try await database.run { db in
            let existing = try db.query(
                "SELECT \(unescaped: Self.walletOrderColumns) FROM wallet_orders WHERE payment_id = \(order.paymentId)")
            if let found = existing.first.flatMap(Self.walletOrder) { return (found, false) }
            try db.execute(
                """
                INSERT INTO wallet_orders (\(unescaped: Self.walletOrderColumns)) VALUES (\(order.orderTypeIdentifier),
                \(order.orderIdentifier), \(order.merchantIdentifier), \(order.paymentId), \(order.authenticationTokenHash),
                \(order.createdAt), \(order.updatedAt), \(order.version), \(fulfillments))
                """)
            return (order, true)
        }
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
        return try await database.run { db in
            let written = try db.execute(
                """
                UPDATE wallet_orders SET updated_at = \(next.updatedAt), version = \(next.version), fulfillments = \(fulfillments)
                WHERE order_type = \(next.orderTypeIdentifier) AND order_id = \(next.orderIdentifier) AND version = \(next.version - 1)
                """)
            guard written == 1 else { return nil }
            let devices = try db.query(
                """
                SELECT push_token FROM wallet_order_devices WHERE order_type = \(next.orderTypeIdentifier)
                AND order_id = \(next.orderIdentifier)
                """
            ).map { $0.text("push_token") }
            for token in devices {
                try db.execute(
                    """
                    INSERT OR IGNORE INTO wallet_order_pushes (\(unescaped: Self.walletPushColumns)) VALUES (\(RecordIdentifier.random()),
                    \(next.merchantIdentifier), \(next.orderTypeIdentifier), \(token), 0, \(next.updatedAt), \(next.updatedAt))
                    """)
            }
            if let event { try Self.insertEvent(in: db, event) }
            return devices.count
        }
    }

    public func registerWalletDevice(_ registration: WalletOrderRegistration, limit: Int) async throws -> Bool? {
        try await database.run { db in
            let updated = try db.execute(
                """
                UPDATE wallet_order_devices SET push_token = \(registration.pushToken) WHERE device_id = \(registration.deviceIdentifier)
                AND order_type = \(registration.orderTypeIdentifier) AND order_id = \(registration.orderIdentifier)
                """)
            if updated == 1 { return false }
            let count =
                try db.query(
                    """
                    SELECT count(*) AS n FROM wallet_order_devices WHERE order_type = \(registration.orderTypeIdentifier)
                    AND order_id = \(registration.orderIdentifier)
                    """
                ).first?.int("n") ?? 0
            guard count < limit else { return nil }
            try db.execute(
                """
                INSERT INTO wallet_order_devices (device_id, order_type, order_id, push_token, created_at)
                VALUES (\(registration.deviceIdentifier), \(registration.orderTypeIdentifier), \(registration.orderIdentifier),
                \(registration.pushToken), \(registration.createdAt))
                """)
            return true
        }
    }

    public func unregisterWalletDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String) async throws
        -> Bool
    {
        try await write(
            """
            DELETE FROM wallet_order_devices WHERE device_id = \(deviceIdentifier) AND order_type = \(orderTypeIdentifier)
            AND order_id = \(orderIdentifier)
            """) == 1
    }

    public func walletOrders(deviceIdentifier: String, orderTypeIdentifier: String, changedAfter since: Date?, limit: Int) async throws
        -> [WalletOrderRecord]
    {
        let after: SQLiteStatement = since.map { "AND o.updated_at > \($0)" } ?? ""
        return try await rows(
            """
            SELECT o.order_type AS order_type, o.order_id AS order_id, o.merchant AS merchant, o.payment_id AS payment_id,
            o.token_hash AS token_hash, o.created_at AS created_at, o.updated_at AS updated_at, o.version AS version,
            o.fulfillments AS fulfillments
            FROM wallet_order_devices d JOIN wallet_orders o ON o.order_type = d.order_type AND o.order_id = d.order_id
            WHERE d.device_id = \(deviceIdentifier) AND d.order_type = \(orderTypeIdentifier) \(after)
            ORDER BY o.updated_at, o.order_id LIMIT \(max(limit, 0))
            """
        ).compactMap(Self.walletOrder)
    }

    public func leaseWalletPushes(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [WalletOrderPush] {
        try await database.run { db in
            let due = try db.query(
                """
                SELECT \(unescaped: Self.walletPushColumns) FROM wallet_order_pushes WHERE next_attempt_at <= \(date)
                ORDER BY next_attempt_at, rowid LIMIT \(max(limit, 0))
                """
            ).map(Self.walletPush)
            for push in due { try db.execute("UPDATE wallet_order_pushes SET next_attempt_at = \(leaseEnd) WHERE id = \(push.id)") }
            return due.map { push in
                var leased = push
                leased.nextAttemptAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func recordWalletPush(_ push: WalletOrderPush, outcome: WalletOrderPushOutcome) async throws -> Bool {
        try await database.run { db in
            let key: SQLiteStatement = "id = \(push.id) AND attempts = \(push.attempts)"
            switch outcome {
            case .retry(let at, _):
                return try db.execute("UPDATE wallet_order_pushes SET attempts = attempts + 1, next_attempt_at = \(at) WHERE \(key)") == 1
            case .delivered, .dropped:
                return try db.execute("DELETE FROM wallet_order_pushes WHERE \(key)") == 1
            case .unregistered:
                guard try db.execute("DELETE FROM wallet_order_pushes WHERE \(key)") == 1 else { return false }
                try db.execute(
                    "DELETE FROM wallet_order_devices WHERE push_token = \(push.pushToken) AND order_type = \(push.orderTypeIdentifier)")
                return true
            }
        }
    }

    static func walletOrder(_ row: SQLiteRow) -> WalletOrderRecord? {
        guard let fulfillments = row.json("fulfillments", as: [WalletOrder.Fulfillment].self) else { return nil }
        return WalletOrderRecord(
            orderIdentifier: row.text("order_id"), orderTypeIdentifier: row.text("order_type"), merchantIdentifier: row.text("merchant"),
            paymentId: row.text("payment_id"), authenticationTokenHash: row.blob("token_hash"), createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at"), version: row.int("version"), fulfillments: fulfillments)
    }

    static func walletPush(_ row: SQLiteRow) -> WalletOrderPush {
        WalletOrderPush(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), orderTypeIdentifier: row.text("order_type"),
            pushToken: row.text("push_token"), attempts: row.int("attempts"), createdAt: row.date("created_at"),
            nextAttemptAt: row.date("next_attempt_at"))
    }
}
