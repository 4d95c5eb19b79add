import Foundation
import OrchardCore

/// GetPaymentProduct 320: the Google Pay gateway name Worldline answers for this PSPID.
extension WorldlineProcessor: GooglePayGatewayAnswering {
    public func googlePayGateway(countryCode: String, currencyCode: String) async throws -> String {
        // The signature covers the path with its (decoded) query, as Worldline computes it.
        let path = "/v2/\(settings.merchantId)/products/\(Self.googlePayProductId)?countryCode=\(countryCode)&currencyCode=\(currencyCode)"
        let answer = try await client.send(
            "GET", url: settings.connection.baseURL + path,
            headers: signedHeaders(method: "GET", path: path, idempotenceKey: nil, hasBody: false), body: nil)
        guard answer.status == 200 else {
            throw ProcessorActionError(
                "Worldline's GetPaymentProduct 320 answered HTTP \(answer.status): is Google Pay enabled for PSPID \(settings.merchantId)?")
        }
        guard let gateway = answer.json["paymentProduct320SpecificData"]?["gateway"]?.string, !gateway.isEmpty else {
            throw ProcessorActionError("Worldline's GetPaymentProduct 320 named no paymentProduct320SpecificData.gateway")
        }
        return String(gateway.prefix(64))
    }
}
