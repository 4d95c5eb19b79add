import Foundation
import Synchronization

/// Worldline Direct mandates: a first payment's tokenization, merchant-initiated charges of the
/// token (CreatePayment with `cardPaymentMethodSpecificInput`), and token deletion.
extension MockWorldline {
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
    func worldlineMandateCharge(
        _ request: MockProcessorRequest, body: [String: Any], amount: Int64, currency: String, mock: MockProcessors
    ) -> Reply {
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
        let id = "\(3_000_000_000 + Int64(mock.state.withLock { $0.charges.count }))_0"
        let reference = ((body["order"] as? [String: Any])?["references"] as? [String: Any])?["merchantReference"] as? String ?? key
        let status = Self.worldlineStatus(behaviour: mock.behaviour, mode: mode)
        let payment = Self.worldlinePayment(
            id: id, status: status, reference: reference, output: ["cardPaymentMethodSpecificOutput": ["token": token]])
        let created =
            status == .rejected
            ? Self.worldlineCreated(id: id, status: status, reference: reference) : (201, Self.body(["payment": payment]))
        let charge = MockCharge(
            processor: name, reference: key, id: id, amount: amount, currency: currency, state: status.chargeState, mode: "token")
        return mock.authorization(
            reference: name + ":" + key, charge: charge, authorized: created.1, authorizedStatus: created.0,
            refused: { code, description in (402, Self.worldlineRejection(id: id, code: code, description: description)) },
            errorBody: Self.worldlineFault, inProgress: InProgressAnswer(status: 409, body: Self.worldlineInProgress),
            replayHeaders: Self.worldlineReplayHeaders,
            declined: mock.tokenRefusal(name, token),
            taken: { state, taken in
                statuses.withLock { $0[id] = taken.state == status.chargeState ? status : .rejected }
                state.mandateCharges.append(
                    MockMandateCharge(
                        processor: name, reference: key, id: id, token: token, usage: usage, amount: amount, currency: currency,
                        state: taken.state))
            })
    }

    /// `DELETE /v2/{merchantId}/tokens/{tokenId}`, signed: 204, or 404 for a token unknown or gone.
    func worldlineDeleteToken(_ request: MockProcessorRequest, id: String, mock: MockProcessors) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        guard mock.deleteToken(name, id) else {
            return Self.reply(404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_TOKEN", "message": "no such token"]]])
        }
        return .answer(status: 204, body: [], headers: [])
    }
}
