import Crypto
import Foundation
import GooglePay
import OrchardCore

/// The demo's stand-in for Google Pay: a `pay.js` of our own (Google's cannot run offline and is
/// not copied) whose `PaymentsClient` shows a small sheet, and a minter that makes ECv2 tokens
/// as Google's servers do, signed by the demo's test root.
///
/// Only `orchard-sandbox demo` and tests hand it to the server (with the simulated Apple Pay
/// sheet); its tokens verify only against the test root a demo configuration trusts.
public struct StandInGooglePay: SimulatedGooglePay {
    /// Where the demo's configuration points `googlePay.scriptURL`.
    public static let scriptPath = "/demo/google-pay.js"

    public let files: [String: [UInt8]]
    let minter: GooglePayMinter
    let gatewayKey: P256.KeyAgreement.PublicKey

    /// A stand-in whose tokens are signed by `minter` and, in gateway mode, encrypted to `gatewayKey`.
    public init(minter: GooglePayMinter, gatewayKey: P256.KeyAgreement.PublicKey) throws {
        guard let folder = Bundle.module.url(forResource: "SimulatedSheet", withExtension: nil) else {
            throw SimulatedSheetError("the Google Pay stand-in's files are missing from the orchard_OrchardTesting resource bundle")
        }
        files = try ["google-pay.js", "google-pay-sheet.css"].reduce(into: [:]) { files, name in
            files[name] = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
        }
        self.minter = minter
        self.gatewayKey = gatewayKey
    }

    /// The demo's stand-in: its test root, and the mock processors' gateway key.
    public init(environment: DemoEnvironment) throws {
        try self.init(minter: try environment.googlePayMinter(), gatewayKey: try environment.googlePayGatewayKey().publicKey)
    }

    public func mintToken(for settings: GooglePaySettings, card: SimulatedGooglePayCard, authMethod: GooglePayPaymentData.AuthMethod)
        throws -> String
    {
        let recipient: P256.KeyAgreement.PublicKey
        var gatewayMerchantId: String?
        switch settings.mode {
        case .gateway(_, let merchantId):
            recipient = gatewayKey
            gatewayMerchantId = merchantId
        case .direct(let keys):
            recipient = keys[0].publicKey
        }
        // Google's messages last about an hour; the cryptogram is a test value, never a real one.
        let payload = GooglePayMinter.paymentData(
            pan: card.pan, cryptogram: authMethod == .cryptogram3DS ? "AgAAAAAABk4DWZ4C28yUQAAAAAA=" : nil,
            expiration: Date().addingTimeInterval(3600), gatewayMerchantId: gatewayMerchantId)
        return String(decoding: try minter.mint(payload, recipientId: settings.recipientId, to: recipient), as: UTF8.self)
    }
}
