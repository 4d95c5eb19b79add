import ApplePay
import CurlClient
import Foundation
import GooglePay
import OrchardCore

/// Worldpay Access (Card Payments v7): `POST /cardPayments/customerInitiatedTransactions` with
/// the Apple Pay token as `walletToken`;
/// Worldpay decrypts it. Settle and cancel follow the `_links` Worldpay returned. Every call is
/// on a fresh connection: its documentation promises no de-duplication, and libcurl would
/// otherwise re-send a POST by itself when a reused connection dies under it.
public struct WorldpayProcessor: PaymentProcessor {
    public static let mediaType = "application/vnd.worldpay.payments-v7+json"

    let settings: WorldpaySettings
    let client: ProcessorHTTP

    public init(settings: WorldpaySettings, http: CurlHTTPClient) {
        self.settings = settings
        self.client = ProcessorHTTP(http: http, endpoint: settings.connection)
    }

    public var name: String { "worldpay" }

    var headers: [(name: String, value: String)] {
        let credentials = Data("\(settings.username.value):\(settings.password.value)".utf8).base64EncodedString()
        return [
            (name: "Authorization", value: "Basic \(credentials)"), (name: "Content-Type", value: Self.mediaType),
            (name: "Accept", value: Self.mediaType),
        ]
    }

    /// The request body: amounts in minor units, the wallet's token as its payment instrument.
    func body(_ request: AuthorizationRequest) throws -> [UInt8] {
        var instruction: JSONValue = [
            "narrative": ["line1": .string(settings.narrative)],
            "value": ["currency": .string(request.order.priced.currency), "amount": .integer(request.order.priced.total)],
            "paymentInstrument": try Self.paymentInstrument(request.wallet),
        ]
        if let usage = request.storeCredential {
            instruction["customerAgreement"] = ["type": .string(Self.agreementType(usage)), "storedCardUsage": "first"]
            instruction["tokenCreation"] = ["type": "worldpay"]
        }
        return try ProcessorHTTP.encode([
            "transactionReference": .string(request.reference), "channel": "ecom", "merchant": ["entity": .string(settings.entity)],
            "instruction": instruction,
        ])
    }

    /// The wallet's token as Worldpay takes it: Apple Pay's `paymentData` as a JSON string; Google
    /// Pay's token string unchanged (`card/wallet+googlepay`), or in direct mode what Orchard
    /// decrypted: a device token with its cryptogram (`card/networkToken+googlepay`) or, for a
    /// `PAN_ONLY` card, the card (`card/plain`; 3-D Secure is the merchant's to add).
    static func paymentInstrument(_ wallet: WalletCredential) throws -> JSONValue {
        switch wallet {
        case .applePay(let token, _):
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let walletToken = String(decoding: try encoder.encode(token.paymentData), as: UTF8.self)
            return ["type": "card/wallet+applepay", "walletToken": .string(walletToken)]
        case .googlePay(let method, nil):
            return ["type": "card/wallet+googlepay", "walletToken": .string(method.token)]
        case .googlePay(_, let decrypted?):
            let card = decrypted.card
            let expiry: JSONValue = ["month": .integer(Int64(card.expirationMonth)), "year": .integer(Int64(card.expirationYear))]
            guard card.authMethod == .cryptogram3DS, let cryptogram = card.cryptogram else {
                return ["type": "card/plain", "cardNumber": .string(card.pan), "expiryDate": expiry]
            }
            var instrument: JSONValue = [
                "type": "card/networkToken+googlepay", "tokenNumber": .string(card.pan), "expiryDate": expiry,
                "cryptogram": .string(cryptogram),
            ]
            instrument["eci"] = card.eciIndicator.map(JSONValue.string)
            return instrument
        }
    }

    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + "/cardPayments/customerInitiatedTransactions", headers: headers,
            body: try body(request), fresh: true)
        return try Self.authorizationOutcome(
            answer, reference: request.reference, baseURL: settings.connection.baseURL, storesCredential: request.storeCredential != nil)
    }

    /// What an authorization answer (`status`, `body`) says: a pure function of the answer, for
    /// the tests and the fuzzer. Throws ``ProcessorNoAnswer`` for anything that is not a definite
    /// outcome: an unknown or unreadable `outcome` on a 2xx is never `failed`.
    /// `storesCredential`: the payment asked for a token, read from an authorized answer.
    public static func authorizationOutcome(
        status: Int, body: [UInt8], reference: String, baseURL: String, storesCredential: Bool
    ) throws -> AuthorizationOutcome {
        try authorizationOutcome(
            ProcessorHTTP.Answer(status: status, body: body), reference: reference, baseURL: baseURL, storesCredential: storesCredential)
    }

    static func authorizationOutcome(
        _ answer: ProcessorHTTP.Answer, reference: String, baseURL: String, storesCredential: Bool
    ) throws -> AuthorizationOutcome {
        var outcome = try outcome(answer, reference: reference, baseURL: baseURL)
        if storesCredential && outcome.status == .authorized {
            // Authorized without a token: the payment stands; the engine reports that no mandate was made.
            outcome.storedCredential = storedCredential(answer.json)
        }
        return outcome
    }

    /// What an authorization answer says, for a first payment and a merchant-initiated one alike.
    /// Worldpay knows the payment by our `transactionReference`, which is its processor reference;
    /// the settle and cancel links are read under v6's and v7's relation names alike.
    static func outcome(_ answer: ProcessorHTTP.Answer, reference: String, baseURL: String) throws -> AuthorizationOutcome {
        switch answer.status {
        case 200..<300:
            switch answer.json["outcome"]?.string {
            case "authorized":
                return AuthorizationOutcome(
                    status: .authorized, processorReference: reference,
                    links: actions(answer.json, ["settle", "partialSettle", "cancel"], baseURL: baseURL))
            case "refused":
                return AuthorizationOutcome(status: .refused, code: answer.json["code"]?.code, message: answer.json["description"]?.string)
            default:
                throw ProcessorNoAnswer("Worldpay answered HTTP \(answer.status) without a known outcome")
            }
        case 400, 401, 403, 404, 415:
            // The request itself was refused (schema, credentials, route, media type).
            return AuthorizationOutcome(
                status: .failed, code: answer.json["errorName"]?.string ?? "http_\(answer.status)", message: answer.json["message"]?.string)
        default:
            // 5xx, 409 and every other status say nothing about whether the card was charged.
            throw ProcessorNoAnswer("Worldpay answered HTTP \(answer.status), not a definite outcome")
        }
    }

    /// Follows the settle link; the answer's `_links` carry the refund links, which only a
    /// settlement hands out.
    public func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] {
        let answer = try await follow(payment, "settle")
        return Self.actions(answer.json, ["refund", "partialRefund"], baseURL: settings.connection.baseURL)
    }

    /// Part of the amount: the authorization's `partialSettle` link (`POST
    /// /payments/settlements/partials/{linkData}`) with `value` (`amount` in minor units and the
    /// payment's `currency`) and a `reference` (Worldpay's "Settle for partial amount", v5/v6),
    /// answered 202 with the refund links. Worldpay keeps the rest authorized (the answer offers
    /// another `partialSettle` and a `cancel`): it is released by following that answer's
    /// `cancel` link, best effort (a refusal only lets the rest lapse with the authorization).
    /// Not confirmed in Worldpay's guides: that this cancel releases only the rest, as its place
    /// among the partial settlement's links suggests.
    public func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String] {
        guard amount != payment.amount else { return try await settle(payment) }
        let body: JSONValue = [
            "value": ["amount": .integer(amount), "currency": .string(payment.currency)], "reference": .string("\(payment.reference)-s"),
        ]
        let answer = try await follow(payment, "partialSettle", body: body)
        let baseURL = settings.connection.baseURL
        if let cancel = Self.actions(answer.json, ["cancel"], baseURL: baseURL)["cancel"] {
            var rest = payment
            rest.links = ["cancel": cancel]
            _ = try? await follow(rest, "cancel")
        }
        return Self.actions(answer.json, ["refund", "partialRefund"], baseURL: baseURL)
    }

    public func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {
        try await follow(payment, "cancel")
    }

    /// The answer's `_links` for these actions, as absolute URLs keyed by action. Worldpay's
    /// guides name the relations `payments:<action>` up to v6 and `cardPayments:<action>` in
    /// v7; either is read. An href without an origin is taken as on the configured one.
    static func actions(_ json: JSONValue, _ names: [String], baseURL: String) -> [String: String] {
        var actions: [String: String] = [:]
        for action in names {
            let link = json["_links"]?["payments:\(action)"] ?? json["_links"]?["cardPayments:\(action)"]
            guard let href = link?["href"]?.string else { continue }
            actions[action] = href.hasPrefix("/") ? baseURL + href : href
        }
        return actions
    }

    /// A full refund follows the settle answer's `refund` link, a partial one its `partialRefund`
    /// link with `value` (minor units, the payment's currency) and `reference`; both send the
    /// refund's reference.
    ///
    /// Not confirmed in Worldpay's documentation: that Worldpay deduplicates on the refund's
    /// `reference` (its guides describe no idempotency for refunds), and the full refund's
    /// `reference` (a v7 specification lists it as optional; the guides say no body is needed).
    /// So a re-send may meet our own first send: after the first send, a 4xx proves nothing and
    /// is reported as no answer. Nor do the guides name refunds' refusal errors: any `errorName`
    /// on a first send's 400, 401, 403, 404 or 415 is the refusal's code.
    public func refund(_ request: RefundRequest) async throws -> RefundOutcome {
        let action = request.isFull ? "refund" : "partialRefund"
        guard let url = request.payment.links[action] else {
            // Nothing was ever sent under this reference: a settled payment's links do not change.
            return RefundOutcome(
                status: .refused, code: "no_refund_link",
                message: "Worldpay gave no \(action) link for this payment (not settled, or settled before Orchard kept refund links)")
        }
        var body: JSONValue = ["reference": .string(request.reference)]
        if !request.isFull { body["value"] = ["amount": .integer(request.amount), "currency": .string(request.payment.currency)] }
        let answer: ProcessorHTTP.Answer
        do {
            answer = try await client.send("POST", url: url, headers: headers, body: try ProcessorHTTP.encode(body), fresh: true)
        } catch let error as ProcessorActionError {
            // Refused before sending (a link off the configured origin): nothing left Orchard.
            return RefundOutcome(status: .refused, code: "link_not_on_origin", message: error.description)
        }
        return try Self.refundOutcome(answer, sends: request.sends)
    }

    /// What a refund answer (`status`, `body`) says on the refund's `sends`th send: a pure
    /// function of the answer, for the tests and the fuzzer. Throws ``ProcessorNoAnswer`` when it
    /// is not definite.
    public static func refundOutcome(status: Int, body: [UInt8], sends: Int) throws -> RefundOutcome {
        try refundOutcome(ProcessorHTTP.Answer(status: status, body: body), sends: sends)
    }

    static func refundOutcome(_ answer: ProcessorHTTP.Answer, sends: Int) throws -> RefundOutcome {
        let accepted = (200..<300).contains(answer.status) && !answer.isEmpty
        let refusal = [400, 401, 403, 404, 415].contains(answer.status) && sends == 1
        if accepted {
            // Worldpay's 202 says it took the refund; it pays out later.
            return RefundOutcome(status: .refunded, processorReference: answer.json["commandId"]?.code)
        }
        if refusal {
            return RefundOutcome(
                status: .refused, code: answer.json["errorName"]?.string ?? "http_\(answer.status)", message: answer.json["message"]?.string
            )
        }
        // 5xx, 409, a 2xx without Worldpay's body, a re-send's 4xx: nothing definite.
        throw ProcessorNoAnswer("Worldpay answered the refund with HTTP \(answer.status), not a definite outcome (send \(sends))")
    }

    @discardableResult
    func follow(_ payment: PaymentRecord, _ action: String, body: JSONValue? = nil) async throws(ProcessorActionError)
        -> ProcessorHTTP.Answer
    {
        guard let url = payment.links[action] else { throw ProcessorActionError("Worldpay gave no \(action) link for this payment") }
        let answer: ProcessorHTTP.Answer
        do {
            answer = try await client.send(
                "POST", url: url, headers: headers, body: try body.map { try ProcessorHTTP.encode($0) }, fresh: true)
        } catch let error as ProcessorActionError {
            throw error
        } catch {
            throw ProcessorActionError(
                "Worldpay did not answer (\(error)); check the payment in Worldpay before retrying", definite: false)
        }
        guard (200..<300).contains(answer.status) else {
            throw ProcessorActionError(
                "Worldpay answered HTTP \(answer.status): \(answer.json["message"]?.string ?? "")",
                definite: ProcessorActionError.isDefinite(status: answer.status))
        }
        return answer
    }

}
