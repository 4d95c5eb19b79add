import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Testing
import WalletOrders

/// The Wallet order service on the in-memory store: issued once per payment, the package only
/// for the right token, the shop's fulfilments and the payment's changes each a new version
/// pushed to every device, and Wallet's calls bounded.
@Suite("Wallet order service")
struct WalletOrderServiceTests {
    static let type = "order.dev.orchard.test"
    let store = InMemoryStore()
    /// Stopped just past a second: every change falls within it, so each must still be a second newer.
    static let clock = TimeSource { TestRecords.now.addingTimeInterval(0.6) }
    let settings: WalletOrdersSettings
    let service: WalletOrderService

    struct Merchants: WalletOrderMerchants {
        let settings: WalletOrdersSettings
        func walletOrders(of merchantIdentifier: String) -> WalletOrdersSettings? { merchantIdentifier == "merchant.test" ? settings : nil }
        func walletOrderMerchant(orderTypeIdentifier: String) -> (merchantIdentifier: String, settings: WalletOrdersSettings)? {
            orderTypeIdentifier == settings.orderTypeIdentifier ? ("merchant.test", settings) : nil
        }
    }

    init() throws {
        let issued = try TestMaterial.shared.pki.issueOrderTypeIdentity(
            orderTypeIdentifier: Self.type, notValidBefore: TestRecords.now.addingTimeInterval(-3600),
            notValidAfter: TestRecords.now.addingTimeInterval(86_400 * 30))
        let identity = try OrderTypeIdentity(
            orderTypeIdentifier: Self.type, certificate: issued.leaf.certificate, privateKey: issued.leaf.privateKey,
            intermediates: [issued.intermediate.certificate], name: "order.pem", at: TestRecords.now)
        settings = WalletOrdersSettings(
            identity: identity, identitySource: "order.pem", webServiceURL: "https://pay.shop.example/wallet-orders",
            merchantDisplayName: "Orchard Test Shop", merchantURL: "https://shop.example", logoPNG: [0x89, 0x50, 0x4E, 0x47],
            orderManagementURL: "https://shop.example/orders/{orderNumber}",
            apns: RemoteEndpoint(
                baseURL: "https://api.push.apple.com", connectTimeout: .seconds(3), timeout: .seconds(10), isProductionHost: true))
        service = WalletOrderService(
            store: store, merchants: Merchants(settings: settings), time: Self.clock, logger: Logger(label: "test"))
    }

    /// An authorized payment of merchant.test and its Wallet order's details.
    func issued(_ id: String = "o1") async throws -> (PaymentRecord, WalletOrderDetails) {
        try await TestRecords.authorizedPayment(in: store, order: id, merchant: "merchant.test", at: TestRecords.now)
        let payment = try #require(try await store.payment(id: "p-\(id)"))
        return (payment, try #require(await service.issue(for: payment, merchantIdentifier: "merchant.test")))
    }

    func files(_ fetch: WalletOrderService.Fetch) throws -> [String: [UInt8]] {
        guard case .package(let bytes, _) = fetch, let entries = StoredZip.entries(of: bytes) else {
            Issue.record("not a package: \(fetch)")
            return [:]
        }
        return Dictionary(uniqueKeysWithValues: entries.map { ($0.path, $0.bytes) })
    }

    @Test("a payment gets one Wallet order: its details once, the token kept only as its hash")
    func issuedOnce() async throws {
        let (payment, details) = try await issued()
        #expect(details.orderTypeIdentifier == Self.type && details.webServiceURL == "https://pay.shop.example/wallet-orders")
        #expect(details.authenticationToken.count >= 43 && details.orderIdentifier.count == 32)
        let record = try #require(try await store.walletOrder(paymentId: payment.id))
        #expect(record.authenticationTokenHash != Array(details.authenticationToken.utf8) && record.authenticationTokenHash.count == 32)
        #expect(record.createdAt == Date(timeIntervalSince1970: 1_800_000_000), "whole seconds")
        #expect(await service.issue(for: payment, merchantIdentifier: "merchant.test") == nil, "given once only")
        #expect(await service.issue(for: payment, merchantIdentifier: "merchant.other") == nil, "a merchant without Wallet orders")
        var refused = payment
        refused.state = .refused
        #expect(await service.issue(for: refused, merchantIdentifier: "merchant.test") == nil)
        var charge = payment
        charge.id = "p-charge"
        #expect(await service.issue(for: charge, merchantIdentifier: "merchant.test", mandateCharge: true) == nil, "mandateCharges off")
    }

    @Test("the package only for AppleOrder with the order's token; order.json is the payment's, signed; If-Modified-Since gets 304")
    func package() async throws {
        let (payment, details) = try await issued()
        let good = "AppleOrder \(details.authenticationToken)"
        for authorization in [
            nil, details.authenticationToken, "AppleOrder wrong-token-0123456789", "Bearer \(details.authenticationToken)",
        ] {
            #expect(
                try await service.package(
                    orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: authorization,
                    ifModifiedSince: nil) == .unauthorized)
        }
        #expect(
            try await service.package(
                orderTypeIdentifier: "order.other", orderIdentifier: details.orderIdentifier, authorization: good, ifModifiedSince: nil)
                == .unauthorized)
        let fetched = try await service.package(
            orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: good, ifModifiedSince: nil)
        let files = try files(fetched)
        #expect(files.keys.sorted() == ["logo.png", "manifest.json", "order.json", "signature"])
        let order = try WalletOrderJSON.decode(try #require(files["order.json"]))
        #expect(order.orderIdentifier == details.orderIdentifier && order.authenticationToken == details.authenticationToken)
        #expect(order.payment?.total == .init(amount: "9.90", currency: "EUR") && order.payment?.status == .authorized)
        #expect(order.payment?.paymentMethods == ["Visa 1111"] && order.orderNumber == payment.id)
        #expect(order.lineItems?.first?.quantity == 2 && order.status == .open && order.merchant.logo == "logo.png")
        #expect(order.orderManagementURL == "https://shop.example/orders/\(payment.id)")
        #expect(order.problems().isEmpty)
        let record = try #require(try await store.walletOrder(paymentId: payment.id))
        #expect(
            try await service.package(
                orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: good,
                ifModifiedSince: record.updatedAt) == .notModified(lastModified: record.updatedAt))
    }

    @Test("a fulfilment is a new version one second on, pushed to each device and told to the shop; bad ones are refused")
    func fulfil() async throws {
        let (payment, details) = try await issued()
        let good = "AppleOrder \(details.authenticationToken)"
        let token = String(repeating: "ab", count: 32)
        #expect(
            try await service.register(
                deviceIdentifier: "device-1", orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier,
                authorization: good, pushToken: token) == .created)
        #expect(
            try await service.register(
                deviceIdentifier: "device-1", orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier,
                authorization: good, pushToken: token) == .existing)
        #expect(
            try await service.register(
                deviceIdentifier: "device-2", orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier,
                authorization: "AppleOrder nope", pushToken: token) == .unauthorized)

        var request = FulfillmentRequest(fulfillmentIdentifier: "parcel-1", type: .shipping, status: "onTheWay")
        request.carrier = "DHL"
        request.trackingNumber = "00340434161094042557"
        request.trackingURL = "https://carrier.example/t/1"
        let view = try await service.fulfill(request, paymentId: payment.id, merchantIdentifier: "merchant.test")
        #expect(view.version == 2 && view.fulfillments.map(\.status) == ["onTheWay"])
        #expect(view.updatedAt == Date(timeIntervalSince1970: 1_800_000_001), "a second after the first version, within the same second")
        let pushes = try await store.leaseWalletPushes(at: view.updatedAt, until: view.updatedAt.addingTimeInterval(60), limit: 10)
        #expect(pushes.map(\.pushToken) == [token] && pushes.first?.orderTypeIdentifier == Self.type)
        let events = try await store.webhookEvents(merchantIdentifier: "merchant.test", state: nil, limit: 10)
        #expect(events.first?.type == .walletOrderUpdated)

        request.status = "delivered"
        _ = try await service.fulfill(request, paymentId: payment.id, merchantIdentifier: "merchant.test")
        let changed = try await service.changed(deviceIdentifier: "device-1", orderTypeIdentifier: Self.type, since: nil)
        #expect(changed?.orderIdentifiers == [details.orderIdentifier] && changed?.lastModified == "1800000002")
        #expect(try await service.changed(deviceIdentifier: "device-1", orderTypeIdentifier: Self.type, since: "1800000002") == nil)
        let order = try WalletOrderJSON.decode(
            try #require(
                try files(
                    try await service.package(
                        orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: good, ifModifiedSince: nil)
                )["order.json"]))
        #expect(order.status == .completed && order.fulfillments?.count == 1)

        #expect(
            await TestRecords.refusal {
                _ = try await service.fulfill(request, paymentId: payment.id, merchantIdentifier: "merchant.other")
            } == .notFound)
        #expect(
            await TestRecords.refusal { _ = try await service.fulfill(request, paymentId: "p-none", merchantIdentifier: "merchant.test") }
                == .notFound)
        var wrong = request
        wrong.status = "readyForPickup"
        #expect(
            await TestRecords.refusal { _ = try await service.fulfill(wrong, paymentId: payment.id, merchantIdentifier: "merchant.test") }
                == .invalidRequest)
        var pickup = FulfillmentRequest(fulfillmentIdentifier: "pickup-1", type: .pickup, status: "readyForPickup")
        #expect(
            await TestRecords.refusal { _ = try await service.fulfill(pickup, paymentId: payment.id, merchantIdentifier: "merchant.test") }
                == .invalidRequest)
        pickup.displayName = "Market Street store"
        #expect(try await service.fulfill(pickup, paymentId: payment.id, merchantIdentifier: "merchant.test").fulfillments.count == 2)
    }

    @Test("a refund or cancellation makes a new version: Wallet fetches the payment's new state")
    func paymentChanged() async throws {
        let (payment, _) = try await issued()
        await service.paymentChanged(paymentId: payment.id)
        #expect(try await store.walletOrder(paymentId: payment.id)?.version == 2)
        await service.paymentChanged(paymentId: "p-none")
    }

    @Test("Wallet's inputs are bounded: device identifiers, push tokens, unknown types")
    func bounds() async throws {
        let (_, details) = try await issued()
        let good = "AppleOrder \(details.authenticationToken)"
        #expect(
            try await service.register(
                deviceIdentifier: String(repeating: "d", count: 129), orderTypeIdentifier: Self.type,
                orderIdentifier: details.orderIdentifier,
                authorization: good, pushToken: String(repeating: "ab", count: 32)) == .unauthorized)
        #expect(
            await TestRecords.refusal {
                _ = try await service.register(
                    deviceIdentifier: "d", orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: good,
                    pushToken: "not-hex")
            } == .invalidRequest)
        #expect(try await service.changed(deviceIdentifier: "d/../x", orderTypeIdentifier: Self.type, since: nil) == nil)
        #expect(try await service.changed(deviceIdentifier: "d", orderTypeIdentifier: "order.unknown", since: nil) == nil)
        #expect(
            try await service.unregister(
                deviceIdentifier: "d", orderTypeIdentifier: Self.type, orderIdentifier: details.orderIdentifier, authorization: nil)
                == false)
    }
}
