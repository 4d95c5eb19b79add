import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardConfigurationTesting
import OrchardTesting
import Testing

/// What the checkout page sends: an order, then the authorize body with a token the shopper's
/// device would sign for it.
public enum PageCheckout {
    public static let minter = TokenMinter(chain: TestConfiguration.tokenChain)
    public static let twoApples = #"[{"productId": "apple", "quantity": 2}]"#

    /// Creates an order for `items` and returns its ID and payment request.
    public static func createOrder(_ server: some ServerRequests, items: String = twoApples) async throws
        -> (id: String, request: [String: Any])
    {
        let response = try await server.send("POST", "/api/orders", body: Array(#"{"items": \#(items)}"#.utf8))
        #expect(response.status == 201)
        let json = try #require(response.json)
        return (try #require(json["orderId"] as? String), try #require(json["paymentRequest"] as? [String: Any]))
    }

    /// A token for `amount` bound to the order's applicationData, as Safari would post it.
    public static func paymentBody(
        orderId: String, request: [String: Any], amount: Int, currency: String = "978", applicationData: String? = nil
    ) throws -> [UInt8] {
        let appData = try #require(Data(base64Encoded: applicationData ?? (request["applicationData"] as? String ?? "")))
        let token = try minter.mintEC(
            payload: TokenMinter.samplePayload(amount: amount, currencyCode: currency), to: TestConfiguration.processingKey.publicKey,
            merchantIdentifier: TestMaterial.merchantIdentifier, applicationDataHash: Array(SHA256.hash(data: appData)))
        return try paymentBody(orderId: orderId, token: token)
    }

    /// The page's authorize body for `token`, paid with a Visa debit card.
    public static func paymentBody(orderId: String, token: PaymentData) throws -> [UInt8] {
        let payment = PaymentToken(
            paymentData: token, paymentMethod: .init(displayName: "Visa 1111", network: "Visa", type: "debit"),
            transactionIdentifier: token.header.transactionId)
        let tokenJSON = try JSONSerialization.jsonObject(with: JSONEncoder().encode(payment))
        return Array(try JSONSerialization.data(withJSONObject: ["orderId": orderId, "payment": ["token": tokenJSON]]))
    }
}
