import OrchardCore
import OrchardTesting
import Testing

@testable import OrchardPostgres

/// The store's memory of the orders it wrote: bounded, the oldest forgotten first.
@Suite("PostgreSQL store: remembered orders, the oldest forgotten first")
struct RememberedOrdersTests {
    static func kept(_ id: String) throws -> RememberedOrder {
        RememberedOrder(order: try TestRecords.order(id), version: "7", attempts: 0)
    }

    @Test("past the limit the oldest go; a claimed order's ID does not hold a place")
    func bounded() throws {
        var orders = RememberedOrders()
        let limit = RememberedOrders.limit
        for index in 0..<(limit + 5) { orders.insert(try Self.kept("o\(index)")) }
        #expect((0..<5).allSatisfy { orders["o\($0)"] == nil }, "the five oldest are forgotten")
        #expect(orders["o5"]?.order.id == "o5" && orders["o\(limit + 4)"]?.version == "7")

        // Orders claimed as fast as they are created: the memory stays small and the newest stay.
        for index in 0..<(3 * limit) {
            orders.insert(try Self.kept("c\(index)"))
            orders.remove("c\(index)")
        }
        #expect(orders["c0"] == nil && orders["o\(limit + 4)"] != nil, "the newest of the first ones are still there")
        orders.insert(try Self.kept("last"))
        #expect(orders["last"] != nil)
    }
}
