import Foundation
import OrchardCore
import OrchardTesting
import Testing
import WalletOrders

/// Wallet orders' contract, on SQLite, in memory and on PostgreSQL alike: one order per payment,
/// found by Wallet's key or by payment; an update is a compare-and-set on the version that queues
/// one push per registered token, with its event, in the same transaction; registrations are
/// capped per order; pushes are leased oldest due first and each attempt recorded once.
@Suite("Wallet order records contract: SQLite, in memory and PostgreSQL")
struct WalletOrderRecordsContractTests {
    typealias Kind = StoreContractTests.Kind
    static let type = "order.dev.orchard.test"

    static func at(_ seconds: Int) -> Date { ShopStoreContractTests.at(seconds) }

    static func order(_ id: String, payment: String, at seconds: Int = 0) -> WalletOrderRecord {
        WalletOrderRecord(
            orderIdentifier: id, orderTypeIdentifier: type, merchantIdentifier: "merchant.test", paymentId: payment,
            authenticationTokenHash: Array(repeating: 7, count: 32), createdAt: at(seconds), updatedAt: at(seconds))
    }

    static func device(_ device: String, order: String, token: String, at seconds: Int = 0) -> WalletOrderRegistration {
        WalletOrderRegistration(
            deviceIdentifier: device, orderTypeIdentifier: type, orderIdentifier: order, pushToken: token, createdAt: at(seconds))
    }

    static func changed(_ order: WalletOrderRecord, at seconds: Int) -> WalletOrderRecord {
        var next = order
        next.version += 1
        next.updatedAt = at(seconds)
        var shipping = WalletOrder.Fulfillment(fulfillmentIdentifier: "f\(next.version)", kind: .shipping, status: "onTheWay")
        shipping.carrier = "DHL"
        shipping.estimatedDeliveryAt = at(seconds + 86_400)
        next.fulfillments.append(shipping)
        return next
    }

    @Test(
        "one order per payment, read back whole by Wallet's key and by payment; another type's key finds nothing", arguments: Kind.enabled)
    func createAndRead(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let first = Self.order("wo1", payment: "p1")
            let created = try await store.createWalletOrder(first)
            #expect(created.record == first && created.created)
            let again = try await store.createWalletOrder(Self.order("wo2", payment: "p1", at: 5))
            #expect(again.record == first && !again.created, "the payment has one already: it is kept")
            let byKey = try await store.walletOrder(orderTypeIdentifier: Self.type, orderIdentifier: "wo1")
            let byPayment = try await store.walletOrder(paymentId: "p1")
            #expect(byKey == first && byPayment == first)
            let otherType = try await store.walletOrder(orderTypeIdentifier: "order.other", orderIdentifier: "wo1")
            let unknown = try await store.walletOrder(orderTypeIdentifier: Self.type, orderIdentifier: "wo2")
            #expect(otherType == nil && unknown == nil)
        }
    }

    @Test(
        "an update writes over its version only, queues one push per token with its event, and lists for the device by change",
        arguments: Kind.enabled)
    func updateQueuesPushes(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let order = Self.order("wo1", payment: "p1")
            _ = try await store.createWalletOrder(order)
            _ = try await store.createWalletOrder(Self.order("wo2", payment: "p2"))
            #expect(try await store.registerWalletDevice(Self.device("d1", order: "wo1", token: "aa"), limit: 5) == true)
            #expect(try await store.registerWalletDevice(Self.device("d2", order: "wo1", token: "bb"), limit: 5) == true)
            #expect(try await store.registerWalletDevice(Self.device("d1", order: "wo2", token: "aa"), limit: 5) == true)
            #expect(try await store.registerWalletDevice(Self.device("d1", order: "wo1", token: "aa"), limit: 5) == false, "already")

            let next = Self.changed(order, at: 10)
            let event = try WebhookEvent.make(
                .paymentSettled, merchantIdentifier: "merchant.test", payment: nil, request: nil, at: Self.at(10))
            #expect(try await store.updateWalletOrder(next, event: event) == 2)
            #expect(try await store.updateWalletOrder(next, event: nil) == nil, "the same version again: lost")
            #expect(try await store.walletOrder(paymentId: "p1") == next)
            #expect(try await ShopStoreContractTests.events(store).map(\.id).contains(event.id))

            // A second change before the push went: still one push per token and type.
            #expect(try await store.updateWalletOrder(Self.changed(next, at: 11), event: nil) == 2)
            let pushes = try await store.leaseWalletPushes(at: Self.at(11), until: Self.at(70), limit: 10)
            #expect(pushes.map(\.pushToken).sorted() == ["aa", "bb"])
            #expect(
                pushes.allSatisfy { $0.orderTypeIdentifier == Self.type && $0.merchantIdentifier == "merchant.test" && $0.attempts == 0 })
            #expect(try await store.leaseWalletPushes(at: Self.at(11), until: Self.at(70), limit: 10).isEmpty, "leased: out of sight")

            let listed = try await store.walletOrders(deviceIdentifier: "d1", orderTypeIdentifier: Self.type, changedAfter: nil, limit: 10)
            #expect(listed.map(\.orderIdentifier) == ["wo2", "wo1"], "oldest change first")
            let since = try await store.walletOrders(
                deviceIdentifier: "d1", orderTypeIdentifier: Self.type, changedAfter: Self.at(0), limit: 10)
            #expect(since.map(\.orderIdentifier) == ["wo1"])
            #expect(
                try await store.walletOrders(deviceIdentifier: "d1", orderTypeIdentifier: Self.type, changedAfter: Self.at(11), limit: 10)
                    .isEmpty)
            #expect(
                try await store.walletOrders(deviceIdentifier: "d3", orderTypeIdentifier: Self.type, changedAfter: nil, limit: 10).isEmpty)

            #expect(try await store.unregisterWalletDevice(deviceIdentifier: "d2", orderTypeIdentifier: Self.type, orderIdentifier: "wo1"))
            #expect(
                !(try await store.unregisterWalletDevice(deviceIdentifier: "d2", orderTypeIdentifier: Self.type, orderIdentifier: "wo1")))
        }
    }

    @Test("registrations stop at the limit; a known device only updates its token", arguments: Kind.enabled)
    func registrationLimit(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await store.createWalletOrder(Self.order("wo1", payment: "p1"))
            for index in 0..<3 {
                #expect(try await store.registerWalletDevice(Self.device("d\(index)", order: "wo1", token: "t\(index)"), limit: 3) == true)
            }
            #expect(try await store.registerWalletDevice(Self.device("d9", order: "wo1", token: "t9"), limit: 3) == nil)
            #expect(try await store.registerWalletDevice(Self.device("d0", order: "wo1", token: "new"), limit: 3) == false)
            let order = try #require(try await store.walletOrder(paymentId: "p1"))
            _ = try await store.updateWalletOrder(Self.changed(order, at: 5), event: nil)
            let tokens = try await store.leaseWalletPushes(at: Self.at(5), until: Self.at(60), limit: 10).map(\.pushToken).sorted()
            #expect(tokens == ["new", "t1", "t2"])
        }
    }

    @Test("each attempt is recorded once: a retry comes back when due, a 410 removes the token's registrations", arguments: Kind.enabled)
    func pushOutcomes(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let order = Self.order("wo1", payment: "p1")
            _ = try await store.createWalletOrder(order)
            _ = try await store.registerWalletDevice(Self.device("d1", order: "wo1", token: "aa"), limit: 5)
            _ = try await store.registerWalletDevice(Self.device("d2", order: "wo1", token: "bb"), limit: 5)
            _ = try await store.updateWalletOrder(Self.changed(order, at: 10), event: nil)
            let leased = try await store.leaseWalletPushes(at: Self.at(10), until: Self.at(70), limit: 10)
            let (aa, bb) = (try #require(leased.first { $0.pushToken == "aa" }), try #require(leased.first { $0.pushToken == "bb" }))

            #expect(try await store.recordWalletPush(aa, outcome: .retry(at: Self.at(30), error: "HTTP 503")))
            #expect(!(try await store.recordWalletPush(aa, outcome: .delivered)), "recorded already at that attempt")
            #expect(try await store.recordWalletPush(bb, outcome: .unregistered))
            #expect(try await store.leaseWalletPushes(at: Self.at(29), until: Self.at(90), limit: 10).isEmpty)
            let retried = try await store.leaseWalletPushes(at: Self.at(30), until: Self.at(90), limit: 10)
            #expect(retried.map(\.pushToken) == ["aa"] && retried.first?.attempts == 1)
            #expect(try await store.recordWalletPush(try #require(retried.first), outcome: .delivered))
            #expect(try await store.leaseWalletPushes(at: Self.at(1000), until: Self.at(2000), limit: 10).isEmpty)

            // bb's device is gone: the next change queues aa only.
            let current = try #require(try await store.walletOrder(paymentId: "p1"))
            #expect(try await store.updateWalletOrder(Self.changed(current, at: 40), event: nil) == 1)
        }
    }

    @Test("concurrent updates of one version: exactly one wins; concurrent registrations stop at the limit", arguments: Kind.enabled)
    func concurrency(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let order = Self.order("wo1", payment: "p1")
            _ = try await store.createWalletOrder(order)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<12 {
                    group.addTask { try await store.updateWalletOrder(Self.changed(order, at: 10 + index), event: nil) != nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            let registered = try await withThrowingTaskGroup(of: Bool?.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        try await store.registerWalletDevice(Self.device("d\(index)", order: "wo1", token: "t\(index)"), limit: 5)
                    }
                }
                return try await group.reduce(0) { $0 + ($1 == true ? 1 : 0) }
            }
            #expect(registered == 5)
        }
    }
}
