import Crypto
import Foundation
import GooglePay

/// The demo's Google Pay: a test root and intermediate signing key in place of Google's (their
/// `keys.json` is what the demo's configuration trusts), and the key of the gateway the mock
/// processor plays, which gateway-mode tokens are encrypted to.
extension DemoEnvironment {
    /// The root's `keys.json`, as Google publishes its own: `merchants[].googlePay.signingKeys`.
    public var googlePaySigningKeysFile: String { file("test-google-pay-keys.json") }
    var googlePayRootKeyFile: String { file("test-google-pay-root.key") }
    var googlePayIntermediateKeyFile: String { file("test-google-pay-intermediate.key") }
    /// The mock gateway's private key: never in `orchard.json`.
    var googlePayGatewayKeyFile: String { file("test-google-pay-gateway.key") }

    /// The demo merchant's ID at the gateway where Worldline's PSPID is not it.
    public static let googlePayGatewayMerchantId = "orchard-demo-gateway-merchant"
    /// The gateway name the demo's configuration gives Google for `record`, which any name suits.
    public static let recordGooglePayGateway = "orchard-demo"

    /// The gateway and gateway merchant ID the demo merchant gives Google with `processor`: the
    /// processor's own name at Google (Worldline's merchant ID being its PSPID).
    public static func googlePayGateway(for processor: DemoProcessor) -> (gateway: String, merchantId: String) {
        switch processor {
        case .worldpay: ("worldpay", googlePayGatewayMerchantId)
        case .worldline: ("worldlinedirect", worldlineAccount.merchantId)
        case .record: (recordGooglePayGateway, googlePayGatewayMerchantId)
        }
    }

    /// The minter with the demo's test root and intermediate key (created on first use), its
    /// `keys.json` written beside them.
    public func googlePayMinter() throws -> GooglePayMinter {
        let root = try signingKey(googlePayRootKeyFile)
        let minter = GooglePayMinter(root: root, intermediate: try signingKey(googlePayIntermediateKeyFile))
        try Data(minter.rootKeysJSON).write(to: URL(fileURLWithPath: googlePaySigningKeysFile))
        return minter
    }

    /// The key of the gateway the mock processor plays (created on first use).
    public func googlePayGatewayKey() throws -> P256.KeyAgreement.PrivateKey {
        if let pem = try? String(contentsOfFile: googlePayGatewayKeyFile, encoding: .utf8),
            let key = try? P256.KeyAgreement.PrivateKey(pemRepresentation: pem)
        {
            return key
        }
        let key = P256.KeyAgreement.PrivateKey()
        _ = try writeSecret(URL(fileURLWithPath: googlePayGatewayKeyFile).lastPathComponent, key.pemRepresentation)
        return key
    }

    /// What the mock processors check the demo's gateway-mode tokens with.
    public func mockGooglePayGateway() throws -> MockGooglePayGateway {
        MockGooglePayGateway(
            privateKey: try googlePayGatewayKey(), roots: try GooglePaySigningKeys.parse(try googlePayMinter().rootKeysJSON),
            worldpayMerchantId: Self.googlePayGatewayMerchantId)
    }

    /// `merchants[].googlePay` for the demo merchant paying through `processor`: gateway mode, the
    /// test root's `keys.json`, and the demo's stand-in `pay.js`.
    func googlePaySection(processor: DemoProcessor) throws -> [String: Any] {
        _ = try googlePayMinter()
        let gateway = Self.googlePayGateway(for: processor)
        return [
            "merchantName": Self.displayName, "environment": "TEST", "gateway": gateway.gateway, "gatewayMerchantId": gateway.merchantId,
            "signingKeys": URL(fileURLWithPath: googlePaySigningKeysFile).lastPathComponent,
            "scriptURL": StandInGooglePay.scriptPath,
        ]
    }

    private func signingKey(_ path: String) throws -> P256.Signing.PrivateKey {
        if let pem = try? String(contentsOfFile: path, encoding: .utf8), let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            return key
        }
        let key = P256.Signing.PrivateKey()
        _ = try writeSecret(URL(fileURLWithPath: path).lastPathComponent, key.pemRepresentation)
        return key
    }
}
