import ApplePay
import Crypto
import Foundation
import OrchardConfigurationTesting
import OrchardTesting
import Testing

/// The checkout page's authorize body, as the page posts it after the sheet.
public enum AuthorizeBody {
    /// The page's authorize body for an order's payment request, with a fresh token for `amount`
    /// (its 9.90 EUR unless told) encrypted to `recipient` (the merchant's processing key unless told).
    public static func make(
        _ id: String, _ request: [String: Any], minter: TokenMinter, at signingTime: Date = Date(), amount: Int = 990,
        to recipient: P256.KeyAgreement.PublicKey = TestConfiguration.processingKey.publicKey, method: PaymentToken.PaymentMethod? = nil
    ) throws -> ([UInt8], PaymentData) {
        let appData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
        let token = try minter.mintEC(
            payload: TokenMinter.samplePayload(amount: amount), to: recipient,
            merchantIdentifier: TestMaterial.merchantIdentifier, applicationDataHash: Array(SHA256.hash(data: appData)),
            signingTime: signingTime)
        let tokenJSON = String(
            decoding: try JSONEncoder().encode(PaymentToken(paymentData: token, paymentMethod: method)), as: UTF8.self)
        let body =
            #"{"orderId": "\#(id)", "payment": {"token": \#(tokenJSON), "billingContact": {"givenName": "Camille", "familyName": "Martin"}}}"#
        return (Array(body.utf8), token)
    }
}
