import Foundation

extension MockWorldline {
    /// GetPaymentProduct, `GET /v2/{merchantId}/products/320?countryCode=…&currencyCode=…`, signed over the path and
    /// its query; both are required, as Worldline requires them. It names ``googlePayGateway`` in
    /// `paymentProduct320SpecificData`, as Worldline Direct does.
    func worldlineProduct(_ request: MockProcessorRequest) -> Reply? {
        guard request.method == "GET", request.path.hasPrefix("/v2/\(account.merchantId)/products/") else { return nil }
        guard let country = request.query["countryCode"], let currency = request.query["currencyCode"] else {
            return worldlineError(400, "PARAMETER_NOT_FOUND_IN_REQUEST", "countryCode and currencyCode are required")
        }
        var signed = request
        signed.path += "?countryCode=\(country)&currencyCode=\(currency)"
        guard worldlineSignatureValid(signed), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        guard request.path.hasSuffix("/320") else {
            return worldlineError(404, "PAYMENT_PRODUCT_NOT_FOUND", "the mock describes product 320 only")
        }
        return Self.reply(
            200,
            [
                "id": 320, "paymentMethod": "mobile",
                "paymentProduct320SpecificData": ["gateway": Self.googlePayGateway, "networks": ["VISA", "MASTERCARD"]],
            ])
    }
}
