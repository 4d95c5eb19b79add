import ApplePay
import CurlClient
import Foundation
import OrchardCore

/// Mandates on Worldpay Access (Card Payments v7): the first payment states the customer
/// agreement and asks for a Worldpay token, later merchant-initiated charges send that token with
/// the agreement and the scheme's reference, and the token is deleted when the mandate ends.
///
/// Confirmed from Worldpay's guides: `customerAgreement` (`subscription` | `unscheduled`, with
/// `storedCardUsage: first` on the first payment), `tokenCreation: {type: worldpay}`,
/// `POST /cardPayments/merchantInitiatedTransactions` with a `card/token` instrument and the
/// agreement's `schemeReference`, that `channel` is refused there, that a token is deleted by
/// `DELETE` on its href, and that a card token's expiry is replaced by `PUT` on its
/// `tokens:cardExpiryDate` link (Tokens API v3).
extension WorldpayProcessor {
    /// The Tokens API's media type: its `Accept` header picks the API version.
    public static let tokensMediaType = "application/vnd.worldpay.tokens-v3.hal+json"

    static func agreementType(_ usage: CredentialUsage) -> String {
        usage == .scheduled ? "subscription" : "unscheduled"
    }

    /// The token and scheme reference of a first payment's answer: `tokenPaymentInstrument.href`
    /// and `scheme.reference`; nil without a token.
    ///
    /// To be confirmed in Worldpay's try environment: whether Worldpay creates a token for an
    /// encrypted Apple Pay wallet payment at all, and that its answer names it in
    /// `tokenPaymentInstrument` (the Tokens API's field) beside `scheme.reference`. Worldpay's
    /// guides stop short of a wallet payment's answer; this shape is the mock processor's.
    static func storedCredential(_ json: JSONValue) -> StoredCredential? {
        guard let href = json["tokenPaymentInstrument"]?["href"]?.string, !href.isEmpty else { return nil }
        let scheme = json["scheme"]?["reference"]?.string
        return StoredCredential(reference: href, schemeReference: scheme.flatMap(schemeReference))
    }

    /// A scheme reference as Worldpay accepts it back (1–56 letters and digits); another is
    /// left out rather than make every later charge fail validation.
    static func schemeReference(_ value: String) -> String? {
        (1...56).contains(value.utf8.count) && value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? value : nil
    }

    /// The merchant-initiated body: no `channel` (Worldpay refuses it on this route), and no
    /// `requestAutoSettlement`, as for first payments: settling stays the back office's call.
    func mandateBody(_ request: MandateChargeRequest) throws -> [UInt8] {
        var agreement: JSONValue = ["type": .string(Self.agreementType(CredentialUsage(request.mandate.kind)))]
        agreement["schemeReference"] = request.mandate.credential.schemeReference.map(JSONValue.string)
        return try ProcessorHTTP.encode([
            "transactionReference": .string(request.reference),
            "merchant": ["entity": .string(settings.entity)],
            "instruction": [
                "narrative": ["line1": .string(settings.narrative)],
                "value": ["currency": .string(request.order.priced.currency), "amount": .integer(request.order.priced.total)],
                "paymentInstrument": ["type": "card/token", "href": .string(request.mandate.credential.reference)],
                "customerAgreement": agreement,
            ],
        ])
    }

    /// `POST /cardPayments/merchantInitiatedTransactions` under the charge's reference, on a fresh
    /// connection. Answers are read as for ``authorize(_:)``; a request Worldpay refused (`failed`)
    /// is final only on the reference's first send: later, a 400 may be Worldpay's answer to a
    /// reference it is still processing, or has already charged.
    public func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        guard !request.mandate.credential.reference.isEmpty else {
            // Nothing is sent: a definite no.
            return AuthorizationOutcome(
                status: .failed, code: "no_stored_credential", message: "the mandate has no Worldpay token to charge")
        }
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + "/cardPayments/merchantInitiatedTransactions", headers: headers,
            body: try mandateBody(request), fresh: true)
        return try Self.outcome(answer, reference: request.reference, baseURL: settings.connection.baseURL).definite(
            sends: request.sends, processor: "Worldpay", reference: request.reference, status: answer.status)
    }

    /// Gives Worldpay the card's new expiry (the MPAN's, from Apple's token event): `GET` on the
    /// token's href, then `PUT {"month", "year"}` on the `tokens:cardExpiryDate` link its answer
    /// offers (204), both with the Tokens API v3 media type (Worldpay's Tokens API reference,
    /// "Card Expiry Date": "Update the expiry date for the credit card represented by the token").
    /// Both URLs must be `/tokens/` URLs on the configured origin, as for a deletion. False,
    /// nothing updated, when the token offers no such link: Worldpay documents it for card tokens,
    /// and not whether a wallet payment's token has one.
    public func updateCredentialExpiry(_ mandate: MandateRecord, month: Int, year: Int) async throws(ProcessorActionError) -> Bool {
        let token = try await tokenCall("GET", mandate.credential.reference, body: nil, what: "the token inquiry")
        guard (200..<300).contains(token.status) else {
            throw ProcessorActionError(
                "Worldpay answered the token inquiry with HTTP \(token.status): \(token.json["message"]?.string ?? "")")
        }
        guard let link = token.json["_links"]?["tokens:cardExpiryDate"]?["href"]?.string else { return false }
        let body: [UInt8]
        do {
            body = try ProcessorHTTP.encode(["month": .integer(Int64(month)), "year": .integer(Int64(year))])
        } catch {
            throw ProcessorActionError("cannot encode the card expiry date")
        }
        let answer = try await tokenCall(
            "PUT", link.hasPrefix("/") ? settings.connection.baseURL + link : link, body: body, what: "the expiry update")
        guard (200..<300).contains(answer.status) else {
            throw ProcessorActionError(
                "Worldpay answered the expiry update with HTTP \(answer.status): \(answer.json["message"]?.string ?? "")")
        }
        return true
    }

    /// One Tokens API call on a `/tokens/` URL of the configured origin, on a fresh connection.
    private func tokenCall(_ method: String, _ url: String, body: [UInt8]?, what: String) async throws(ProcessorActionError)
        -> ProcessorHTTP.Answer
    {
        guard settings.connection.owns(url), URLComponents(string: url)?.path.hasPrefix("/tokens/") == true else {
            let host = URLComponents(string: url)?.host ?? "an unreadable URL"
            throw ProcessorActionError("refusing \(what) at \(host): not a /tokens/ URL on \(settings.connection.baseURL)")
        }
        let credentials = Data("\(settings.username.value):\(settings.password.value)".utf8).base64EncodedString()
        var headers = [(name: "Authorization", value: "Basic \(credentials)"), (name: "Accept", value: Self.tokensMediaType)]
        if body != nil { headers.append((name: "Content-Type", value: Self.tokensMediaType)) }
        do {
            return try await client.send(method, url: url, headers: headers, body: body, fresh: true)
        } catch let error as ProcessorActionError {
            throw error
        } catch {
            throw ProcessorActionError("Worldpay did not answer \(what) (\(error))")
        }
    }

    /// `DELETE` on the token's href, only when it is a `/tokens/` URL on the configured Worldpay
    /// origin: the href came back in an answer and Orchard's credentials go with the call, so it
    /// is never sent anywhere else. 200 and 204 are done; so is 404: the token is already gone.
    public func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {
        let answer = try await tokenCall("DELETE", mandate.credential.reference, body: nil, what: "the token deletion")
        guard [200, 204, 404].contains(answer.status) else {
            throw ProcessorActionError(
                "Worldpay answered the token deletion with HTTP \(answer.status): \(answer.json["message"]?.string ?? "")")
        }
    }
}
