import Foundation
import Testing

@testable import ApplePay

@Suite("Inputs the fuzzer found")
struct FuzzRegressionTests {
    @Test("a signed attribute without a value set is a malformed signature, not a crash")
    func attributeWithoutValues() throws {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/fuzz-regressions/cms-attribute-without-values.json", withExtension: nil))
        let token = try PaymentToken.parse([UInt8](try Data(contentsOf: url)))
        #expect {
            _ = try TokenVerifier().verify(token.paymentData, at: Date(timeIntervalSince1970: 1_630_523_000))
        } throws: { ($0 as? ApplePayError)?.code == .malformedSignature }
    }

    @Test("an in-app body whose paymentMethod is a string is a malformed token, not a crash")
    func inAppPaymentMethodString() throws {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/fuzz-regressions/inapp-payment-method-string.json", withExtension: nil))
        #expect {
            _ = try InAppPayment.token(from: [UInt8](try Data(contentsOf: url)))
        } throws: { ($0 as? ApplePayError)?.code == .malformedToken }
    }

    @Test(
        "an in-app body's paymentMethod of every JSON type but an object is a malformed token, not a crash",
        arguments: [#""Visa""#, "7", "-0", "1.5", "true", "[]", #"[{"network":"Visa"}]"#, "9223372036854775808"])
    func inAppPaymentMethodTypes(method: String) throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/gala-2021/token.json", withExtension: nil))
        let paymentData = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        let body = #"{"token": {"paymentData": \#(paymentData), "paymentMethod": \#(method), "transactionIdentifier": "AB"}}"#
        #expect {
            _ = try InAppPayment.token(from: Array(body.utf8))
        } throws: { ($0 as? ApplePayError)?.code == .malformedToken }
    }
}
