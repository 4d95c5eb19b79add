import ApplePay
import Crypto
import CurlClient
import Foundation
import GooglePay
import OrchardCore

/// Worldline Direct: `CreatePayment` with `mobilePaymentMethodSpecificInput` (product 302), either
/// the encrypted token for Worldline to decrypt or the DPAN and cryptogram Orchard decrypted.
/// Every request is signed with the v1HMAC scheme and carries an idempotence key.
public struct WorldlineProcessor: PaymentProcessor {
    public static let applePayProductId = 302
    /// Google Pay's payment product.
    public static let googlePayProductId = 320
    static let contentType = "application/json; charset=utf-8"

    let settings: WorldlineSettings
    let client: ProcessorHTTP
    let now: @Sendable () -> Date

    public init(settings: WorldlineSettings, http: CurlHTTPClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.settings = settings
        self.client = ProcessorHTTP(http: http, endpoint: settings.connection)
        self.now = now
    }

    public var name: String { "worldline" }

    var paymentsPath: String { "/v2/\(settings.merchantId)/payments" }

    /// `Authorization: GCS v1HMAC:<key id>:<signature>`, the signature being HMAC-SHA256 with the
    /// secret over method, content type, date, the lowercased `X-GCS-*` headers and the path,
    /// each followed by a line feed.
    public static func authorization(
        method: String, contentType: String, date: String, gcsHeaders: [(name: String, value: String)], path: String, keyId: String,
        secret: String
    ) -> String {
        var subject = "\(method)\n\(contentType)\n\(date)\n"
        for header in gcsHeaders.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
            subject += "\(header.name.lowercased()):\(header.value.trimmingCharacters(in: .whitespaces))\n"
        }
        subject += "\(path)\n"
        let mac = HMAC<SHA256>.authenticationCode(for: Array(subject.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return "GCS v1HMAC:\(keyId):\(Data(mac).base64EncodedString())"
    }

    /// RFC 1123, as the Date header carries it (`Sun, 22 Nov 2026 01:02:03 GMT`), without a
    /// DateFormatter per request.
    public static func httpDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Worldline takes an idempotence key of at most 40 ASCII characters: `key` itself when it fits
    /// (Orchard's references do, 34–37 characters), else the first 40 hex digits of its SHA-256, the
    /// same on every send. A longer key is not de-duplicated at all.
    static func idempotenceKey(_ key: String) -> String {
        guard key.utf8.count > 40 || !key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return key }
        return String(Hex.encode(Array(SHA256.hash(data: Array(key.utf8)))).prefix(40))
    }

    /// `hasBody` false (a `DELETE`): no Content-Type is sent, and the signature covers an empty
    /// one, as Worldline computes it from the headers it receives.
    func signedHeaders(method: String, path: String, idempotenceKey: String?, hasBody: Bool = true) -> [(name: String, value: String)] {
        let date = Self.httpDate(now())
        let gcs = idempotenceKey.map { [(name: "X-GCS-Idempotence-Key", value: Self.idempotenceKey($0))] } ?? []
        let contentType = hasBody ? Self.contentType : ""
        let authorization = Self.authorization(
            method: method, contentType: contentType, date: date, gcsHeaders: gcs, path: path, keyId: settings.apiKeyId,
            secret: settings.secretApiKey.value)
        let type = hasBody ? [(name: "Content-Type", value: contentType)] : []
        return type + [(name: "Date", value: date), (name: "Authorization", value: authorization)] + gcs
    }

    /// The CreatePayment body for the wallet and the configured decryption mode.
    func body(_ request: AuthorizationRequest) throws -> [UInt8] {
        var input: JSONValue
        switch request.wallet {
        case .applePay(let token, let payment): input = try applePayInput(token.paymentData, payment, request: request)
        case .googlePay(let method, let decrypted): input = Self.googlePayInput(method, decrypted)
        }
        input["authorizationMode"] = .string(settings.authorizationMode)
        if let usage = request.storeCredential { input["paymentProduct302SpecificInput"] = Self.tokenization(usage) }
        return try ProcessorHTTP.encode([
            "order": [
                "amountOfMoney": ["amount": .integer(request.order.priced.total), "currencyCode": .string(request.order.priced.currency)],
                "references": ["merchantReference": .string(request.reference)],
            ],
            "mobilePaymentMethodSpecificInput": input,
        ])
    }

    /// Product 302: the encrypted token for Worldline to decrypt, or what Orchard decrypted.
    private func applePayInput(_ paymentData: PaymentData, _ payment: DecryptedPayment?, request: AuthorizationRequest) throws
        -> JSONValue
    {
        var input: JSONValue = ["paymentProductId": .integer(Int64(Self.applePayProductId))]
        input["publicKeyHash"] = .string(paymentData.header.publicKeyHash)
        input["ephemeralKey"] = paymentData.header.ephemeralPublicKey.map(JSONValue.string)
        switch settings.decryption {
        case .processor:
            guard paymentData.version == "EC_v1" else {
                throw UnsupportedToken("Worldline decrypts EC_v1 tokens only; set decryption to orchard for \(paymentData.version)")
            }
            input["encryptedPaymentData"] = .string(paymentData.data)
        case .orchard:
            // Configuration refuses a processor-held key with decryption orchard; never send less than Worldline needs.
            guard let payment else {
                throw UnsupportedToken("decryption is orchard, but the processor holds this token's key: Orchard cannot decrypt it")
            }
            var decrypted: JSONValue = ["dpan": .string(payment.fields.applicationPrimaryAccountNumber)]
            decrypted["cryptogram"] = payment.fields.paymentData?.onlinePaymentCryptogram.map(JSONValue.string)
            decrypted["expiryDate"] = payment.expiryMMYY.map(JSONValue.string)
            decrypted["eci"] = payment.fields.paymentData?.eciIndicator.map(JSONValue.string)
            decrypted["cardholderName"] = (request.cardholderName ?? payment.fields.cardholderName).map(JSONValue.string)
            input["decryptedPaymentData"] = decrypted
        }
        return input
    }

    /// Product 320: Google's token string unchanged in `encryptedPaymentData` (gateway mode), or
    /// in direct mode what Orchard decrypted: a device token with its cryptogram, or a `PAN_ONLY` card.
    static func googlePayInput(_ method: GooglePayPaymentMethod, _ decrypted: GooglePayPaymentData?) -> JSONValue {
        var input: JSONValue = ["paymentProductId": .integer(Int64(googlePayProductId))]
        guard let card = decrypted?.card else {
            input["encryptedPaymentData"] = .string(method.token)
            return input
        }
        let expiry = String(format: "%02d%02d", card.expirationMonth % 100, card.expirationYear % 100)
        var data: JSONValue = ["expiryDate": .string(expiry)]
        if card.authMethod == .cryptogram3DS, let cryptogram = card.cryptogram {
            data["paymentMethod"] = "TOKENIZED_CARD"
            data["dpan"] = .string(card.pan)
            data["cryptogram"] = .string(cryptogram)
            data["eci"] = card.eciIndicator.map(JSONValue.string)
        } else {
            data["paymentMethod"] = "CARD"
            data["pan"] = .string(card.pan)
        }
        input["decryptedPaymentData"] = data
        return input
    }

    struct UnsupportedToken: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        let bytes: [UInt8]
        do {
            bytes = try body(request)
        } catch let error as UnsupportedToken {
            return AuthorizationOutcome(status: .failed, code: "unsupported_token", message: error.description)
        }
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + paymentsPath,
            headers: signedHeaders(method: "POST", path: paymentsPath, idempotenceKey: request.reference), body: bytes)
        return try Self.authorizationOutcome(
            answer, reference: request.reference, paymentsURL: settings.connection.baseURL + paymentsPath,
            storesCredential: request.storeCredential != nil)
    }

    /// What a CreatePayment answer (`status`, `body`) says: a pure function of the answer, for
    /// the tests and the fuzzer. Throws ``ProcessorNoAnswer`` for anything that is not a definite
    /// outcome: a status never seen, or an unreadable answer, is never `failed` on a 2xx.
    /// `paymentsURL`: the origin and `/v2/{merchantId}/payments`, for the capture and cancel links.
    public static func authorizationOutcome(
        status: Int, body: [UInt8], reference: String, paymentsURL: String, storesCredential: Bool
    ) throws -> AuthorizationOutcome {
        try authorizationOutcome(
            ProcessorHTTP.Answer(status: status, body: body), reference: reference, paymentsURL: paymentsURL,
            storesCredential: storesCredential)
    }

    static func authorizationOutcome(
        _ answer: ProcessorHTTP.Answer, reference: String, paymentsURL: String, storesCredential: Bool
    ) throws -> AuthorizationOutcome {
        var outcome = try outcome(answer, reference: reference, paymentsURL: paymentsURL)
        if storesCredential && outcome.status == .authorized {
            // Authorized without a token: the payment stands; the engine reports that no mandate was made.
            outcome.storedCredential = storedCredential(answer.json)
        }
        return outcome
    }

    /// What a CreatePayment answer says, for a first payment and a merchant-initiated one alike,
    /// read through Worldline's status model (``WorldlineStatus``): authorized only for an
    /// authorization that holds funds; rejected or cancelled is refused; any other status of a
    /// payment Worldline created (a redirect, a payment pending, an authorization requested) is
    /// `pending`, keeping Worldline's payment ID for GetPayment: it is never re-sent.
    static func outcome(_ answer: ProcessorHTTP.Answer, reference: String, paymentsURL: String) throws -> AuthorizationOutcome {
        let payment = answer.json["payment"]?.object != nil ? answer.json["payment"] : answer.json["paymentResult"]?["payment"]
        let readable = payment?.object != nil ? payment : nil
        let status = readable?["status"]?.string
        let id = readable?["id"]?.string
        let firstError = answer.json["errors"]?.objects?.first
        let errorCode = firstError.flatMap { $0["errorCode"] ?? $0["code"] }?.code
        if let echoed = readable?["paymentOutput"]?["references"]?["merchantReference"]?.string, echoed != reference {
            throw ProcessorNoAnswer("Worldline answered for reference \(echoed), not \(reference)")
        }
        switch answer.status {
        case 200..<300 where readable != nil, 402 where readable != nil:
            switch WorldlineStatus.payment(readable) {
            case .succeeded where answer.status != 402:
                return authorized(id: id, status: status, paymentsURL: paymentsURL)
            case .refused:
                return AuthorizationOutcome(
                    status: .refused, processorReference: id, code: errorCode ?? status, message: firstError?["message"]?.string)
            default:
                // Worldline holds a payment without an outcome (or one it reads otherwise): asked later, never re-sent.
                guard let id = paymentId(id) else {
                    throw ProcessorNoAnswer("Worldline answered HTTP \(answer.status) with a payment status it cannot be asked about")
                }
                return AuthorizationOutcome(
                    status: .pending, processorReference: id, code: status, message: readable?["statusOutput"]?["statusCategory"]?.string)
            }
        case 402 where firstError != nil:
            // A 402 is a refusal only with Worldline's body: a bare 402 from anything in between says nothing.
            return AuthorizationOutcome(status: .refused, code: errorCode, message: firstError?["message"]?.string)
        case 400, 401, 403, 404, 415:
            // The request itself was refused (schema, signature, merchant, media type).
            return AuthorizationOutcome(
                status: .failed, code: errorCode ?? "http_\(answer.status)", message: firstError?["message"]?.string)
        default:
            // 5xx, 409 (the idempotence key is still in progress), a 2xx or 402 without a
            // readable payment, and every other status say nothing about the charge.
            throw ProcessorNoAnswer("Worldline answered HTTP \(answer.status), not a definite outcome")
        }
    }

    /// An authorization of payment `id`, with its capture and cancel actions.
    static func authorized(id: String?, status: String?, paymentsURL: String) -> AuthorizationOutcome {
        var links: [String: String] = [:]
        if let id = paymentId(id) {
            links["settle"] = "\(paymentsURL)/\(id)/capture"
            links["cancel"] = "\(paymentsURL)/\(id)/cancel"
        }
        return AuthorizationOutcome(status: .authorized, processorReference: id, code: status, links: links)
    }

    /// Captures the payment; a refund needs only the payment ID, so there are no links to learn.
    public func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] {
        try await settle(payment, amount: payment.amount)
    }

    /// CapturePayment (`POST /v2/{merchantId}/payments/{paymentId}/capture`) with `amount` and
    /// `isFinal: true`, as Worldline Direct's maintenance-operations guide shows the request
    /// (`{"amount": 1000, "isFinal": false}`): final, so no later capture is expected and
    /// Worldline releases what is left of the authorization.
    public func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String] {
        try await act(payment, "capture", body: ["amount": .integer(amount), "isFinal": true])
        return [:]
    }

    public func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {
        try await act(payment, "cancel", body: [:])
    }

    /// `POST /v2/{merchantId}/payments/{paymentId}/refund` with the amount and the refund's
    /// reference as `references.merchantReference`, its reference also the idempotence key: a
    /// re-send gets Worldline's first answer again (within Worldline's idempotence window).
    ///
    /// The refund's status is read through ``WorldlineStatus/refund(_:)``: `REFUND_REQUESTED` and
    /// `REFUNDED` are refunded; a refund Worldline itself declined (a `refundResult`, or a refund,
    /// `REJECTED` or `CANCELLED`) is refused on any send: with the key, it is the answer to the
    /// first. A 400, 401, 403, 404 or 415 (or a 402 with Worldline's `errors`) refuses only on the
    /// first send: later, it may be about our own earlier refund. Any other status (a refund not
    /// taken yet), 409 (the key in progress) and 5xx are no answer: GetRefunds settles it later.
    ///
    /// Confirmed from Worldline's SDKs: the request's fields, the answer's `id`, `status`,
    /// `statusOutput` and `refundOutput`, the error answer's `refundResult`, and 409 with error
    /// 1409 for a key in progress. Not confirmed: the HTTP status of a declined refund (the SDKs
    /// read `refundResult` on any error status; 402 as for payments is assumed).
    public func refund(_ request: RefundRequest) async throws -> RefundOutcome {
        guard let id = Self.paymentId(request.payment) else {
            return RefundOutcome(status: .refused, code: "no_payment_id", message: "this payment has no Worldline payment ID")
        }
        let path = "\(paymentsPath)/\(id)/refund"
        let body = try ProcessorHTTP.encode([
            "amountOfMoney": ["amount": .integer(request.amount), "currencyCode": .string(request.payment.currency)],
            "references": ["merchantReference": .string(request.reference)],
        ])
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + path,
            headers: signedHeaders(method: "POST", path: path, idempotenceKey: request.reference), body: body)
        return try Self.refundOutcome(answer, reference: request.reference, sends: request.sends)
    }

    /// What a RefundPayment answer (`status`, `body`) says of refund `reference` on its `sends`th
    /// send: a pure function of the answer, for the tests and the fuzzer. Throws
    /// ``ProcessorNoAnswer`` when it is not definite.
    public static func refundOutcome(status: Int, body: [UInt8], reference: String, sends: Int) throws -> RefundOutcome {
        try refundOutcome(ProcessorHTTP.Answer(status: status, body: body), reference: reference, sends: sends)
    }

    static func refundOutcome(_ answer: ProcessorHTTP.Answer, reference: String, sends: Int) throws -> RefundOutcome {
        let declined = answer.json["refundResult"]?.object != nil ? answer.json["refundResult"] : nil
        let refund = declined ?? ((200..<300).contains(answer.status) ? answer.json : nil)
        let status = refund?["status"]?.string
        let firstError = answer.json["errors"]?.objects?.first
        let code = firstError.flatMap { $0["errorCode"] ?? $0["code"] }?.code
        if let echoed = refund?["refundOutput"]?["references"]?["merchantReference"]?.string, echoed != reference {
            throw ProcessorNoAnswer("Worldline answered for refund reference \(echoed), not \(reference)")
        }
        let refusal = RefundOutcome(
            status: .refused, processorReference: refund?["id"]?.string, code: code ?? status ?? "http_\(answer.status)",
            message: firstError?["message"]?.string)
        let reading = WorldlineStatus.refund(refund)
        if (200..<300).contains(answer.status), reading == .succeeded {
            return RefundOutcome(status: .refunded, processorReference: refund?["id"]?.string, code: status)
        }
        if (200..<500).contains(answer.status), reading == .refused {
            return refusal
        }
        // A bare 402 from anything in between says nothing; Worldline's carries its errors.
        let requestRefused = [400, 401, 403, 404, 415].contains(answer.status) || (answer.status == 402 && firstError != nil)
        if requestRefused && status == nil && sends == 1 {
            return refusal
        }
        throw ProcessorNoAnswer(
            "Worldline answered the refund with HTTP \(answer.status)\(status.map { " (\($0))" } ?? ""), not a definite outcome")
    }

    /// The payment's Worldline ID, when it is one that can go in a path.
    static func paymentId(_ payment: PaymentRecord) -> String? {
        paymentId(payment.processorReference)
    }

    /// A Worldline payment or refund ID that is safe in a path.
    static func paymentId(_ id: String?) -> String? {
        guard let id, (1...64).contains(id.utf8.count),
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return id
    }

    func act(_ payment: PaymentRecord, _ action: String, body: JSONValue) async throws(ProcessorActionError) {
        guard let id = Self.paymentId(payment) else { throw ProcessorActionError("this payment has no Worldline payment ID") }
        let path = "\(paymentsPath)/\(id)/\(action)"
        let answer: ProcessorHTTP.Answer
        do {
            answer = try await client.send(
                "POST", url: settings.connection.baseURL + path,
                headers: signedHeaders(
                    method: "POST", path: path, idempotenceKey: "\(payment.reference)-\(action == "capture" ? "cp" : "cn")"),
                body: try ProcessorHTTP.encode(body))
        } catch let error as ProcessorActionError {
            throw error
        } catch {
            throw ProcessorActionError(
                "Worldline did not answer (\(error)); check the payment in Worldline before retrying", definite: false)
        }
        guard (200..<300).contains(answer.status) else {
            let message = answer.json["errors"]?.objects?.first?["message"]?.string ?? ""
            throw ProcessorActionError(
                "Worldline answered HTTP \(answer.status): \(message)", definite: ProcessorActionError.isDefinite(status: answer.status))
        }
    }
}
