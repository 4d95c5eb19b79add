import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Orders.
extension PostgresStore {
    static let orderColumns = "id, merchant, state, priced, application_data, created_at, expires_at, price_version"

    public func insert(_ order: OrderRecord) async throws {
        let version: String?
        do {
            version = try await rows(try Self.insertion(order)).first?.optionalText("version")
        } catch let error as StoreError where error.code == .storage {
            throw StoreError(code: .storage, message: "order \(order.id) could not be stored: \(error.message)")
        }
        // A plain order has no payment request, so its moves need no read for it either.
        if let version, order.state == .open {
            try remember(order, version: version, attempts: 0, plain: true)
        }
    }

    /// The statement that writes a new order; it returns the row's version (`xmin`).
    static func insertion(_ order: OrderRecord) throws -> PostgresQuery {
        let priced = try json(order.priced)
        return """
            INSERT INTO orders (id, merchant, state, priced, application_data, created_at, expires_at, price_version)
            VALUES (\(order.id), \(order.merchantIdentifier), \(order.state.rawValue), \(priced), \(order.applicationData.bytea),
            \(order.createdAt), \(order.expiresAt), \(Int64(order.priceVersion))) RETURNING xmin::text AS version
            """
    }

    public func order(id: String) async throws -> OrderRecord? {
        try await rows("SELECT \(unescaped: Self.orderColumns) FROM orders WHERE id = \(id)::text", prepared: Statements.OrderRead.self)
            .first
            .map(Self.order)
    }

    static func order(_ row: PostgresRandomAccessRow) throws -> OrderRecord {
        OrderRecord(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"),
            state: OrderRecord.State(rawValue: try row.text("state")) ?? .open,
            priced: try decode(PricedOrder.self, try row.text("priced")), applicationData: try row.bytes("application_data"),
            createdAt: try row.date("created_at"), expiresAt: try row.optionalDate("expires_at"),
            priceVersion: Int(try row.integer("price_version")))
    }

    public func updateOpen(_ order: OrderRecord) async throws {
        forgetOrder(order.id)
        let priced = try Self.json(order.priced)
        let (version, attempts) = try await transaction { [self] connection in
            // The payments are counted under the order's lock: every claim writes the order first.
            let row = try await connection.rows(
                """
                SELECT state, price_version, (SELECT COUNT(*) FROM payments WHERE order_id = \(order.id)) AS n
                FROM orders WHERE id = \(order.id) FOR UPDATE
                """, self.logger
            ).first
            try OrderPricingPolicy.checkUpdate(
                order, found: try row.map { (OrderRecord.State(rawValue: try $0.text("state")), Int(try $0.integer("price_version"))) })
            let version = try await connection.rows(
                """
                UPDATE orders SET priced = \(priced), price_version = \(Int64(order.priceVersion)) WHERE id = \(order.id)
                RETURNING xmin::text AS version
                """, self.logger
            ).first?.optionalText("version")
            return (version, try row?.integer("n"))
        }
        if let version, let attempts { try remember(order, version: version, attempts: Int(attempts)) }
    }

}
