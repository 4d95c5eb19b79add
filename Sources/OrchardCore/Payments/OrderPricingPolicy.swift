/// Whether an order may be repriced: the one rule behind every store's ``OrderPayments/updateOpen(_:)``.
public enum OrderPricingPolicy {
    /// Checks that `order`, at its next price version, may replace the stored order, `found` in
    /// that state at that version (nil: no such order; a nil state: unreadable).
    public static func checkUpdate(_ order: OrderRecord, found: (state: OrderRecord.State?, version: Int)?) throws(CoreError) {
        guard let found, found.state == .open else {
            throw CoreError(.orderNotOpen, "order \(order.id) is not open")
        }
        guard found.version == order.priceVersion &- 1 else {
            throw CoreError(.orderChanged, "order \(order.id) was repriced meanwhile (version \(found.version))")
        }
    }
}
