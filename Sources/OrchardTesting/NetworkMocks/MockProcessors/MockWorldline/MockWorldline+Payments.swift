import Crypto
import Foundation
import Synchronization

/// Worldline Direct payments: v1HMAC-signed CreatePayment, capture and cancel.
extension MockWorldline {
    // MARK: Worldline Direct

    func worldlineError(_ status: Int, _ id: String, _ message: String, property: String? = nil) -> Reply {
        var error: [String: Any] = ["errorCode": "50001111", "id": id, "message": message, "httpStatusCode": status]
        if let property { error["propertyName"] = property }
        return Self.reply(status, ["errorId": UUID().uuidString, "errors": [error]])
    }

    /// Recomputes the v1HMAC signature from the request as received.
    func worldlineSignatureValid(_ request: MockProcessorRequest) -> Bool {
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("GCS v1HMAC:") else { return false }
        let parts = authorization.dropFirst("GCS v1HMAC:".count).split(separator: ":", maxSplits: 1)
        guard parts.count == 2, parts[0] == account.apiKeyId else { return false }
        let gcs = request.headers.filter { $0.name.lowercased().hasPrefix("x-gcs") }
            .map { "\($0.name.lowercased()):\($0.value.trimmingCharacters(in: .whitespaces))" }.sorted()
        let lines = [request.method, request.header("Content-Type") ?? "", request.header("Date") ?? ""] + gcs + [request.path]
        let subject = lines.map { $0 + "\n" }.joined()
        let expected = HMAC<SHA256>.authenticationCode(
            for: Array(subject.utf8), using: SymmetricKey(data: Array(account.secretApiKey.utf8)))
        guard let presented = Data(base64Encoded: String(parts[1])) else { return false }
        return presented == Data(expected)
    }

    /// Worldline documents the idempotence key as at most 40 ASCII characters; a longer one is refused here.
    func worldlineKeyRefusal(_ request: MockProcessorRequest) -> Reply? {
        guard let key = request.header("X-GCS-Idempotence-Key") else { return nil }
        guard (1...40).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return worldlineError(
                400, "INVALID_VALUE", "X-GCS-Idempotence-Key must be 1–40 ASCII characters", property: "X-GCS-Idempotence-Key")
        }
        return nil
    }

    func worldlineDateFresh(_ request: MockProcessorRequest) -> Bool {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = request.header("Date").flatMap(formatter.date(from:)) else { return false }
        return abs(date.timeIntervalSinceNow) <= 15 * 60
    }

    func worldlineCreate(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        guard request.header("Content-Type")?.hasPrefix("application/json") == true else {
            return worldlineError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json")
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return worldlineError(400, "INVALID_JSON", "the body is not JSON")
        }
        let money = (body["order"] as? [String: Any])?["amountOfMoney"] as? [String: Any] ?? [:]
        guard let amount = Self.integer(money["amount"]) else {
            return worldlineError(
                400, "PARAMETER_NOT_FOUND_IN_REQUEST", "amount must be an integer", property: "order.amountOfMoney.amount")
        }
        guard Self.isCurrency(money["currencyCode"]) else {
            return worldlineError(400, "INVALID_VALUE", "currencyCode must be ISO 4217", property: "order.amountOfMoney.currencyCode")
        }
        if body["cardPaymentMethodSpecificInput"] != nil {
            return worldlineMandateCharge(request, body: body, amount: amount, currency: money["currencyCode"] as? String ?? "", mock: mock)
        }
        let input = body["mobilePaymentMethodSpecificInput"] as? [String: Any] ?? [:]
        if let refusal = worldlineInputError(input) { return refusal }
        let tokenization = worldlineTokenization(input)
        if let refusal = tokenization.refusal { return refusal }
        // Only a first payment that asked for a token gets one, unless tokens are withheld.
        let token = tokenization.usage != nil && !mock.withholdsTokens ? Self.newTokenId() : nil
        guard let key = request.header("X-GCS-Idempotence-Key"), !key.isEmpty else {
            return worldlineError(400, "PARAMETER_NOT_FOUND_IN_REQUEST", "this mock requires X-GCS-Idempotence-Key")
        }
        let mode = input["authorizationMode"] as? String ?? ""
        let id = "\(3_000_000_000 + Int64(mock.state.withLock { $0.charges.count }))_0"
        let references = (body["order"] as? [String: Any])?["references"] as? [String: Any]
        let reference = references?["merchantReference"] as? String ?? key
        let status = Self.worldlineStatus(behaviour: mock.behaviour, mode: mode)
        var declined = Self.heldKeyToken(input).flatMap {
            mock.heldKeyRefusal($0, amount: amount, currency: money["currencyCode"] as? String ?? "")
        }
        if Self.integer(input["paymentProductId"]) == Self.googlePayProduct {
            let encrypted = input["encryptedPaymentData"] as? String
            declined = mock.receiveGooglePay(
                processor: name, reference: key, form: encrypted == nil ? "decryptedPaymentData" : "encryptedPaymentData", token: encrypted,
                recipientId: "gateway:" + Self.googlePayGateway, gatewayMerchantId: { [account] _ in account.merchantId })
        }
        var creation: [String: Any] = ["isNewToken": token != nil]
        if tokenization.usage != nil { creation["tokenizationSucceeded"] = token != nil }
        creation["token"] = token
        let created = Self.worldlineCreated(
            id: id, status: status, reference: reference, extra: status.chargeState == .authorized ? ["creationOutput": creation] : [:])
        return mock.authorization(
            reference: name + ":" + key,
            charge: MockCharge(
                processor: name, reference: key, id: id, amount: amount, currency: money["currencyCode"] as? String ?? "",
                state: status.chargeState, mode: input["encryptedPaymentData"] is String ? "encrypted" : "decrypted"),
            authorized: created.1, authorizedStatus: created.0,
            refused: { code, description in (402, Self.worldlineRejection(id: id, code: code, description: description)) },
            errorBody: Self.worldlineFault, inProgress: InProgressAnswer(status: 409, body: Self.worldlineInProgress),
            replayHeaders: Self.worldlineReplayHeaders, declined: declined,
            taken: { state, taken in
                statuses.withLock { $0[id] = taken.state == status.chargeState ? status : .rejected }
                guard taken.state == .authorized, let token, let usage = tokenization.usage else { return }
                state.tokens.append(
                    MockStoredToken(
                        processor: name, reference: token, usage: usage, paymentReference: key, schemeReference: nil,
                        deleted: false))
            })
    }

    /// The body of an injected fault (``MockProcessorBehaviour/status(_:)``).
    static func worldlineFault(_ status: Int) -> [UInt8] {
        body([
            "errorId": UUID().uuidString, "errors": [["errorCode": "9999", "id": "SERVER_ERROR", "message": "Injected fault \(status)"]],
        ])
    }

    /// What Worldline adds to an answer it replays for a known idempotence key.
    static var worldlineReplayHeaders: [(String, String)] {
        [("X-GCS-Idempotence-Request-Timestamp", String(Int(Date().timeIntervalSince1970 * 1000)))]
    }

    /// What Worldline checks in `mobilePaymentMethodSpecificInput`: product 302 (Apple Pay) or 320
    /// (Google Pay), the mode, and exactly one of the encrypted token or what the merchant
    /// decrypted (for Apple Pay the DPAN, cryptogram and MMYY expiry).
    func worldlineInputError(_ input: [String: Any]) -> Reply? {
        let product = Self.integer(input["paymentProductId"])
        guard product == 302 || product == Self.googlePayProduct else {
            return worldlineError(
                400, "INVALID_VALUE", "paymentProductId must be 302 (Apple Pay) or 320 (Google Pay)", property: "paymentProductId")
        }
        let mode = input["authorizationMode"] as? String ?? ""
        guard ["FINAL_AUTHORIZATION", "SALE", "PRE_AUTHORIZATION"].contains(mode) else {
            return worldlineError(400, "INVALID_VALUE", "authorizationMode is invalid", property: "authorizationMode")
        }
        let encrypted = input["encryptedPaymentData"] as? String
        let decrypted = input["decryptedPaymentData"] as? [String: Any]
        guard (encrypted == nil) != (decrypted == nil) else {
            return worldlineError(400, "INVALID_VALUE", "send encryptedPaymentData or decryptedPaymentData, not both or neither")
        }
        if product == Self.googlePayProduct { return worldlineGooglePayInputError(encrypted: encrypted, decrypted: decrypted) }
        if encrypted != nil && (input["ephemeralKey"] as? String == nil || input["publicKeyHash"] as? String == nil) {
            return worldlineError(
                400, "PARAMETER_NOT_FOUND_IN_REQUEST", "ephemeralKey and publicKeyHash are required", property: "ephemeralKey")
        }
        if let decrypted {
            let dpan = decrypted["dpan"] as? String ?? ""
            guard (12...19).contains(dpan.count), dpan.allSatisfy(\.isNumber), Self.isExpiryMMYY(decrypted["expiryDate"]),
                !(decrypted["cryptogram"] as? String ?? "").isEmpty
            else {
                return worldlineError(400, "INVALID_VALUE", "decryptedPaymentData needs dpan, cryptogram and expiryDate MMYY")
            }
        }
        return nil
    }

    /// An expiry as Worldline takes it: `MMYY`, four digits, the month 01–12.
    static func isExpiryMMYY(_ value: Any?) -> Bool {
        let expiry = Array((value as? String ?? "").utf8)
        guard expiry.count == 4, expiry.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        return (1...12).contains(Int(String(decoding: expiry[0..<2], as: UTF8.self)) ?? 0)
    }

    // MARK: Google Pay

    /// Google Pay's payment product.
    static let googlePayProduct: Int64 = 320
    /// Worldline Direct's name at Google: gateway-mode tokens are signed for `gateway:worldlinedirect`.
    static let googlePayGateway = "worldlinedirect"

    /// Product 320: the token as a JSON string in `encryptedPaymentData`, or in
    /// `decryptedPaymentData` a device token (`TOKENIZED_CARD`: dpan, cryptogram, eci) or a
    /// `PAN_ONLY` card (`CARD`: pan), each with its MMYY expiry.
    func worldlineGooglePayInputError(encrypted: String?, decrypted: [String: Any]?) -> Reply? {
        if let encrypted {
            guard MockProcessors.isGooglePayToken(encrypted) else {
                return worldlineError(
                    400, "INVALID_VALUE", "encryptedPaymentData must be the Google Pay token (an ECv2 PaymentMethodToken) as a JSON string",
                    property: "encryptedPaymentData")
            }
            return nil
        }
        let data = decrypted ?? [:]
        let valid: Bool
        switch data["paymentMethod"] as? String {
        case "TOKENIZED_CARD":
            valid =
                MockProcessors.isCardNumber(data["dpan"]) && !(data["cryptogram"] as? String ?? "").isEmpty
                && (data["eci"] == nil || data["eci"] as? String != nil)
        case "CARD": valid = MockProcessors.isCardNumber(data["pan"]) && data["cryptogram"] == nil
        default: valid = false
        }
        guard valid, Self.isExpiryMMYY(data["expiryDate"]) else {
            return worldlineError(
                400, "INVALID_VALUE",
                "decryptedPaymentData needs paymentMethod TOKENIZED_CARD (dpan, cryptogram, eci) or CARD (pan), and expiryDate MMYY",
                property: "decryptedPaymentData")
        }
        return nil
    }

    static func worldlineRejection(id: String, code: String, description: String) -> [UInt8] {
        body([
            "errorId": UUID().uuidString, "errors": [["errorCode": code, "id": "PAYMENT_REJECTED", "message": description]],
            "paymentResult": [
                "payment": ["id": id, "status": "REJECTED", "statusOutput": ["statusCategory": "UNSUCCESSFUL", "statusCode": 2]]
            ],
        ])
    }

    static var worldlineInProgress: [UInt8] {
        body([
            "errorId": UUID().uuidString,
            "errors": [
                [
                    "errorCode": "1409", "id": "DUPLICATE_REQUEST_IN_PROGRESS",
                    "message": "a request with this X-GCS-Idempotence-Key is still being processed",
                ]
            ],
        ])
    }

    func worldlineAction(_ request: MockProcessorRequest, prefix: String, mock: MockProcessors) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        let rest = request.path.dropFirst(prefix.count + 1).split(separator: "/")
        guard rest.count == 2, ["capture", "cancel"].contains(rest[1]) else { return worldlineError(404, "NOT_FOUND", "no such action") }
        let id = String(rest[0])
        let capture = rest[1] == "capture"
        // CapturePayment's `amount` (at most the authorized amount) and `isFinal`, kept on the charge.
        let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        let amount = Self.integer(body?["amount"])
        let isFinal = body?["isFinal"] as? Bool
        return mock.state.withLock { state in
            guard let index = state.charges.firstIndex(where: { $0.processor == name && $0.id == id }) else {
                return Self.reply(
                    404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_PAYMENT_ID", "message": "no such payment"]]])
            }
            guard state.charges[index].state == .authorized else {
                return Self.reply(
                    409,
                    [
                        "errorId": UUID().uuidString,
                        "errors": [["id": "INVALID_STATUS", "message": "the payment is \(state.charges[index].state)"]],
                    ])
            }
            if capture, let amount, !(1...state.charges[index].amount).contains(amount) {
                return Self.reply(
                    400, ["errorId": UUID().uuidString, "errors": [["id": "INVALID_VALUE", "message": "amount is out of range"]]])
            }
            state.charges[index].state = capture ? .settled : .cancelled
            if capture, let amount, amount < state.charges[index].amount {
                state.charges[index].capturedAmount = amount
                state.charges[index].captureFinal = isFinal
                state.charges[index].restReleased = isFinal == true
            }
            return Self.reply(200, capture ? ["id": id, "status": "CAPTURE_REQUESTED"] : ["payment": ["id": id, "status": "CANCELLED"]])
        }
    }
}
