import Foundation
import Synchronization

/// A credential a mock processor stored for later merchant-initiated charges: issued only by a
/// first payment that asked for it (Worldline's `tokenize`, Worldpay's `tokenCreation`) and was authorized.
public struct MockStoredToken: Sendable, Equatable {
    public var processor: String
    /// What the processor client keeps: Worldline's token ID, Worldpay's token href.
    public var reference: String
    /// `scheduled` (Worldline's `isRecurring`, Worldpay's `subscription`) or `unscheduled`.
    public var usage: String
    /// The first payment's reference.
    public var paymentReference: String
    /// The scheme's reference handed out with the token (Worldpay); nil for Worldline.
    public var schemeReference: String?
    public var deleted: Bool
}

/// A merchant-initiated charge the mock took (authorized or refused): one per reference, whatever the re-sends.
public struct MockMandateCharge: Sendable, Equatable {
    public var processor: String
    public var reference: String
    /// The payment's ID (Worldline's payment ID, Worldpay's link key), as in ``MockProcessors/charges``.
    public var id: String
    /// The token charged, as sent (Worldline's token ID, Worldpay's href).
    public var token: String
    /// `scheduled` or `unscheduled`, as the request said (Worldline's `isRecurring` or card-on-file
    /// indicators, Worldpay's `customerAgreement.type`).
    public var usage: String
    public var amount: Int64
    public var currency: String
    /// Worldpay's `customerAgreement.schemeReference`, when sent.
    public var schemeReference: String?
    public var state: MockCharge.State
}

/// Stored credentials for both mock processors: tokens issued by first payments, merchant-initiated
/// charges of them (idempotent like every payment: a reference's first answer is replayed, and it
/// is counted once; an unknown or deleted token is refused), and token deletion (404 once gone).
extension MockProcessors {
    /// Every token issued, oldest first; deleted ones are marked.
    public var storedTokens: [MockStoredToken] { state.withLock { $0.tokens } }

    /// Every merchant-initiated charge taken, oldest first.
    public var mitCharges: [MockMandateCharge] { state.withLock { $0.mandateCharges } }

    /// The references of the tokens deleted, in the order they were.
    public var deletedTokens: [String] { state.withLock { $0.deletedTokens } }

    /// When true, first payments that ask for a token are authorized without one (Worldline:
    /// `tokenizationSucceeded: false`; Worldpay: no `tokenPaymentInstrument`).
    public var withholdsTokens: Bool {
        get { state.withLock { $0.withholdsTokens } }
        set { state.withLock { $0.withholdsTokens = newValue } }
    }

    /// The mandate routes (merchant-initiated charges, token deletion), or nil for another
    /// request. Worldline's merchant-initiated charges share CreatePayment's route: see ``worldlineCreate(_:)``.
    func mandateRoute(_ request: MockProcessorRequest) -> Reply? {
        let tokens = "/v2/\(worldline.merchantId)/tokens/"
        switch (request.method, request.path) {
        case ("POST", "/cardPayments/merchantInitiatedTransactions"): return worldpayMandateCharge(request)
        case ("DELETE", let path) where path.hasPrefix("/tokens/"): return worldpayDeleteToken(request)
        case ("DELETE", let path) where path.hasPrefix(tokens):
            return worldlineDeleteToken(request, id: String(path.dropFirst(tokens.count)))
        default: return nil
        }
    }

    /// A JSON boolean (not a number).
    static func isBool(_ value: Any?) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// A new token's random part: 32 lowercase hexadecimal digits, as Worldline's.
    static func newTokenId() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// Why the token with this reference cannot be charged (unknown, or deleted); nil when it can.
    func tokenRefusal(_ processor: String, _ reference: String) -> (code: String, description: String)? {
        let token = state.withLock { state in state.tokens.last { $0.processor == processor && $0.reference == reference } }
        guard let token else { return ("UNKNOWN_TOKEN", "no such stored credential") }
        return token.deleted ? ("TOKEN_DELETED", "the stored credential was deleted") : nil
    }

    /// Marks a live token deleted; false when there is none (unknown, or deleted before).
    func deleteToken(_ processor: String, _ reference: String) -> Bool {
        state.withLock { state in
            guard let index = state.tokens.lastIndex(where: { $0.processor == processor && $0.reference == reference && !$0.deleted })
            else { return false }
            state.tokens[index].deleted = true
            state.deletedTokens.append(reference)
            return true
        }
    }

    // MARK: Worldline Direct

    /// Checks a first payment's `paymentProduct302SpecificInput`: `tokenize` and `isRecurring`
    /// booleans, `recurring.recurringPaymentSequenceIndicator` (`first` or `recurring`) only with
    /// `isRecurring`. Returns the usage of the token to issue (nil: none asked), or the refusal.
    func worldlineTokenization(_ input: [String: Any]) -> (usage: String?, refusal: Reply?) {
        guard let specific = input["paymentProduct302SpecificInput"] else { return (nil, nil) }
        let property = "mobilePaymentMethodSpecificInput.paymentProduct302SpecificInput"
        guard let specific = specific as? [String: Any] else {
            return (nil, worldlineError(400, "INVALID_VALUE", "must be an object", property: property))
        }
        let known: Set = ["tokenize", "isRecurring", "recurring", "applePayRecurringPaymentRequest"]
        if let unknown = specific.keys.first(where: { !known.contains($0) }) {
            return (nil, worldlineError(400, "INVALID_VALUE", "unknown property", property: "\(property).\(unknown)"))
        }
        for key in ["tokenize", "isRecurring"] where specific[key] != nil && !Self.isBool(specific[key]) {
            return (nil, worldlineError(400, "INVALID_VALUE", "must be a boolean", property: "\(property).\(key)"))
        }
        let recurring = specific["isRecurring"] as? Bool == true
        if let sequence = specific["recurring"] {
            let indicator = (sequence as? [String: Any])?["recurringPaymentSequenceIndicator"] as? String
            guard recurring, ["first", "recurring"].contains(indicator ?? "") else {
                return (
                    nil,
                    worldlineError(
                        400, "INVALID_VALUE", "recurring.recurringPaymentSequenceIndicator (first or recurring) needs isRecurring true",
                        property: "\(property).recurring")
                )
            }
        }
        return (specific["tokenize"] as? Bool == true ? (recurring ? "scheduled" : "unscheduled") : nil, nil)
    }

    /// Checks `cardPaymentMethodSpecificInput` of a merchant-initiated charge: a mode, a token,
    /// and either `isRecurring: true` or the unscheduled card-on-file indicators
    /// (`merchantInitiated`, `subsequent`), never both. Returns the usage and the token; nil when
    /// the body is not such a charge.
    func worldlineMandateInput(_ body: [String: Any]) -> (usage: String, token: String)? {
        guard body["mobilePaymentMethodSpecificInput"] == nil, let input = body["cardPaymentMethodSpecificInput"] as? [String: Any],
            ["FINAL_AUTHORIZATION", "SALE", "PRE_AUTHORIZATION"].contains(input["authorizationMode"] as? String ?? ""),
            ["ECOMMERCE", "MOTO"].contains(input["transactionChannel"] as? String ?? "ECOMMERCE"),
            let token = input["token"] as? String, !token.isEmpty,
            input["isRecurring"] == nil || Self.isBool(input["isRecurring"])
        else { return nil }
        let requestor = input["unscheduledCardOnFileRequestor"] as? String
        let sequence = input["unscheduledCardOnFileSequenceIndicator"] as? String
        let indicated = input["unscheduledCardOnFileRequestor"] != nil || input["unscheduledCardOnFileSequenceIndicator"] != nil
        if input["isRecurring"] as? Bool == true {
            // Worldline: "not allowed if isRecurring is true".
            return indicated ? nil : ("scheduled", token)
        }
        return requestor == "merchantInitiated" && sequence == "subsequent" ? ("unscheduled", token) : nil
    }

    /// A merchant-initiated CreatePayment (`cardPaymentMethodSpecificInput` with a token), already
    /// signed, dated and amount-checked by ``worldlineCreate(_:)``.
    func worldlineMandateCharge(_ request: MockProcessorRequest, body: [String: Any], amount: Int64, currency: String) -> Reply {
        guard let (usage, token) = worldlineMandateInput(body) else {
            return worldlineError(
                400, "INVALID_VALUE",
                "a token charge needs one cardPaymentMethodSpecificInput with authorizationMode, token and either isRecurring or the unscheduledCardOnFile indicators, not both",
                property: "cardPaymentMethodSpecificInput")
        }
        guard let key = request.header("X-GCS-Idempotence-Key"), !key.isEmpty else {
            return worldlineError(400, "PARAMETER_NOT_FOUND_IN_REQUEST", "this mock requires X-GCS-Idempotence-Key")
        }
        let mode = (body["cardPaymentMethodSpecificInput"] as? [String: Any])?["authorizationMode"] as? String ?? ""
        let id = "\(3_000_000_000 + Int64(state.withLock { $0.charges.count }))_0"
        let reference = ((body["order"] as? [String: Any])?["references"] as? [String: Any])?["merchantReference"] as? String ?? key
        let status = Self.worldlineStatus(behaviour: behaviour, mode: mode)
        let payment = Self.worldlinePayment(
            id: id, status: status, reference: reference, output: ["cardPaymentMethodSpecificOutput": ["token": token]])
        let created =
            status == .rejected
            ? Self.worldlineCreated(id: id, status: status, reference: reference) : (201, Self.body(["payment": payment]))
        let charge = MockCharge(
            processor: "worldline", reference: key, id: id, amount: amount, currency: currency, state: status.chargeState, mode: "token")
        return authorization(
            reference: "worldline:" + key, charge: charge, authorized: created.1, authorizedStatus: created.0,
            refused: { code, description in (402, Self.worldlineRejection(id: id, code: code, description: description)) },
            errorBody: Self.worldlineFault, inProgress: InProgressAnswer(status: 409, body: Self.worldlineInProgress),
            replayHeaders: Self.worldlineReplayHeaders,
            declined: tokenRefusal("worldline", token),
            taken: { state, taken in
                state.worldlineStatuses[id] = taken.state == status.chargeState ? status : .rejected
                state.mandateCharges.append(
                    MockMandateCharge(
                        processor: "worldline", reference: key, id: id, token: token, usage: usage, amount: amount, currency: currency,
                        state: taken.state))
            })
    }

    /// `DELETE /v2/{merchantId}/tokens/{tokenId}`, signed: 204, or 404 for a token unknown or gone.
    func worldlineDeleteToken(_ request: MockProcessorRequest, id: String) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        guard deleteToken("worldline", id) else {
            return Self.reply(404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_TOKEN", "message": "no such token"]]])
        }
        return .answer(status: 204, body: [], headers: [])
    }
}
