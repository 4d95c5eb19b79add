import ApplePay
import Foundation
import Synchronization

/// Worldpay Access payments: Basic-authenticated authorizations, settle and cancel by the links
/// they hand out.
extension MockWorldpay {
    // MARK: Worldpay Access

    func worldpayError(_ status: Int, _ name: String, _ message: String) -> Reply {
        Self.reply(status, ["errorName": name, "message": message])
    }

    func worldpayAuthorized(_ request: MockProcessorRequest) -> Reply? {
        let expected = "Basic " + Data("\(account.username):\(account.password)".utf8).base64EncodedString()
        guard request.header("Authorization") == expected else {
            return worldpayError(401, "accessDenied", "Access to the requested resource has been denied")
        }
        return nil
    }

    /// A request checked: accepted with what it asks, or refused with the answer to give.
    enum Checked<Value> {
        case accepted(Value)
        case refused(Reply)
    }

    /// What every Worldpay payment request carries, checked: Basic credentials, the v7 media
    /// type, `transactionReference`, `merchant.entity`, the narrative and the value.
    struct WorldpayPaymentRequest {
        var body: [String: Any]
        var reference: String
        var instruction: [String: Any]
        var amount: Int64
        var currency: String
    }

    /// The request's common part, or the answer refusing it; `problems` checks the rest of the
    /// instruction (the payment instrument, the agreement) and lists what is wrong.
    func worldpayPaymentRequest(_ request: MockProcessorRequest, problems check: ([String: Any]) -> [String])
        -> Checked<WorldpayPaymentRequest>
    {
        if let denied = worldpayAuthorized(request) { return .refused(denied) }
        let mediaType = "application/vnd.worldpay.payments-v7+json"
        guard request.header("Content-Type") == mediaType else {
            return .refused(worldpayError(415, "headerHasInvalidValue", "Content-Type must be \(mediaType)"))
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return .refused(worldpayError(400, "bodyIsNotJson", "The body is not JSON"))
        }
        var problems: [String] = []
        let reference = body["transactionReference"] as? String ?? ""
        if reference.isEmpty || reference.count > 64 { problems.append("transactionReference: 1–64 characters") }
        if (body["merchant"] as? [String: Any])?["entity"] as? String != account.entity {
            problems.append("merchant.entity: not configured")
        }
        let instruction = body["instruction"] as? [String: Any] ?? [:]
        let line1 = (instruction["narrative"] as? [String: Any])?["line1"] as? String ?? ""
        if line1.isEmpty || line1.count > 24 { problems.append("instruction.narrative.line1: 1–24 characters") }
        let value = instruction["value"] as? [String: Any] ?? [:]
        if !Self.isCurrency(value["currency"]) { problems.append("instruction.value.currency: ISO 4217 code") }
        let amount = Self.integer(value["amount"])
        if amount == nil { problems.append("instruction.value.amount: an integer in minor units") }
        problems += check(instruction)
        guard problems.isEmpty, let amount else {
            return .refused(Self.worldpaySchemaError(problems.map { ("fieldIsInvalid", $0) }))
        }
        return .accepted(
            WorldpayPaymentRequest(
                body: body, reference: reference, instruction: instruction, amount: amount, currency: value["currency"] as? String ?? ""))
    }

    /// Worldpay's 400 for a body its schema refuses, one validation error per problem.
    static func worldpaySchemaError(_ problems: [(name: String, message: String)]) -> Reply {
        reply(
            400,
            [
                "errorName": "bodyDoesNotMatchSchema", "message": "The json body provided does not match the expected schema",
                "validationErrors": problems.map { ["errorName": $0.name, "message": $0.message] },
            ])
    }

    func worldpayAuthorize(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        var usage: String?
        var wallet: PaymentData?
        var googlePay: (form: String, token: String?)?
        let checking = worldpayPaymentRequest(request) { instruction in
            var problems: [String] = []
            let instrument = instruction["paymentInstrument"] as? [String: Any] ?? [:]
            let type = instrument["type"] as? String ?? ""
            let agreement = worldpayFirstAgreement(instruction)
            usage = agreement.usage
            if Self.googlePayInstruments.contains(type) {
                googlePay = (type, type == Self.googlePayWallet ? instrument["walletToken"] as? String : nil)
                return Self.googlePayProblems(instrument, type: type) + agreement.problems
            }
            if type != "card/wallet+applepay" {
                problems.append("paymentInstrument.type: card/wallet+applepay, \(Self.googlePayInstruments.joined(separator: ", "))")
            }
            let walletJSON = (instrument["walletToken"] as? String).flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            if walletJSON == nil || ["version", "data", "signature", "header"].contains(where: { walletJSON?[$0] == nil }) {
                problems.append("paymentInstrument.walletToken: the Apple Pay paymentData as a JSON string")
            }
            wallet = (instrument["walletToken"] as? String).flatMap { try? JSONDecoder().decode(PaymentData.self, from: Data($0.utf8)) }
            return problems + agreement.problems
        }
        let checked: WorldpayPaymentRequest
        switch checking {
        case .accepted(let request): checked = request
        case .refused(let reply): return reply
        }
        // v7 requires the channel on a customer-initiated payment (and refuses it on a merchant-initiated one).
        guard checked.body["channel"] as? String == "ecom" else {
            return Self.worldpaySchemaError([("fieldIsMissing", "channel: ecom for a customer-initiated payment")])
        }
        // Only a first payment that asked for a token gets one, unless tokens are withheld.
        let token = usage != nil && !mock.withholdsTokens ? "\(mock.baseURL)/tokens/\(Self.newTokenId())" : nil
        let scheme = "0607\(Int.random(in: 10_000_000_000...99_999_999_999))"
        var extra: [String: Any] = ["scheme": ["reference": scheme]]
        if let token { extra["tokenPaymentInstrument"] = ["type": "card/tokenized", "href": token] }
        var mode = "walletToken"
        var declined = wallet.flatMap { mock.heldKeyRefusal($0, amount: checked.amount, currency: checked.currency) }
        if let googlePay {
            mode = Self.googlePayModes[googlePay.form] ?? mode
            declined = mock.receiveGooglePay(
                processor: name, reference: checked.reference, form: googlePay.form, token: googlePay.token,
                recipientId: "gateway:" + Self.googlePayGateway, gatewayMerchantId: \.worldpayMerchantId)
        }
        return worldpayPayment(checked, mode: mode, extra: extra, declined: declined, mock: mock) { state, taken in
            guard taken.state == .authorized, let token, let usage else { return }
            state.tokens.append(
                MockStoredToken(
                    processor: name, reference: token, usage: usage, paymentReference: checked.reference, schemeReference: scheme,
                    deleted: false))
        }
    }

    // MARK: Google Pay

    /// Worldpay's name at Google: gateway-mode tokens are signed for `gateway:worldpay`.
    static let googlePayGateway = "worldpay"
    static let googlePayWallet = "card/wallet+googlepay"
    /// Google Pay's instruments: the token for Worldpay to decrypt, or what the merchant decrypted
    /// (a device token with its cryptogram, or for `PAN_ONLY` the card), each with its charge's mode.
    static let googlePayModes = [googlePayWallet: "walletToken", "card/networkToken+googlepay": "networkToken", "card/plain": "card"]
    static let googlePayInstruments = [googlePayWallet, "card/networkToken+googlepay", "card/plain"]

    /// What Worldpay checks of a Google Pay instrument of `type`.
    static func googlePayProblems(_ instrument: [String: Any], type: String) -> [String] {
        switch type {
        case googlePayWallet:
            return MockProcessors.isGooglePayToken(instrument["walletToken"])
                ? [] : ["paymentInstrument.walletToken: the Google Pay token (an ECv2 PaymentMethodToken) as a JSON string"]
        case "card/networkToken+googlepay":
            var problems = expiryProblems(instrument["expiryDate"])
            if !MockProcessors.isCardNumber(instrument["tokenNumber"]) { problems.append("paymentInstrument.tokenNumber: 12–19 digits") }
            if (instrument["cryptogram"] as? String ?? "").isEmpty {
                problems.append("paymentInstrument.cryptogram: the token's cryptogram")
            }
            if instrument["eci"] != nil && instrument["eci"] as? String == nil { problems.append("paymentInstrument.eci: a string") }
            return problems
        default:
            var problems = expiryProblems(instrument["expiryDate"])
            if !MockProcessors.isCardNumber(instrument["cardNumber"]) { problems.append("paymentInstrument.cardNumber: 12–19 digits") }
            return problems
        }
    }

    static func expiryProblems(_ value: Any?) -> [String] {
        let expiry = value as? [String: Any]
        guard let month = integer(expiry?["month"]), let year = integer(expiry?["year"]), (1...12).contains(month),
            (2000...9999).contains(year)
        else { return ["paymentInstrument.expiryDate: {month: 1–12, year: four digits}"] }
        return []
    }

    /// Takes a checked payment under the current behaviour, idempotent on `transactionReference`:
    /// the answer carries the settle and cancel links, and `extra`.
    func worldpayPayment(
        _ checked: WorldpayPaymentRequest, mode: String, extra: [String: Any], declined: (code: String, description: String)? = nil,
        mock: MockProcessors, taken: (inout State, MockCharge) -> Void
    ) -> Reply {
        let key = Data(checked.reference.utf8).base64EncodedString().replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "+", with: "-")
        var answer: [String: Any] = [
            "outcome": "authorized",
            "paymentInstrument": ["type": "card/network+masked", "card": ["brand": "visa", "fundingType": "debit"]],
            "_links": [
                "cardPayments:cancel": ["href": "\(mock.baseURL)/payments/authorizations/cancellations/\(key)"],
                "cardPayments:settle": ["href": "\(mock.baseURL)/payments/settlements/full/\(key)"],
                "cardPayments:partialSettle": ["href": "\(mock.baseURL)/payments/settlements/partials/\(key)"],
                "cardPayments:events": ["href": "\(mock.baseURL)/payments/events/\(key)"],
            ],
        ]
        answer.merge(extra) { $1 }
        return mock.authorization(
            reference: name + ":" + checked.reference,
            charge: MockCharge(
                processor: name, reference: checked.reference, id: key, amount: checked.amount, currency: checked.currency,
                state: .authorized, mode: mode),
            authorized: Self.body(answer), authorizedStatus: 201,
            refused: { code, description in (201, Self.body(["outcome": "refused", "code": code, "description": description])) },
            errorBody: { status in Self.body(["errorName": "internalErrorOccurred", "message": "Injected fault \(status)"]) },
            inProgress: InProgressAnswer(
                status: 400,
                body: Self.body([
                    "errorName": "duplicateTransactionReference",
                    "message": "A request with this transactionReference is still being processed",
                ])),
            replayHeaders: [], declined: declined, taken: taken)
    }

    func worldpayAction(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let settle = request.path.hasPrefix("/payments/settlements/full/")
        let key = String(request.path.split(separator: "/").last ?? "")
        return mock.state.withLock { state in
            guard let index = state.charges.firstIndex(where: { $0.processor == name && $0.id == key }) else {
                return Self.reply(404, ["errorName": "urlNotFound", "message": "no such payment"])
            }
            let charge = state.charges[index]
            if !settle, charge.state == .settled, charge.capturedAmount != nil, !charge.restReleased {
                // After a partial settlement the answer's cancel releases what is left.
                state.charges[index].restReleased = true
                return Self.reply(202, ["_links": [:]])
            }
            guard charge.state == .authorized else {
                return Self.reply(409, ["errorName": "entityIsInWrongState", "message": "the payment is \(charge.state.rawValue)"])
            }
            state.charges[index].state = settle ? .settled : .cancelled
            if settle { state.charges[index].settledAt = state.clock.now }
            // As Worldpay's, a settlement's answer is where the refund links come from.
            let refunds = "\(mock.baseURL)/payments/settlements/refunds"
            let links = [
                "payments:refund": ["href": "\(refunds)/full/\(key)"], "payments:partialRefund": ["href": "\(refunds)/partials/\(key)"],
            ]
            return Self.reply(202, ["_links": settle ? links : [:]])
        }
    }
}
