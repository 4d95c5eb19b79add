import ApplePay
import Crypto
import Foundation
import OrchardCore

/// The demo's simulated Apple Pay sheet: an `ApplePaySession` test double that runs in any
/// browser, and a minter that signs real tokens with the demo's test "Apple" chain.
///
/// Only `orchard-sandbox demo` and tests hand it to `buildApplication`; tokens it mints verify only
/// against the test root that a demo configuration trusts.
public struct SimulatedSheet: SimulatedApplePay {
    public let files: [String: [UInt8]]
    /// The demo's Google Pay stand-in, served beside the sheet (`orchard-sandbox demo --google-pay`); nil: none.
    public var googlePay: (any SimulatedGooglePay)?
    let minter: TokenMinter
    let processingKey: P256.KeyAgreement.PublicKey

    /// A sheet whose tokens are signed by `chain` and encrypted to `processingKey` (EC_v1); with
    /// `standInSDK`, installed by a stand-in for Apple's SDK as in browsers other than Safari.
    public init(chain: TestAppleChain, processingKey: P256.KeyAgreement.PublicKey, standInSDK: Bool = false) throws {
        guard let folder = Bundle.module.url(forResource: "SimulatedSheet", withExtension: nil) else {
            throw SimulatedSheetError("the simulated sheet's files are missing from the orchard_OrchardTesting resource bundle")
        }
        var names = [
            "simulated-sheet.js": "simulated-sheet.js", "simulated-payment-request.js": "simulated-payment-request.js",
            "simulated-sheet.css": "simulated-sheet.css",
        ]
        if standInSDK { names["apple-pay-sdk.js"] = "stand-in-sdk.js" }
        files = try names.mapValues { Array(try Data(contentsOf: folder.appendingPathComponent($0))) }
        minter = TokenMinter(chain: chain)
        self.processingKey = processingKey
    }

    /// The demo's sheet: its token chain, and its EC processing key or, when the mock processor
    /// holds the key, the processor's.
    public init(environment: DemoEnvironment, processorHoldsKey: Bool = false, standInSDK: Bool = false) throws {
        let key = processorHoldsKey ? try environment.processorHeldKey().key : try environment.processingKeys().ec
        try self.init(chain: try environment.tokenChain(), processingKey: key.publicKey, standInSDK: standInSDK)
    }

    public func mintToken(
        amount: Int64, currency: Currency, applicationData: [UInt8]?, paymentMethod: PaymentToken.PaymentMethod,
        merchant: MerchantConfiguration, merchantToken: Bool
    ) throws -> PaymentToken {
        let payload =
            merchantToken
            ? TokenMinter.merchantTokenPayload(
                amount: Int(amount), currencyCode: currency.numericCode, merchantTokenIdentifier: "DNITHE" + RecordIdentifier.random())
            : TokenMinter.samplePayload(amount: Int(amount), currencyCode: currency.numericCode)
        let paymentData = try minter.mintEC(
            payload: payload, to: processingKey,
            merchantIdentifier: merchant.merchantIdentifier, applicationDataHash: applicationData.map { Array(SHA256.hash(data: $0)) })
        return PaymentToken(
            paymentData: paymentData, paymentMethod: paymentMethod, transactionIdentifier: paymentData.header.transactionId.uppercased())
    }
}

/// The simulated sheet could not be set up.
public struct SimulatedSheetError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
