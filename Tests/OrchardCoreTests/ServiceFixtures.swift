import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// What the application services' tests share: merchants, a catalogue, a clock the test moves,
/// and a shop whose quote URL answers in memory. No sockets.
enum ServiceFixtures {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// The service's refusal of `body`; nil when it went through. Any other error is an issue.
    static func refusal(_ body: () async throws -> Void) async -> CoreError? {
        do {
            try await body()
            return nil
        } catch let error as CoreError {
            return error
        } catch {
            Issue.record("not a CoreError: \(error)")
            return nil
        }
    }

    /// The demo shop's catalogue: apples, pears and cider; standard (4.90) ships to five
    /// countries, express (9.90) only to France; HARVEST10 takes 10 % off.
    static let catalogue: Catalogue = {
        let json = """
            {"countryCode": "FR", "currency": "EUR", "supportedNetworks": ["visa", "masterCard"],
             "products": [{"id": "apple-box", "label": "Apples", "price": 1290}, {"id": "cider", "label": "Cider", "price": 650}],
             "shippingMethods": [
               {"identifier": "standard", "label": "Standard", "detail": "3–5 days", "amount": 490},
               {"identifier": "express", "label": "Express", "detail": "Next day", "amount": 990, "countries": ["FR"]}],
             "shippingCountries": ["FR", "BE", "DE"],
             "coupons": [{"code": "HARVEST10", "percentOff": 10}]}
            """
        do {
            return try JSONDecoder().decode(Catalogue.self, from: Data(json.utf8)).validated()
        } catch {
            fatalError("the test catalogue does not check: \(error)")
        }
    }()

    static func merchant(
        _ identifier: String = TestMaterial.merchantIdentifier, catalogue: Catalogue? = catalogue, quote: WebhookEndpoint? = nil
    ) throws -> MerchantConfiguration {
        let identity = TestMaterial.shared.identity
        return MerchantConfiguration(
            merchantIdentifier: identifier, displayName: "Orchard Shop", domains: ["shop.example"],
            identity: try MerchantIdentity(
                certificatePEM: Array(try identity.certificatePEM.utf8), keyPEM: Array(try identity.keyPEM.utf8),
                certificateName: "identity.pem", keyName: "identity.key", at: start),
            identitySource: "identity.pem", catalogue: catalogue, quote: quote)
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    let date = Mutex(ServiceFixtures.start)
    var source: TimeSource { TimeSource { self.date.withLock { $0 } } }
    func advance(_ seconds: TimeInterval) { date.withLock { $0.addTimeInterval(seconds) } }
}

/// A shop's quote URL in memory: records each question with its signature header and answers
/// with `answer` (nil: the call fails as a timeout would). `during` runs while the shop is
/// "thinking", to let a test change the order in between.
final class QuotingShop: ShopTransport {
    struct Asked: Sendable {
        var body: [UInt8]
        var signature: String?
    }

    let asked = Mutex<[Asked]>([])
    let answer: Mutex<(status: Int, body: String)?>
    let during: @Sendable () async throws -> Void

    init(status: Int = 200, answer: String?, during: @escaping @Sendable () async throws -> Void = {}) {
        self.answer = Mutex(answer.map { (status, $0) })
        self.during = during
    }

    func post(to endpoint: WebhookEndpoint, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration, merchant: String)
        async throws -> (status: Int, body: [UInt8])
    {
        asked.withLock { $0.append(Asked(body: body, signature: headers.first { $0.name == WebhookSignature.header }?.value)) }
        try await during()
        guard let reply = answer.withLock({ $0 }) else { throw CancellationError() }
        return (reply.status, Array(reply.body.utf8))
    }

    var questions: [QuoteRequest] {
        asked.withLock { $0 }.compactMap { try? JSONDecoder().decode(QuoteRequest.self, from: Data($0.body)) }
    }
}

extension QuoteClient {
    static func inMemory(_ shop: QuotingShop, clock: TestClock) -> QuoteClient {
        QuoteClient(transport: shop, time: clock.source, logger: Logger(label: "test.quotes") { _ in SwiftLogNoOpLogHandler() })
    }
}
