import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardServerTesting
import OrchardTesting
import Testing

/// A recurring payment through the payments API, as a shop's subscription starts one: the
/// agreement Apple Pay shows, a merchant token, and the mandate it sets up.
public enum RecurringPayment {
    public static let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(30 * 86_400))
    /// The payment request a subscription creates: 9.90 EUR a month from ``start``.
    public static let request = """
        {"amount": 990, "currency": "EUR", "reference": "sub-1",
         "agreement": {"type": "recurring", "paymentDescription": "Coffee club", "billingAgreement": "Cancel any time.",
           "managementURL": "https://shop.example/account",
           "regularBilling": {"label": "Monthly beans", "amount": 990, "startDate": "\(start)", "intervalUnit": "month"}}}
        """

    /// Creates the recurring request and pays it with a merchant token, as the page would.
    public static func pay(_ server: ServerHarness, key: String, token: String) async throws -> (request: String, payment: [String: Any]) {
        let created = try await server.api("POST", "/v1/payment-requests", key: key, json: Self.request, idempotencyKey: "sub-1")
        #expect(created.status == 201)
        let id = try #require(created.json?["id"] as? String)
        let secret = try #require(created.json?["clientSecret"] as? String)
        let opened = try await server.send("POST", "/api/payment-requests/open", body: Array(#"{"clientSecret": "\#(secret)"}"#.utf8))
        let request = try #require(opened.json?["paymentRequest"] as? [String: Any])
        let agreement = try #require(request["recurringPaymentRequest"] as? [String: Any])
        #expect(agreement["paymentDescription"] as? String == "Coffee club")
        #expect(agreement["managementURL"] as? String == "https://shop.example/account")
        let regular = try #require(agreement["regularBilling"] as? [String: Any])
        #expect(regular["amount"] as? String == "9.90" && regular["paymentTiming"] as? String == "recurring")
        #expect(
            regular["recurringPaymentIntervalUnit"] as? String == "month" && regular["recurringPaymentStartDate"] as? String == Self.start)
        let path = try #require(opened.json?["tokenNotificationPath"] as? String)
        #expect(path == "apple-pay/token-events/\(TestMaterial.merchantIdentifier)")

        let appData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
        let minted = try TokenMinter(chain: ServerHarness.tokenChain).mintEC(
            payload: TokenMinter.merchantTokenPayload(amount: 990, merchantTokenIdentifier: token),
            to: ServerHarness.processingKey.publicKey, merchantIdentifier: TestMaterial.merchantIdentifier,
            applicationDataHash: Array(SHA256.hash(data: appData)))
        let authorized = try await server.send(
            "POST", "/api/apple-pay/authorize", body: try PageCheckout.paymentBody(orderId: id, token: minted))
        #expect(authorized.status == 200)
        let paymentId = try #require(authorized.json?["paymentId"] as? String)
        let detail = try await server.api("GET", "/v1/payments/\(paymentId)", key: key)
        return (id, try #require(detail.json?["payment"] as? [String: Any]))
    }
}
