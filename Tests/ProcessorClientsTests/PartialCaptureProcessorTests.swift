import Crypto
import Foundation
import GooglePay
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// The real Worldpay and Worldline clients capture part of an authorization at the mock
/// processors: Worldpay by its `partialSettle` link (`value` and `reference`), then its answer's
/// `cancel` for the rest; Worldline by CapturePayment with `amount` and `isFinal: true`.
@Suite("Processor clients: partial capture")
struct PartialCaptureProcessorTests {
    static let kinds: [MockProcessorSetup.Kind] = [.worldpay, .worldlineEncrypted]

    /// An authorized payment of 24.90 EUR at the mock, as Orchard records it.
    static func authorized(_ fixture: MandateFixture) async throws -> PaymentRecord {
        let request = GooglePayProcessorTests.request(.googlePay(try GooglePayProcessorTests.method(), decrypted: nil))
        let outcome = try await fixture.processor.authorize(request)
        #expect(outcome.status == .authorized)
        return PaymentRecord(
            id: "pay_partial", orderId: "o", transactionId: "00", state: .authorized, amount: 2490, currency: "EUR", network: "Visa",
            lastFour: "1111", processor: fixture.processor.name, reference: request.reference,
            processorReference: outcome.processorReference, links: outcome.links, createdAt: Date())
    }

    @Test("part of the amount is captured, the rest released; refunds are then bounded by what was captured", arguments: kinds)
    func partial(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let payment = try await Self.authorized(fixture)
            if kind == .worldpay { #expect(payment.links["partialSettle"] != nil, "the authorization hands out partialSettle") }
            let learned = try await fixture.processor.settle(payment, amount: 1500)
            let charge = try #require(fixture.mock.charges.last)
            #expect(charge.state == .settled && charge.capturedAmount == 1500 && charge.restReleased)
            if kind == .worldpay {
                #expect(charge.captureReference == "\(payment.reference)-s")
                #expect(learned["refund"] != nil && learned["partialRefund"] != nil)
            } else {
                #expect(charge.captureFinal == true)
            }
            // The processor holds 15.00: a refund of more is refused there too.
            var settled = payment
            settled.state = .settled
            settled.amountCaptured = 1500
            settled.links.merge(learned) { $1 }
            let over = try await fixture.processor.refund(
                RefundRequest(payment: settled, amount: 1600, reference: "\(payment.reference)-r1"))
            #expect(over.status == .refused)
            let whole = try await fixture.processor.refund(
                RefundRequest(payment: settled, amount: 1500, reference: "\(payment.reference)-r2"))
            #expect(whole.status == .refunded)
            #expect(fixture.mock.refunds.last?.amount == 1500)
        }
    }

    @Test("the whole amount is the ordinary settle; more than authorized is refused by the processor", arguments: kinds)
    func whole(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let payment = try await Self.authorized(fixture)
            _ = try await fixture.processor.settle(payment, amount: 2490)
            let charge = try #require(fixture.mock.charges.last)
            #expect(charge.state == .settled && charge.capturedAmount == nil)
            let other = try await Self.authorized(fixture)
            await #expect(throws: ProcessorActionError.self) { _ = try await fixture.processor.settle(other, amount: 2491) }
            #expect(fixture.mock.charges.last?.state == .authorized)
        }
    }
}
