import ApplePay
import Foundation
import NIOPosix
import OrchardCore

/// Records for tests that write to a store directly (the store contract, the SQLite writer, a
/// backlog written behind a live server's back): one catalogue, an order and its payment claim.
public enum TestRecords {
    /// The catalogue tests price orders against: apples at 2.50 EUR, standard shipping 4.90 EUR.
    public static let catalogueJSON = """
        {"countryCode": "FR", "currency": "EUR", "supportedNetworks": ["visa", "masterCard"],
         "products": [{"id": "apple", "label": "Apple", "price": 250}, {"id": "pear", "label": "Pear", "price": 199}],
         "shippingMethods": [{"identifier": "standard", "label": "Standard", "detail": "3 days", "amount": 490},
                             {"identifier": "express", "label": "Express", "detail": "1 day", "amount": 990, "countries": ["FR"]}],
         "shippingCountries": ["FR", "DE"],
         "coupons": [{"code": "TEN", "percentOff": 10}, {"code": "OLD", "amountOff": 100, "expiresAt": "2020-01-01T00:00:00Z"}]}
        """

    /// ``catalogueJSON``, decoded.
    public static let catalogue: Catalogue = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try! decoder.decode(Catalogue.self, from: Data(catalogueJSON.utf8))
    }()

    /// The moment the records are made at.
    public static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// An open order of two apples (9.90 EUR with shipping) for `merchant.test`.
    public static func order(_ id: String) throws -> OrderRecord {
        let priced = try Pricing.price(items: [CartItem(productId: "apple", quantity: 2)], catalogue: catalogue, at: now)
        return OrderRecord(
            id: id, merchantIdentifier: "merchant.test", state: .open, priced: priced, applicationData: [1, 2, 3], createdAt: now)
    }

    /// A first claim on `orderId` by `transaction`, for its first price.
    public static func claim(_ orderId: String, transaction: String, payment: String) -> PaymentClaim {
        PaymentClaim(
            draft: PaymentRecord(
                id: payment, orderId: orderId, transactionId: transaction, state: .pending, amount: 990, currency: "EUR", network: "visa",
                lastFour: "1111", processor: "record", reference: "", createdAt: now),
            transactionId: transaction, sealedRequest: [9, 9, 9], priceVersion: 1)
    }

    /// An authorized payment of a new order `id` of `merchant`, written straight to `store`: one
    /// `payment.authorized` webhook event, due at `date`.
    public static func authorizedPayment(in store: any OrderPayments, order id: String, merchant: String, at date: Date) async throws {
        var order = try order(id)
        order.merchantIdentifier = merchant
        try await store.insert(order)
        var claim = claim(id, transaction: "t-\(id)", payment: "p-\(id)")
        claim.draft.createdAt = date
        claim.draft.updatedAt = date
        _ = try await store.claimPayment(claim)
        _ = try await store.transition(
            PaymentTransition(paymentId: "p-\(id)", orderId: id, move: PaymentLifecycle.move(.authorized), at: date))
    }

    /// The code of the business refusal `body` throws; nil when it throws nothing (or something else).
    public static func refusal(_ body: () async throws -> Void) async -> CoreError.Code? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? CoreError)?.code
        }
    }
}

extension PostgresServer {
    /// Whether the PostgreSQL cases run: all but on a machine without PostgreSQL, which says so
    /// with ORCHARD_SKIP_POSTGRES=1.
    public static let enabled = ProcessInfo.processInfo.environment["ORCHARD_SKIP_POSTGRES"] != "1"

    /// The PostgreSQL stores' own event loop: their work does not queue behind (or hold up) the
    /// in-process servers other tests run on NIO's shared loops.
    public static let storeLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
}
