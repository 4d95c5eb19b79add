import ApplePay
import Foundation
import OrchardCore
import PostgresNIO
import Synchronization

/// An open order as this store wrote it (created or repriced), kept until a claim takes it: the
/// engine's read of the order before its claim (``PostgresStore/claimableOrder(id:remembered:)``)
/// is then answered without a round trip. It is only a guess: the claim's compare-and-set
/// requires the row version it was written at, so an order another instance moved, repriced,
/// expired or retired since fails the claim, writing nothing, and the engine decides again from
/// a read (``PaymentClaimBasis/remembered``). A class, not a struct: an order is 832 bytes
/// inline, and a dictionary keeps its values inline in a table up to twice the size of its
/// count: 3.2 KB an order, measured, against 1.3 KB with the order behind a reference.
final class RememberedOrder: Sendable {
    let order: OrderRecord
    /// The row's `xmin` as written.
    let version: String
    /// Its payments when it was written (all resolved: the order was open).
    let attempts: Int
    /// A plain order (created without a payment request): its moves report only its merchant.
    let plain: Bool

    init(order: OrderRecord, version: String, attempts: Int, plain: Bool = false) {
        self.order = order
        self.version = version
        self.attempts = attempts
        self.plain = plain
    }
}

/// The remembered orders, the oldest forgotten first once there are ``limit``: a checkout pays
/// within minutes of creating its order, and many orders are never paid.
struct RememberedOrders: Sendable {
    /// 16,384 orders: a shop creating a thousand orders a minute keeps a quarter of an hour of
    /// them. An order not remembered is read, one more round trip. Each costs about 1.3 KB with a
    /// one-line cart (measured by the process's resident size), about 21 MB at the limit; kept
    /// as the JSON text written it took less, but decoding it again cost each authorization
    /// about 35 µs of CPU, more than the rest of its store calls.
    static let limit = 16_384

    private var orders: [String: RememberedOrder] = [:]
    /// IDs in the order they were remembered, from `head` on; a forgotten one stays until passed.
    private var queue: [String] = []
    private var head = 0

    subscript(id: String) -> RememberedOrder? { orders[id] }

    mutating func insert(_ order: RememberedOrder) {
        orders[order.order.id] = order
        queue.append(order.order.id)
        while orders.count > Self.limit, head < queue.count {
            orders.removeValue(forKey: queue[head])
            head += 1
        }
        // The queue never holds more than twice the limit: claimed orders leave their IDs behind.
        if queue.count - head > 2 * Self.limit || head > Self.limit {
            queue = queue[head...].filter { orders[$0] != nil }
            head = 0
        }
    }

    mutating func remove(_ id: String) { orders.removeValue(forKey: id) }
}

extension PostgresStore {

    /// The order with what its claim decides from: as this store last wrote it, if `remembered`
    /// allows and it has one, or else read with the claim's snapshot in one statement. The
    /// transaction ID is not known yet: the write's compare-and-set finds it unused, or the claim
    /// reads again and reports it replayed.
    public func claimableOrder(id: String, remembered: Bool) async throws -> ClaimableOrder? {
        if remembered, let kept = rememberedOrders.withLock({ $0[id] }) {
            // Kept for the moves from now, as a read would keep it: the claim and its move follow.
            if kept.plain { remember(MoveContext(merchant: kept.order.merchantIdentifier), of: id) }
            let snapshot = PaymentClaimSnapshot(
                order: .init(state: kept.order.state, priceVersion: kept.order.priceVersion, expiresAt: kept.order.expiresAt),
                transactionUsed: false, unknownAttempt: nil, attempts: kept.attempts)
            return ClaimableOrder(order: kept.order, basis: PaymentClaimBasis(snapshot: snapshot, version: kept.version, remembered: true))
        }
        let row = try await rows(
            """
            SELECT \(unescaped: Self.qualified(Self.orderColumns, by: "o")), o.xmin::text AS version, o.merchant AS order_merchant,
            (SELECT COUNT(*) FROM payments WHERE order_id = o.id) AS n, u.id AS u_id, u.sends, \(unescaped: Self.requestRead)
            FROM orders o LEFT JOIN LATERAL (
                SELECT id, sends FROM payments WHERE order_id = o.id AND state = 'unknown' ORDER BY created_at DESC, seq DESC LIMIT 1
            ) AS u ON true LEFT JOIN payment_requests r ON r.id = o.id
            WHERE o.id = \(id)::text
            """, prepared: Statements.ClaimableOrderRead.self
        ).first
        guard let row else { return nil }
        let order = try Self.order(row)
        remember(try MoveContext(row), of: id)
        let snapshot = PaymentClaimSnapshot(
            order: .init(state: order.state, priceVersion: order.priceVersion, expiresAt: order.expiresAt), transactionUsed: false,
            unknownAttempt: try row.optionalText("u_id").map { .init(id: $0, sends: Int(try row.optionalInteger("sends") ?? 1)) },
            attempts: Int(try row.integer("n")))
        return ClaimableOrder(order: order, basis: PaymentClaimBasis(snapshot: snapshot, version: try row.text("version")))
    }

    /// Keeps `order`, written at row version `version` with `attempts` payments (`plain`: created
    /// without a payment request), as a read of it would return it: its pricing as decoded from
    /// the JSON written, its times as stored.
    func remember(_ order: OrderRecord, version: String, attempts: Int, plain: Bool = false) throws {
        var stored = order
        stored.priced = try Self.decode(PricedOrder.self, try Self.json(order.priced))
        stored.createdAt = Self.stored(order.createdAt)
        stored.expiresAt = order.expiresAt.map(Self.stored)
        let kept = RememberedOrder(order: stored, version: version, attempts: attempts, plain: plain)
        rememberedOrders.withLock { $0.insert(kept) }
    }

    /// Forgets order `id`: a claim or a move takes it, or a repricing rewrites it.
    func forgetOrder(_ id: String) {
        rememberedOrders.withLock { $0.remove(id) }
    }
}
