import Foundation

/// One processor's stand-in behind the shared listener (``MockProcessors``): it answers the
/// requests of its own API (payments, refunds, queries, mandates, held keys) in that API's
/// shapes, and leaves every other request to the next. A new processor is a folder holding one
/// of these and a line in ``MockProcessors/registered(worldpay:worldline:)``.
protocol MockProcessorAPI: Sendable {
    /// The processor's name, as payments, refunds and tokens record it (``MockCharge/processor``).
    var name: String { get }
    /// The answer to `request` when its path is one of this processor's, or nil. `mock` holds
    /// what every processor shares: the payments, refunds and tokens taken, the behaviour, the clock.
    func handle(_ request: MockProcessorRequest, mock: MockProcessors) -> MockProcessorReply?
    /// The idempotency reference of an authorization request to this processor; nil for any
    /// other request (what the control route lists as `authorizations`).
    func authorizationReference(_ request: MockProcessorRequest) -> String?
}

/// What to do with one request: answer, or drop the connection.
enum MockProcessorReply {
    case answer(status: Int, body: [UInt8], headers: [(String, String)])
    case drop
    case delayed(Duration, status: Int, body: [UInt8])
    /// No answer: the caller's timeout ends the request.
    case unanswered
    /// This answer, once the test releases it (``MockProcessors/releaseAwaitedAnswers()``).
    case awaiting(status: Int, body: [UInt8])
}

/// The shared helpers under the names the processor mocks use.
extension MockProcessorAPI {
    typealias Reply = MockProcessorReply
    typealias State = MockProcessors.State
    typealias InProgressAnswer = MockProcessors.InProgressAnswer
    typealias RefundAsk = MockProcessors.RefundAsk
    typealias RefundAnswers = MockProcessors.RefundAnswers

    static func reply(_ status: Int, _ object: [String: Any], headers: [(String, String)] = []) -> Reply {
        MockProcessors.reply(status, object, headers: headers)
    }

    static func body(_ object: [String: Any]) -> [UInt8] { MockProcessors.body(object) }

    /// An integer JSON number (not a bool, not a fraction).
    static func integer(_ value: Any?) -> Int64? { MockProcessors.integer(value) }

    static func isCurrency(_ value: Any?) -> Bool { MockProcessors.isCurrency(value) }

    /// A JSON boolean (not a number).
    static func isBool(_ value: Any?) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// A new token's random part: 32 lowercase hexadecimal digits, as Worldline's.
    static func newTokenId() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
