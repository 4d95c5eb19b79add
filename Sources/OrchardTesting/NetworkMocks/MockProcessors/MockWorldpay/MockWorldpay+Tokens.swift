import ApplePay
import Foundation

/// Worldpay's Tokens API (v3) beyond deletion: a token's inquiry, whose `_links` offer
/// `tokens:cardExpiryDate`, and the `PUT` of a new card expiry on that link (204).
///
/// Worldpay's links are opaque encoded URLs; the mock's expiry link is the token's href with
/// ``cardExpirySuffix``, which Orchard must follow from the inquiry rather than build.
extension MockWorldpay {
    static let tokensMediaType = "application/vnd.worldpay.tokens-v3.hal+json"
    static let cardExpirySuffix = "/cardExpiryDate"

    /// `GET` on a token's href: the token, its card's expiry when one was given, and its links.
    func worldpayTokenInquiry(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        guard request.header("Accept") == Self.tokensMediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(Self.tokensMediaType)")
        }
        let href = mock.baseURL + request.path
        guard let token = mock.liveToken(name, href) else { return worldpayError(404, "tokenNotFound", "no such token") }
        var instrument: [String: Any] = ["type": "card/masked", "cardNumber": "5204********7840"]
        if let expiry = token.cardExpiryDate { instrument["cardExpiryDate"] = ["month": expiry.month, "year": expiry.year] }
        return Self.reply(
            200,
            [
                "tokenPaymentInstrument": ["type": "card/tokenized", "href": href], "paymentInstrument": instrument,
                "_links": ["tokens:token": ["href": href], "tokens:cardExpiryDate": ["href": href + Self.cardExpirySuffix]],
            ])
    }

    /// `PUT {"month", "year"}` on a token's `tokens:cardExpiryDate` link: 204; 400 for a month
    /// outside 1–12, a year past 9999, or an expiry already past ("must represent a future credit
    /// card expiry"); 404 for a token unknown or deleted.
    func worldpayCardExpiry(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        guard request.header("Content-Type") == Self.tokensMediaType, request.header("Accept") == Self.tokensMediaType else {
            return worldpayError(415, "headerHasInvalidValue", "Content-Type and Accept must be \(Self.tokensMediaType)")
        }
        struct Body: Decodable {
            var month: Int
            var year: Int
        }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)), (1...12).contains(body.month),
            body.year <= 9999
        else {
            return worldpayError(400, "bodyDoesNotMatchSchema", "month (1–12) and year (at most 9999) are required")
        }
        let now = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC") ?? .current, from: mock.clock.now)
        guard (body.year, body.month) >= (now.year ?? 0, now.month ?? 0) else {
            return worldpayError(400, "fieldIsInvalid", "the card expiry date must be in the future")
        }
        let href = String((mock.baseURL + request.path).dropLast(Self.cardExpirySuffix.count))
        guard mock.setCardExpiry(name, href, MockCardExpiry(month: body.month, year: body.year)) else {
            return worldpayError(404, "tokenNotFound", "no such token")
        }
        return .answer(status: 204, body: [], headers: [("Content-Type", Self.tokensMediaType)])
    }
}
