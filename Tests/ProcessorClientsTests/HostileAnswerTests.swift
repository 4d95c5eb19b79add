import Foundation
import OrchardCore
import ProcessorClients
import Testing

/// Processors' answers are hostile until read: each field of a real answer swapped for every
/// other JSON type (and for numbers and nestings Swift cannot hold), and whole bodies that are
/// no JSON, must never trap, and must never turn an answer Orchard cannot read into a definite
/// "nothing charged" (`failed`): on a 2xx it is no answer, and the payment stays unknown.
@Suite("Hostile processor answers: read by type, never a trap, never failed from what was not read")
struct HostileAnswerTests {
    static let reference = "ord_0123456789abcdef0123456789"
    static let worldpayURL = "https://try.access.worldpay.com"
    static let worldlineURL = "https://payment.preprod.direct.worldline-solutions.com/v2/PSPID/payments"

    /// JSON text for every type, and the values that trap careless code: past Int64, past
    /// Double, negative zero, a fraction, nesting deeper than the decoder takes.
    static let replacements: [String] = [
        #""text""#, #""""#, "0", "-0", "1.5", "5.0", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e400",
        "-1e400", "1e308", "true", "false", "null", "[]", #"[1,"a",null]"#, "{}", #"{"a":{"b":[]}}"#,
        String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
    ]

    /// The replacements that make the whole body unreadable (a number no Double holds, nesting
    /// past the decoder's limit): the answer then reads as an empty object.
    static let unreadable: Set<String> = ["1e400", "-1e400", replacements[replacements.count - 1]]

    /// Bodies that are no JSON object at all.
    static let hostileBodies: [[UInt8]] =
        ["", " ", "null", "[]", "7", "-0", "1e400", "9223372036854775808", #""authorized""#, "{", "<html>502</html>", #"{"a":1e400}"#]
        .map { Array($0.utf8) } + [
            [0xFF, 0xFE], [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D], Array(String(repeating: "[", count: 100_000).utf8),
            Array((String(repeating: #"{"a":"#, count: 5_000) + "1" + String(repeating: "}", count: 5_000)).utf8),
        ]

    /// Every path to a value inside `value` (members and elements, nested ones too).
    static func paths(_ value: JSONValue, _ prefix: [String] = []) -> [[String]] {
        switch value {
        case .object(let members):
            members.flatMap { key, member in [prefix + [key]] + paths(member, prefix + [key]) }
        case .array(let elements):
            elements.indices.flatMap { index in [prefix + ["\(index)"]] + paths(elements[index], prefix + ["\(index)"]) }
        default:
            []
        }
    }

    static let marker = "@@hostile@@"

    /// `value` with the value at `path` replaced by the raw JSON text `replacement`.
    static func body(_ value: JSONValue, replacing path: [String], with replacement: String) throws -> [UInt8] {
        let text = String(decoding: try replaced(value, path[...]).encoded(), as: UTF8.self)
        return Array(text.replacingOccurrences(of: "\"\(marker)\"", with: replacement).utf8)
    }

    static func replaced(_ value: JSONValue, _ path: ArraySlice<String>) -> JSONValue {
        guard let key = path.first else { return .string(marker) }
        switch value {
        case .object(var members):
            members[key] = replaced(members[key] ?? .null, path.dropFirst())
            return .object(members)
        case .array(var elements):
            guard let index = Int(key), elements.indices.contains(index) else { return value }
            elements[index] = replaced(elements[index], path.dropFirst())
            return .array(elements)
        default:
            return value
        }
    }

    /// Each field of `answer` swapped for each replacement: `check` gets the path, the
    /// replacement and the mutated body.
    static func mutations(of answer: JSONValue, _ check: ([String], String, [UInt8]) throws -> Void) throws {
        for path in paths(answer) {
            for replacement in replacements {
                try check(path, replacement, try body(answer, replacing: path, with: replacement))
            }
        }
    }

    static func worldpay(_ status: Int, _ body: [UInt8]) -> Result<AuthorizationOutcome, any Error> {
        Result {
            try WorldpayProcessor.authorizationOutcome(
                status: status, body: body, reference: reference, baseURL: worldpayURL, storesCredential: true)
        }
    }

    static func worldline(_ status: Int, _ body: [UInt8]) -> Result<AuthorizationOutcome, any Error> {
        Result {
            try WorldlineProcessor.authorizationOutcome(
                status: status, body: body, reference: reference, paymentsURL: worldlineURL, storesCredential: true)
        }
    }
}

extension Result {
    var outcome: Success? { try? get() }
    var isNoAnswer: Bool {
        if case .failure(let error) = self { return error is ProcessorNoAnswer }
        return false
    }
}

extension HostileAnswerTests {
    /// Worldpay's authorized answer, as the mock processor writes it.
    static let worldpayAuthorized: JSONValue = [
        "outcome": "authorized",
        "paymentInstrument": ["type": "card/network+masked", "card": ["brand": "visa", "fundingType": "debit"]],
        "_links": [
            "cardPayments:settle": ["href": "https://try.access.worldpay.com/payments/settlements/full/abc"],
            "cardPayments:cancel": ["href": "/payments/authorizations/cancellations/abc"],
        ],
        "scheme": ["reference": "060720116005060"],
        "tokenPaymentInstrument": ["type": "card/tokenized", "href": "https://try.access.worldpay.com/tokens/abc"],
    ]

    @Test("Worldpay: the authorized answer reads as before, links and token included")
    func worldpayBaseline() throws {
        let outcome = try #require(Self.worldpay(201, try Self.worldpayAuthorized.encoded()).outcome)
        #expect(outcome.status == .authorized && outcome.processorReference == Self.reference)
        #expect(outcome.links["settle"] == "https://try.access.worldpay.com/payments/settlements/full/abc")
        #expect(outcome.links["cancel"] == "https://try.access.worldpay.com/payments/authorizations/cancellations/abc")
        #expect(outcome.storedCredential?.reference == "https://try.access.worldpay.com/tokens/abc")
        #expect(outcome.storedCredential?.schemeReference == "060720116005060")
    }

    @Test(
        "Worldpay: every field of an authorized answer swapped for every other type: no trap; never failed; an unread outcome is no answer")
    func worldpayAuthorizedMutations() throws {
        try Self.mutations(of: Self.worldpayAuthorized) { path, replacement, body in
            let read = Self.worldpay(201, body)
            #expect(read.outcome?.status != .failed, "\(path) = \(replacement.prefix(20))")
            if path == ["outcome"] {
                #expect(read.isNoAnswer, "an outcome that is not the string authorized or refused: \(replacement.prefix(20))")
            }
            if let outcome = read.outcome {
                #expect(outcome.status == .authorized)
                #expect(Set(outcome.links.keys).isSubset(of: ["settle", "cancel"]), "\(outcome.links)")
            }
        }
    }

    @Test("Worldpay: a refusal and a refused request, each field swapped: refused stays refused, failed needs a 4xx")
    func worldpayRefusalMutations() throws {
        let refused: JSONValue = ["outcome": "refused", "code": "5", "description": "REFUSED"]
        try Self.mutations(of: refused) { path, replacement, body in
            let read = Self.worldpay(201, body)
            if path == ["outcome"] || Self.unreadable.contains(replacement) {
                #expect(read.isNoAnswer, "\(path) = \(replacement.prefix(20))")
            } else {
                #expect(read.outcome?.status == .refused, "\(path) = \(replacement.prefix(20))")
            }
        }
        let schemaError: JSONValue = [
            "errorName": "bodyDoesNotMatchSchema", "message": "The json body provided does not match the expected schema",
            "validationErrors": [["errorName": "fieldIsMissing", "message": "channel"]],
        ]
        try Self.mutations(of: schemaError) { path, replacement, body in
            let outcome = Self.worldpay(400, body).outcome
            #expect(outcome?.status == .failed, "a refused request is refused by its status: \(path) = \(replacement.prefix(20))")
            if path != ["errorName"] {
                #expect(outcome?.code == "bodyDoesNotMatchSchema" || outcome?.code == "http_400", "\(path) = \(replacement.prefix(20))")
            }
        }
    }

    @Test("Worldpay: bodies that are no JSON object: no answer on a 2xx and 5xx, failed only on a refused request")
    func worldpayHostileBodies() {
        for body in Self.hostileBodies {
            #expect(Self.worldpay(201, body).isNoAnswer)
            #expect(Self.worldpay(200, body).isNoAnswer)
            #expect(Self.worldpay(500, body).isNoAnswer)
            #expect(Self.worldpay(402, body).isNoAnswer)
            #expect(Self.worldpay(400, body).outcome == AuthorizationOutcome(status: .failed, code: "http_400"))
            #expect((try? WorldpayProcessor.refundOutcome(status: 202, body: body, sends: 1)) == nil, "a 202 without Worldpay's body")
            #expect((try? WorldpayProcessor.refundOutcome(status: 400, body: body, sends: 2)) == nil, "a re-send's 4xx proves nothing")
            #expect((try? WorldpayProcessor.refundOutcome(status: 400, body: body, sends: 1))?.status == .refused)
            #expect(
                (try? WorldpayProcessor.paymentEventsLookup(status: 200, body: body, reference: Self.reference, baseURL: Self.worldpayURL))
                    == nil)
            #expect((try? WorldpayProcessor.refundLookup(status: 200, body: body, paymentId: "p1", refundReference: Self.reference)) == nil)
        }
    }
}

extension HostileAnswerTests {
    /// Worldline's CreatePayment answer for an authorization that holds funds, as the mock writes it.
    static let worldlineAuthorized: JSONValue = [
        "payment": [
            "id": "3000000000_0", "status": "PENDING_CAPTURE",
            "statusOutput": ["statusCategory": "PENDING_MERCHANT", "statusCode": 5, "isAuthorized": true],
            "paymentOutput": ["references": ["merchantReference": .string(reference)]],
        ],
        "creationOutput": ["isNewToken": true, "tokenizationSucceeded": true, "token": "0a1b2c3d"],
    ]

    /// The fields that decide that a payment holds funds: any other value there is not authorized.
    static let decisive: Set<[String]> = [
        ["payment"], ["payment", "status"], ["payment", "statusOutput"], ["payment", "statusOutput", "statusCategory"],
        ["payment", "statusOutput", "isAuthorized"],
    ]

    @Test("Worldline: the authorized answer reads as before, links and token included")
    func worldlineBaseline() throws {
        let outcome = try #require(Self.worldline(201, try Self.worldlineAuthorized.encoded()).outcome)
        #expect(outcome.status == .authorized && outcome.processorReference == "3000000000_0" && outcome.code == "PENDING_CAPTURE")
        #expect(outcome.links["settle"] == Self.worldlineURL + "/3000000000_0/capture")
        #expect(outcome.storedCredential?.reference == "0a1b2c3d")
    }

    @Test(
        "Worldline: every field of an authorized answer swapped for every other type: no trap; never failed; authorized only as Worldline says it"
    )
    func worldlineAuthorizedMutations() throws {
        try Self.mutations(of: Self.worldlineAuthorized) { path, replacement, body in
            let read = Self.worldline(201, body)
            #expect(read.outcome?.status != .failed, "\(path) = \(replacement.prefix(20))")
            if Self.decisive.contains(path) && replacement != "true" || Self.unreadable.contains(replacement) {
                #expect(read.outcome?.status != .authorized, "\(path) = \(replacement.prefix(20))")
            }
            if path == ["payment", "paymentOutput", "references", "merchantReference"], replacement.hasPrefix("\"") {
                #expect(read.isNoAnswer, "an answer about another reference")
            }
            if Self.unreadable.contains(replacement) { #expect(read.isNoAnswer) }
        }
    }

    @Test("Worldline: a rejection and a refused request, each field swapped: no trap, never authorized, failed needs a 4xx")
    func worldlineRefusalMutations() throws {
        let rejection: JSONValue = [
            "errorId": "e1", "errors": [["errorCode": "30511001", "id": "PAYMENT_REJECTED", "message": "REJECTED"]],
            "paymentResult": [
                "payment": [
                    "id": "3000000000_0", "status": "REJECTED", "statusOutput": ["statusCategory": "UNSUCCESSFUL", "statusCode": 2],
                ]
            ],
        ]
        try Self.mutations(of: rejection) { path, replacement, body in
            let read = Self.worldline(402, body)
            #expect(read.outcome?.status != .authorized && read.outcome?.status != .failed, "\(path) = \(replacement.prefix(20))")
            #expect(Self.worldline(400, body).outcome?.status == .failed, "a refused request is refused by its status")
        }
    }

    @Test("Worldline: bodies that are no JSON object: no answer on a 2xx, 402 and 5xx, failed only on a refused request")
    func worldlineHostileBodies() {
        for body in Self.hostileBodies {
            for status in [200, 201, 402, 409, 500] {
                #expect(Self.worldline(status, body).isNoAnswer, "HTTP \(status)")
            }
            #expect(Self.worldline(400, body).outcome == AuthorizationOutcome(status: .failed, code: "http_400"))
            let refund = { (status: Int, sends: Int) in
                try? WorldlineProcessor.refundOutcome(status: status, body: body, reference: Self.reference, sends: sends)
            }
            #expect(refund(201, 1) == nil && refund(400, 2) == nil && refund(402, 1) == nil)
            #expect(refund(400, 1)?.status == .refused)
            #expect(
                (try? WorldlineProcessor.paymentLookup(
                    status: 200, body: body, id: "3000000000_0", reference: Self.reference, paymentsURL: Self.worldlineURL)) == .pending)
            #expect(
                (try? WorldlineProcessor.refundLookup(
                    status: 200, body: body, id: "3000000000_0", reference: Self.reference, processorReference: nil)) == nil)
        }
    }

    @Test("Worldline: a refund's answer, each field swapped: no trap; refunded only as Worldline says it")
    func worldlineRefundMutations() throws {
        let requested: JSONValue = [
            "id": "3000000000_0_r1", "status": "REFUND_REQUESTED",
            "statusOutput": ["statusCategory": "PENDING_CONNECT_OR_3RD_PARTY", "statusCode": 81],
            "refundOutput": ["references": ["merchantReference": .string(Self.reference)]],
        ]
        #expect(
            try WorldlineProcessor.refundOutcome(status: 201, body: requested.encoded(), reference: Self.reference, sends: 1).status
                == .refunded)
        try Self.mutations(of: requested) { path, replacement, body in
            let outcome = try? WorldlineProcessor.refundOutcome(status: 201, body: body, reference: Self.reference, sends: 1)
            if path == ["status"] || Self.unreadable.contains(replacement) {
                #expect(outcome == nil, "\(path) = \(replacement.prefix(20))")
            }
            let refunds = Array(#"{"refunds":["#.utf8) + body + Array("]}".utf8)
            _ = try? WorldlineProcessor.refundLookup(
                status: 200, body: refunds, id: "3000000000_0", reference: Self.reference, processorReference: "3000000000_0_r1")
        }
    }

    @Test("Worldline: status codes past Int64, past Double, negative zero and fractions are read without a trap")
    func worldlineStatusCodes() throws {
        for code in ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e308", "-0", "5.0", "5.5", "1e15", "true"] {
            let text =
                #"{"payment":{"id":"p1","status":"PENDING_CAPTURE","statusOutput":{"statusCategory":"PENDING_MERCHANT","statusCode":\#(code),"isAuthorized":true}}}"#
            let read = Self.worldline(201, Array(text.utf8))
            #expect(read.outcome?.status != .failed, "\(code)")
            if code == "5.0" { #expect(read.outcome?.status == .authorized, "5.0 is the integer 5") }
            if code == "-0" { #expect(read.outcome?.status == .pending, "0 is not a code of an authorization") }
        }
    }
}
