import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// The money path of mandates, over the in-memory store and the processor double: the first payment
/// sets the mandate up, and a merchant-initiated charge keeps every rule a shopper's payment
/// keeps (an unknown answer is re-sent under the same reference, never charged twice).
@Suite("Payments engine: mandates and merchant-initiated charges")
struct MandateEngineTests {
    static let agreement = PaymentAgreement(
        type: .recurring, paymentDescription: "Coffee club", managementURL: "https://shop.example/account",
        regularBilling: .init(label: "Monthly", amount: 990))

    /// An open order of 9.90 EUR whose payment sets up the agreement.
    static func agreementOrder(_ bench: EngineBench) async throws -> OrderRecord {
        var order = try await bench.order()
        order.id = "sub" + order.id.prefix(20)
        order.applicationData = Array("orchard-order:\(order.id)".utf8)
        order.priced.agreement = agreement
        try await bench.store.insert(order)
        return order
    }

    /// An open charge order of `amount` for the mandate's merchant.
    static func chargeOrder(_ bench: EngineBench, amount: Int64 = 990) async throws -> OrderRecord {
        let cart = ShopCart(currency: "EUR", countryCode: "ZZ", amount: amount)
        let order = OrderRecord(
            id: "chg" + RecordIdentifier.random().prefix(20), merchantIdentifier: EngineBench.merchant, state: .open,
            priced: try cart.price(), applicationData: [], createdAt: bench.clock.now)
        try await bench.store.insert(order)
        return order
    }

    static func firstMandate(_ bench: EngineBench) async throws -> MandateRecord {
        let order = try await agreementOrder(bench)
        let paid = try await bench.tap(order).get()
        let id = try #require(paid.mandateId)
        return try #require(try await bench.store.mandate(id: id))
    }

    @Test("a token for a key the processor holds cannot set up a mandate: refused before the processor, nothing recorded")
    func processorHeldKeyRefusesMandate() async throws {
        try await PaymentsEngineTests.withBench { bench in
            // The same public key, now as the processor's: Apple's certificate alone.
            let certificate = try TestMaterial.shared.pki.processingCertificatePEM(
                merchantIdentifier: EngineBench.merchant, for: EngineBench.processingKey.publicKey)
            try bench.restart(key: try ProcessingKey(processorHeldCertificatePEM: certificate))
            let order = try await Self.agreementOrder(bench)
            #expect(try await bench.tap(order).failureCode == .invalidToken)
            #expect(bench.processor.requests == 0)
            #expect(try await bench.store.payments(orderId: order.id).isEmpty)
            // A plain order of the same merchant goes through: the processor gets the token encrypted.
            #expect(try await bench.tap(try await bench.order()).get().state == .authorized)
        }
    }

    @Test("the first payment of an agreement stores the credential and sets up the mandate; a plain payment does not")
    func firstPayment() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let mandate = try await Self.firstMandate(bench)
            #expect(mandate.state == .active && mandate.kind == .recurring && mandate.description == "Coffee club")
            #expect(mandate.credential.reference.hasPrefix("tok-") && mandate.currency == "EUR")
            let plain = try await bench.tap(try await bench.order()).get()
            #expect(plain.mandateId == nil)
            #expect(try await bench.store.mandates(merchantIdentifier: EngineBench.merchant, state: nil, limit: 10).count == 1)
        }
    }

    @Test("a processor that authorizes but stores no credential: the payment stands, no mandate, an error logged")
    func noCredential() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let logs = CapturingLogHandler()
            try bench.restart(logHandler: logs)
            bench.processor.storesCredentials.store(false, ordering: .relaxed)
            let paid = try await bench.tap(try await Self.agreementOrder(bench)).get()
            #expect(paid.state == .authorized && paid.mandateId == nil)
            #expect(try await bench.store.mandates(merchantIdentifier: EngineBench.merchant, state: nil, limit: 10).isEmpty)
            #expect(logs.records.withLock { $0.contains { $0.level == .error && $0.message.contains("stored no credential") } })
        }
    }

    @Test("a charge whose answer is lost is unknown; the retry re-sends the same reference and the processor charges once")
    func unknownChargeRetried() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let mandate = try await Self.firstMandate(bench)
            let order = try await Self.chargeOrder(bench)
            bench.processor.script([.dropAfterCharge])
            await #expect(throws: CoreError.self) { _ = try await bench.engine.charge(mandate, orderId: order.id) }
            #expect(try await bench.store.payments(orderId: order.id).map(\.state) == [.unknown])
            let paid = try await bench.engine.charge(mandate, orderId: order.id)
            #expect(paid.state == .authorized && paid.reference == "\(order.id)-1" && paid.sends == 2)
            #expect(paid.mandateId == mandate.id && paid.transactionId.hasPrefix("mit_"))
            #expect(bench.processor.charges.filter { $0.hasPrefix(order.id) } == ["\(order.id)-1"])
            let replay = try await bench.engine.charge(mandate, orderId: order.id)
            #expect(replay.id == paid.id && bench.processor.requests == 3, "a paid charge answers itself, no call")
        }
    }

    @Test("the reconciler re-sends an unknown charge from its mandate; a declined charge is final for its order")
    func reconciledAndDeclined() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let mandate = try await Self.firstMandate(bench)
            let order = try await Self.chargeOrder(bench, amount: 1500)
            bench.processor.script([.serverError])
            await #expect(throws: CoreError.self) { _ = try await bench.engine.charge(mandate, orderId: order.id) }
            bench.clock.advance(31)
            let report = await bench.engine.reconcile()
            #expect(report.resolved == 1)
            let resolved = try #require(try await bench.store.payments(orderId: order.id).first)
            #expect(resolved.state == .authorized && resolved.reference == "\(order.id)-1" && resolved.amount == 1500)

            let declined = try await Self.chargeOrder(bench)
            bench.processor.script([.refuse])
            await #expect(throws: CoreError.self) { _ = try await bench.engine.charge(mandate, orderId: declined.id) }
            let again = try await bench.engine.charge(mandate, orderId: declined.id)
            #expect(again.state == .refused, "the same charge is not sent again after a decline")
            #expect(try await bench.store.payments(orderId: declined.id).count == 1)
        }
    }

    @Test("an ended mandate, another currency or another merchant's charge order are refused before any call")
    func refusals() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let mandate = try await Self.firstMandate(bench)
            let calls = bench.processor.requests
            var dollars = try await Self.chargeOrder(bench)
            dollars.id = "usd" + dollars.id
            dollars.priced.currency = "USD"
            try await bench.store.insert(dollars)
            await #expect(throws: CoreError(.paymentMismatch, "a charge of this mandate must be in EUR")) {
                _ = try await bench.engine.charge(mandate, orderId: dollars.id)
            }
            var foreign = mandate
            foreign.merchantIdentifier = "merchant.other"
            let order = try await Self.chargeOrder(bench)
            await #expect(throws: CoreError.self) { _ = try await bench.engine.charge(foreign, orderId: order.id) }
            _ = try await bench.store.endMandate(id: mandate.id, reason: "shop", at: bench.clock.now)
            let ended = try #require(try await bench.store.mandate(id: mandate.id))
            await #expect(throws: CoreError.self) { _ = try await bench.engine.charge(ended, orderId: order.id) }
            #expect(bench.processor.requests == calls)
            #expect(try await bench.store.payments(orderId: order.id).isEmpty)
        }
    }
}
