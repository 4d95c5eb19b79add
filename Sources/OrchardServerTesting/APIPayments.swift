import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardConfigurationTesting
import OrchardTesting
import Testing

/// What a shop's backend sends the payments API (`/v1`): a cart, and the app's token for an in-app
/// payment request.
public enum APIPayments {
    /// A shop's cart with line items, shipping methods and required contact fields.
    public static let cart = """
        {"amount": 1234, "currency": "EUR", "reference": "order-1001", "metadata": {"cart": "c-77"},
         "lineItems": [{"label": "Tea", "amount": 1034}, {"label": "Gift wrap", "amount": 200}],
         "shippingMethods": [{"identifier": "post", "label": "Post", "detail": "3 days", "amount": 500},
                             {"identifier": "courier", "label": "Courier", "amount": 1500, "countries": ["FR"]}],
         "requiredShippingContactFields": ["postalAddress", "email"]}
        """

    /// The in-app payment request's cart.
    /// The three ways apps and SDKs send `paymentData`.
    public enum Encoding: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case object, jsonText, base64
        public var testDescription: String { rawValue }
    }

    public static let inAppCart = #"{"amount": 1990, "currency": "EUR", "reference": "app-order-1"}"#

    /// `{"token": PKPaymentToken}` as the app would send it, its `paymentData` in `encoding`.
    public static func inAppBody(_ paymentData: PaymentData, _ encoding: Encoding) throws -> String {
        let data = try JSONEncoder().encode(paymentData)
        var token: [String: Any] = [
            "paymentMethod": ["displayName": "Visa 0492", "network": "Visa", "type": "debit"],
            "transactionIdentifier": paymentData.header.transactionId.uppercased(),
        ]
        switch encoding {
        case .object: token["paymentData"] = try JSONSerialization.jsonObject(with: data)
        case .jsonText: token["paymentData"] = String(decoding: data, as: UTF8.self)
        case .base64: token["paymentData"] = data.base64EncodedString()
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: ["token": token]), as: UTF8.self)
    }

    /// A payment request made through the API, with the `applicationData` the app puts in its `PKPaymentRequest`.
    public static func create(_ server: some ServerRequests, key: String, idempotencyKey: String) async throws -> (
        id: String, applicationData: [UInt8]
    ) {
        let created = try await server.api("POST", "/v1/payment-requests", key: key, json: inAppCart, idempotencyKey: idempotencyKey)
        #expect(created.status == 201, "\(String(describing: created.json))")
        let id = try #require(created.json?["id"] as? String)
        let request = try #require(created.json?["paymentRequest"] as? [String: Any])
        let applicationData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
        return (id, Array(applicationData))
    }

    /// The token Apple would give the app for `applicationData`, encrypted to `recipient`.
    public static func mint(
        _ applicationData: [UInt8], amount: Int = 1990,
        to recipient: P256.KeyAgreement.PublicKey = TestConfiguration.processingKey.publicKey
    ) throws -> PaymentData {
        try TokenMinter(chain: TestConfiguration.tokenChain).mintEC(
            payload: TokenMinter.samplePayload(amount: amount), to: recipient, merchantIdentifier: TestMaterial.merchantIdentifier,
            applicationDataHash: Array(SHA256.hash(data: applicationData)))
    }
}
