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
}
