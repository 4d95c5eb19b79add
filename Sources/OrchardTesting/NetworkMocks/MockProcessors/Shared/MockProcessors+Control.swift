import ApplePay
import Foundation
import Synchronization

/// The mock processors as a test in another process sees them: `orchard-sandbox demo` runs the
/// mock beside the server, so a test that drives the demo from outside (the generated client's
/// test) reads what the mock took through a route, and queues its faults through the demo's flags.
extension MockProcessors {
    /// The read-only test route: `GET /_mock/charges` answers 200 `{"charges", "authorizations",
    /// "refunds", "decrypted", "googlePay"}`: every payment taken (``charges``), every authorization request
    /// received with its processor and idempotency reference (retries and re-sends each count),
    /// every refund made (``refunds``), the amount and numeric currency of every token the mock
    /// decrypted with a held key, and every Google Pay payment request (``googlePayPayments``:
    /// processor, reference, form, the token string exactly as received in gateway mode, and the
    /// `authMethod` of one the mock opened as gateway). Real processors have no such path, so it never shadows one.
    static let chargesControlPath = "/_mock/charges"
    /// The one write route: `POST /_mock/next-answers` `{"answers": ["decline", …]}` queues how the
    /// next authorization requests are answered (``answerNext(_:)``), for a test in another process
    /// that must see a decline or a lost answer at a moment it chooses; 200 `{"queued": n}`.
    static let nextAnswersControlPath = "/_mock/next-answers"

    /// The answers ``nextAnswersControlPath`` takes, by name.
    enum NamedAnswer: String, Decodable, CaseIterable {
        case authorize, decline, drop, unavailable

        var behaviour: MockProcessorBehaviour {
            switch self {
            case .authorize: .authorize
            case .decline: .refuse(code: "05", description: "Do not honour")
            case .drop: .dropAfterCharge
            case .unavailable: .status(503)
            }
        }
    }

    private struct NextAnswers: Decodable {
        var answers: [NamedAnswer]
    }

    /// Answers the next authorization requests with `behaviours`, one each in order, then as
    /// ``behaviour`` says again: a fault that happens once, whatever the test does next.
    public func answerNext(_ behaviours: [MockProcessorBehaviour]) {
        state.withLock { $0.upcoming += behaviours }
    }

    /// How many answers ``MockProcessorBehaviour/awaitRelease`` keeps back now: a test waits for
    /// its request to have arrived before it does what must come before the answer.
    public var awaitedAnswers: Int { state.withLock { $0.awaiting.count } }

    /// Sends every answer ``MockProcessorBehaviour/awaitRelease`` kept back.
    public func releaseAwaitedAnswers() {
        let answers = state.withLock { state in
            defer { state.awaiting = [] }
            return state.awaiting
        }
        for answer in answers { answer() }
    }

    /// Keeps `answer` back until ``releaseAwaitedAnswers()``.
    func keepBack(_ answer: @escaping @Sendable () -> Void) {
        state.withLock { $0.awaiting.append(answer) }
    }

    /// The control routes, or nil for a processor's request.
    func controlRoute(_ request: MockProcessorRequest) -> Reply? {
        guard request.path.hasPrefix("/_mock/") else { return nil }
        if request.path == Self.nextAnswersControlPath {
            guard request.method == "POST" else { return Self.reply(405, ["error": "use POST"]) }
            guard let next = try? JSONDecoder().decode(NextAnswers.self, from: Data(request.body)), next.answers.count <= 100 else {
                let names = NamedAnswer.allCases.map(\.rawValue).joined(separator: ", ")
                return Self.reply(400, ["error": "send {\"answers\": [up to 100 of \(names)]}"])
            }
            answerNext(next.answers.map(\.behaviour))
            return Self.reply(200, ["queued": next.answers.count])
        }
        guard request.path == Self.chargesControlPath else { return Self.reply(404, ["error": "no such control route"]) }
        guard request.method == "GET" else { return Self.reply(405, ["error": "use GET"]) }
        let (charges, received, refunds, decrypted, googlePay) = state.withLock {
            ($0.charges, $0.received, $0.refunds, $0.decrypted, $0.googlePayPayments)
        }
        return Self.reply(
            200,
            [
                "charges": charges.map { charge in
                    [
                        "processor": charge.processor, "reference": charge.reference, "id": charge.id, "amount": charge.amount,
                        "currency": charge.currency, "state": charge.state.rawValue, "mode": charge.mode,
                    ] as [String: Any]
                },
                "authorizations": received.compactMap(authorizationSummary),
                "refunds": refunds.map { refund in
                    [
                        "processor": refund.processor, "paymentReference": refund.paymentReference, "id": refund.id,
                        "amount": refund.amount, "currency": refund.currency,
                    ] as [String: Any]
                },
                "decrypted": decrypted.map {
                    ["amount": $0.fields.transactionAmount, "currency": $0.fields.currencyCode] as [String: Any]
                },
                "googlePay": googlePay.map { payment in
                    var entry: [String: Any] = ["processor": payment.processor, "reference": payment.reference, "form": payment.form]
                    entry["token"] = payment.token
                    entry["authMethod"] = payment.authMethod
                    return entry
                },
            ])
    }

    /// The processor and idempotency reference of an authorization request (the processor mock
    /// that knows it says which); nil for any other request.
    private func authorizationSummary(_ request: MockProcessorRequest) -> [String: String]? {
        for processor in processors {
            if let reference = processor.authorizationReference(request) { return ["processor": processor.name, "reference": reference] }
        }
        return nil
    }
}
