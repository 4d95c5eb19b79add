import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import ProcessorClients
import Testing

/// A payment paid through the server and settled through the admin API, with the processor the
/// server calls: what a refund starts from.
struct SettledPayment {
    let fixture: ProcessorFixture
    let payment: PaymentRecord
    let processor: any PaymentProcessor

    /// Pays a fresh order (9.90 EUR) and, unless `settle` is false, settles it.
    static func make(_ fixture: ProcessorFixture, settle: Bool = true) async throws -> SettledPayment {
        let (id, request) = try await fixture.order()
        let (response, _) = try await fixture.pay(id, request)
        let paymentId = try #require(response.json?["paymentId"] as? String)
        if settle {
            let settled = try await fixture.server.send(
                "POST", "/admin/payments/\(paymentId)/settle", extraHeaders: MoreMerchants.authorization)
            #expect(settled.status == 200)
        }
        let payment = try #require(try await fixture.server.store.payment(id: paymentId))
        #expect(payment.state == (settle ? .settled : .authorized))
        return SettledPayment(
            fixture: fixture, payment: payment,
            processor: fixture.server.processors.processor(forMerchant: TestMaterial.merchantIdentifier))
    }

    /// Refunds `amount` under the payment's `n`th refund reference.
    func refund(_ amount: Int64, _ n: Int, sends: Int = 1) async throws -> RefundOutcome {
        try await processor.refund(RefundRequest(payment: payment, amount: amount, reference: reference(n), sends: sends))
    }

    func reference(_ n: Int) -> String { "\(payment.reference)-r\(n)" }

    var mock: MockProcessors { fixture.mock }
    var refunded: [Int64] { mock.refunds(forPayment: payment.reference).map(\.amount) }

    /// The last request's JSON body.
    var sentBody: [String: Any] {
        get throws {
            let sent = try #require(mock.received.last)
            return try #require(try JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any])
        }
    }
}

@Suite("Refunds through Worldpay Access and Worldline Direct (mock processors over loopback HTTPS)")
struct RefundProcessorTests {
    static let kinds: [ProcessorFixture.Kind] = [.worldpay, .worldlineEncrypted]

    @Test("a full refund of a settled payment: refunded once, for the whole amount; nothing is left for another", arguments: kinds)
    func fullRefund(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let outcome = try await settled.refund(990, 1)
            #expect(outcome.status == .refunded)
            let made = try #require(settled.mock.refunds.first)
            #expect(outcome.processorReference == made.id)
            #expect(made.reference == settled.reference(1) && made.currency == "EUR")
            #expect(settled.refunded == [990])
            #expect(settled.mock.balance(forPayment: settled.payment.reference) == (settled: 990, refunded: 990))
            let sent = try #require(settled.mock.received.last)
            let body = try settled.sentBody
            switch kind {
            case .worldpay:
                #expect(sent.path.hasPrefix("/payments/settlements/refunds/full/"), "the settle answer's refund link")
                #expect(body["reference"] as? String == settled.reference(1))
                #expect(body["value"] == nil, "a full refund names no amount")
            default:
                #expect(
                    sent.path == "/v2/\(ProcessorFixture.worldline.merchantId)/payments/\(settled.payment.processorReference ?? "")/refund")
                let money = try #require(body["amountOfMoney"] as? [String: Any])
                #expect(money["amount"] as? Int == 990 && money["currencyCode"] as? String == "EUR")
                #expect((body["references"] as? [String: Any])?["merchantReference"] as? String == settled.reference(1))
                #expect(outcome.code == "REFUND_REQUESTED")
            }

            let again = try await settled.refund(990, 2)
            #expect(again.status == .refused, "nothing is left to refund")
            #expect(again.code?.isEmpty == false)
            #expect(settled.refunded == [990])
        }
    }

    @Test("two partial refunds, then a third above what is left is refused and refunds nothing", arguments: kinds)
    func partialRefunds(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            #expect(try await settled.refund(300, 1).status == .refunded)
            if kind == .worldpay {
                #expect(settled.mock.received.last?.path.hasPrefix("/payments/settlements/refunds/partials/") == true)
                let value = try #require(try settled.sentBody["value"] as? [String: Any])
                #expect(value["amount"] as? Int == 300 && value["currency"] as? String == "EUR")
                #expect(try settled.sentBody["reference"] as? String == settled.reference(1))
            }
            #expect(try await settled.refund(400, 2).status == .refunded)
            let third = try await settled.refund(300, 3)
            #expect(third.status == .refused)
            #expect(third.message?.contains("290") == true, "the processor's reason is kept: 290 are left")
            #expect(settled.refunded == [300, 400])
            #expect(settled.mock.balance(forPayment: settled.payment.reference).refunded == 700)
            #expect(try await settled.refund(290, 4).status == .refunded, "what is left can still be refunded")
            #expect(settled.mock.balance(forPayment: settled.payment.reference).refunded == 990)
        }
    }

    @Test("a re-send of the same reference gets the first answer again and refunds nothing more", arguments: kinds)
    func resend(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let first = try await settled.refund(500, 1)
            let second = try await settled.refund(500, 1, sends: 2)
            #expect(first.status == .refunded && second.status == .refunded)
            #expect(second.processorReference == first.processorReference && first.processorReference != nil)
            #expect(settled.refunded == [500], "one refund, whatever the re-sends")
            #expect(try await settled.refund(490, 2).status == .refunded, "the re-send did not eat into what is left")
        }
    }

    @Test(
        "no definite answer (5xx, 409, a dropped connection) throws; the re-sent reference then refunds exactly once",
        arguments: kinds, [MockRefundBehaviour.status(500), .status(503), .status(409), .dropAfterRefund])
    func noAnswer(kind: ProcessorFixture.Kind, fault: MockRefundBehaviour) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            fixture.mock.refundBehaviour = fault
            await #expect(throws: ProcessorNoAnswer.self) { try await settled.refund(300, 1) }
            #expect(settled.refunded == (fault == .dropAfterRefund ? [300] : []), "the processor did what it did")

            fixture.mock.refundBehaviour = .accept
            let resent = try await settled.refund(300, 1, sends: 2)
            #expect(resent.status == .refunded)
            #expect(settled.refunded == [300], "refunded once")
            #expect(try settled.sentBody.description.contains(settled.reference(1)), "the same reference again")
        }
    }

    @Test("Worldpay calls go on a fresh connection: a refund whose connection drops after the charge reaches Worldpay once")
    func noSilentResend() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)  // leaves pooled connections to reuse
            fixture.mock.refundBehaviour = .dropAfterRefund
            let before = fixture.mock.received.count { $0.path.contains("efund") }
            await #expect(throws: ProcessorNoAnswer.self) { try await settled.refund(300, 1) }
            let sent = fixture.mock.received.count { $0.path.contains("efund") } - before
            #expect(sent == 1, "libcurl re-sent the refund by itself \(sent - 1) time(s)")
        }
    }

    @Test("a refusal is trusted on a reference's first send only, unless the processor declined the refund itself", arguments: kinds)
    func refusalOnResend(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            #expect(try await settled.refund(900, 1).status == .refunded)
            // 90 are left: a re-sent reference asking for more may be meeting its own first send.
            await #expect(throws: ProcessorNoAnswer.self) { try await settled.refund(100, 2, sends: 2) }
            #expect(try await settled.refund(100, 3).status == .refused)

            fixture.mock.refundBehaviour = .reject(code: "30511001", description: "Refund declined by the acquirer")
            switch kind {
            case .worldpay:
                // Worldpay's refusal is a 400 like any other: after the first send, it proves nothing.
                await #expect(throws: ProcessorNoAnswer.self) { try await settled.refund(50, 4, sends: 2) }
            default:
                // Worldline's REJECTED refund is its answer to the idempotence key: final on any send.
                let declined = try await settled.refund(50, 4, sends: 2)
                #expect(declined.status == .refused)
                #expect(declined.code == "30511001" && declined.message == "Refund declined by the acquirer")
                #expect(declined.processorReference != nil)
            }
            #expect(settled.refunded == [900])
        }
    }

    @Test("a payment that is only authorized is not refunded", arguments: kinds)
    func notSettled(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            let authorized = try await SettledPayment.make(fixture, settle: false)
            let requests = fixture.mock.received.count
            let outcome = try await authorized.refund(990, 1)
            #expect(outcome.status == .refused)
            switch kind {
            case .worldpay:
                #expect(outcome.code == "no_refund_link", "Worldpay's refund links come with the settlement")
                #expect(fixture.mock.received.count == requests, "nothing was sent")
            default:
                #expect(outcome.message?.contains("not settled") == true)
                #expect(fixture.mock.received.count == requests + 1)
            }
            #expect(fixture.mock.refunds.isEmpty)
        }
    }

    @Test("Worldline: the refund is signed (v1HMAC over its path and idempotence key) and its key is the refund's reference")
    func worldlineSigned() async throws {
        try await ProcessorFixture.with(.worldlineEncrypted, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            #expect(try await settled.refund(100, 1).status == .refunded)
            let sent = try #require(fixture.mock.received.last)
            #expect(sent.path.hasSuffix("/refund"))
            #expect(sent.header("X-GCS-Idempotence-Key") == settled.reference(1))
            let expected = WorldlineProcessor.authorization(
                method: "POST", contentType: try #require(sent.header("Content-Type")), date: try #require(sent.header("Date")),
                gcsHeaders: [(name: "X-GCS-Idempotence-Key", value: settled.reference(1))], path: sent.path,
                keyId: ProcessorFixture.worldline.apiKeyId, secret: ProcessorFixture.worldline.secretApiKey)
            #expect(sent.header("Authorization") == expected)
            #expect(expected.hasPrefix("GCS v1HMAC:\(ProcessorFixture.worldline.apiKeyId):"))
        }
    }
}
