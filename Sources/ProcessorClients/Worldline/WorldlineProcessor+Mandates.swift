import ApplePay
import CurlClient
import Foundation
import OrchardCore

/// Mandates on Worldline Direct: the first Apple Pay payment asks Worldline to tokenize the card
/// (`paymentProduct302SpecificInput`), later merchant-initiated charges send that token as a card
/// payment, and the token is deleted when the mandate ends.
///
/// Confirmed from Worldline's Java SDK (7.4.1) and its recurring-payments guides: the fields of
/// `paymentProduct302SpecificInput` and `cardPaymentMethodSpecificInput`, `creationOutput.token`,
/// that `isRecurring` excludes the `unscheduledCardOnFile*` fields, and `DELETE
/// /v2/{merchantId}/tokens/{tokenId}`. Not confirmed: that a token made by an Apple Pay (302)
/// payment is charged through `cardPaymentMethodSpecificInput` (no Worldline page covers merchant
/// tokens), and where an Apple Pay first payment's scheme reference appears (its mobile output
/// has none, so ``StoredCredential/schemeReference`` stays nil and Worldline keeps it with the token).
///
/// A card's new expiry from Apple's token event is not sent: Worldline Direct's Tokens API has
/// create, get and delete, and no update (its SDKs' `TokensClient`), so the default
/// ``PaymentProcessor/updateCredentialExpiry(_:month:year:)`` sends nothing.
extension WorldlineProcessor {
    /// `paymentProduct302SpecificInput` for a first payment that sets up a mandate: tokenize, and
    /// for a scheduled series, mark it as the first of a recurring sequence.
    static func tokenization(_ usage: CredentialUsage) -> JSONValue {
        var input: JSONValue = ["tokenize": true, "isRecurring": .bool(usage == .scheduled)]
        if usage == .scheduled { input["recurring"] = ["recurringPaymentSequenceIndicator": "first"] }
        return input
    }

    /// The token of a tokenized first payment, from `creationOutput`; nil when Worldline did not
    /// tokenize it (or sent a token that could not be named in a later call's path).
    static func storedCredential(_ json: JSONValue) -> StoredCredential? {
        // `tokenizationSucceeded` absent or true: any other value (false, or not a boolean) makes no mandate.
        guard let output = json["creationOutput"], output.object != nil, output["tokenizationSucceeded"].map({ $0.bool == true }) ?? true,
            let token = tokenId(output["token"]?.string)
        else { return nil }
        return StoredCredential(reference: token)
    }

    /// A Worldline token ID that is safe in a path (Worldline's are hexadecimal).
    static func tokenId(_ value: String?) -> String? {
        guard let value, (1...64).contains(value.utf8.count),
            value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return nil }
        return value
    }

    /// `cardPaymentMethodSpecificInput` for a merchant-initiated charge of the token: a scheduled
    /// series says `isRecurring`, an unscheduled charge the card-on-file indicators, never both
    /// (Worldline refuses `unscheduledCardOnFile*` when `isRecurring` is true).
    func mandateInput(token: String, usage: CredentialUsage) -> JSONValue {
        var input: JSONValue = [
            "authorizationMode": .string(settings.authorizationMode), "transactionChannel": "ECOMMERCE", "token": .string(token),
        ]
        switch usage {
        case .scheduled:
            input["isRecurring"] = true
        case .unscheduled:
            input["unscheduledCardOnFileRequestor"] = "merchantInitiated"
            input["unscheduledCardOnFileSequenceIndicator"] = "subsequent"
        }
        return input
    }

    /// `POST /v2/{merchantId}/payments` with the stored token, the reference as both
    /// `merchantReference` and idempotence key: a re-send gets Worldline's first answer again.
    /// Answers are read as for ``authorize(_:)``; a request Worldline refused (`failed`) is final
    /// only on the reference's first send, since a later one may be about our own earlier charge.
    public func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        guard let token = Self.tokenId(request.mandate.credential.reference) else {
            // Nothing is sent: a definite no.
            return AuthorizationOutcome(
                status: .failed, code: "no_stored_credential", message: "the mandate has no Worldline token that can be charged")
        }
        let body = try ProcessorHTTP.encode([
            "order": [
                "amountOfMoney": ["amount": .integer(request.order.priced.total), "currencyCode": .string(request.order.priced.currency)],
                "references": ["merchantReference": .string(request.reference)],
            ],
            "cardPaymentMethodSpecificInput": mandateInput(token: token, usage: CredentialUsage(request.mandate.kind)),
        ])
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + paymentsPath,
            headers: signedHeaders(method: "POST", path: paymentsPath, idempotenceKey: request.reference), body: body)
        return try Self.outcome(answer, reference: request.reference, paymentsURL: settings.connection.baseURL + paymentsPath).definite(
            sends: request.sends, processor: "Worldline", reference: request.reference, status: answer.status)
    }

    /// `DELETE /v2/{merchantId}/tokens/{tokenId}`, signed. 200 and 204 are done; so is 404: the
    /// token is already gone (deleted before, or expired at Worldline).
    public func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {
        guard let token = Self.tokenId(mandate.credential.reference) else {
            throw ProcessorActionError("the mandate's credential is not a Worldline token ID")
        }
        let path = "/v2/\(settings.merchantId)/tokens/\(token)"
        let answer: ProcessorHTTP.Answer
        do {
            answer = try await client.send(
                "DELETE", url: settings.connection.baseURL + path,
                headers: signedHeaders(method: "DELETE", path: path, idempotenceKey: nil, hasBody: false), body: nil)
        } catch let error as ProcessorActionError {
            throw error
        } catch {
            throw ProcessorActionError("Worldline did not answer the token deletion (\(error)); try again later")
        }
        guard [200, 204, 404].contains(answer.status) else {
            let message = answer.json["errors"]?.objects?.first?["message"]?.string ?? ""
            throw ProcessorActionError("Worldline answered the token deletion with HTTP \(answer.status): \(message)")
        }
    }
}
