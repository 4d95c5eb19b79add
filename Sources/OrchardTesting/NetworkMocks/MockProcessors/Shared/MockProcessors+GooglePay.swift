import ApplePay
import Crypto
import Foundation
import GooglePay
import Synchronization

/// The mock processors as Google Pay gateways: the key Google seals gateway-mode tokens to (a
/// test one: Google's test root signs them, never Google's), the root signing keys the
/// processor trusts, and the `gatewayMerchantId` each processor's merchant is set up with.
public struct MockGooglePayGateway: Sendable {
    /// The gateway's private key: tokens for `gateway:worldpay` and `gateway:worldlinedirect` are encrypted to its public half.
    public var privateKey: P256.KeyAgreement.PrivateKey
    /// The root signing keys the gateway checks the intermediate key against (``GooglePayMinter/rootKeysJSON``).
    public var roots: GooglePaySigningKeys
    /// The `gatewayMerchantId` Worldpay's tokens must carry; Worldline's must carry the account's PSPID.
    public var worldpayMerchantId: String

    public init(privateKey: P256.KeyAgreement.PrivateKey, roots: GooglePaySigningKeys, worldpayMerchantId: String) {
        self.privateKey = privateKey
        self.roots = roots
        self.worldpayMerchantId = worldpayMerchantId
    }
}

/// A Google Pay payment a processor mock received: the form it came in and, in gateway mode,
/// the token exactly as it arrived. No card data: a decrypted form keeps only its name.
public struct MockGooglePayPayment: Sendable, Equatable {
    /// `worldpay` or `worldline`.
    public var processor: String
    /// Worldpay's `transactionReference`, Worldline's idempotence key.
    public var reference: String
    /// Worldpay's `paymentInstrument.type` (`card/wallet+googlepay`, `card/networkToken+googlepay`,
    /// `card/plain`), or Worldline's product 320 input (`encryptedPaymentData`, `decryptedPaymentData`).
    public var form: String
    /// The token string as received, for the two gateway forms; nil for a decrypted one.
    public var token: String?
    /// With a gateway key (``MockProcessors/googlePayGateway``): the `authMethod` of the token
    /// the mock opened; nil when it held no key, the form was decrypted, or the token did not open.
    public var authMethod: String?
}

extension MockProcessors {
    /// The Google Pay gateway the mock plays; nil (the default): it checks a token's shape only,
    /// as without the gateway's key nothing more can be checked.
    public var googlePayGateway: MockGooglePayGateway? {
        get { state.withLock { $0.googlePayGateway } }
        set { state.withLock { $0.googlePayGateway = newValue } }
    }

    /// Every Google Pay payment request received, oldest first (retries and re-sends each count).
    public var googlePayPayments: [MockGooglePayPayment] { state.withLock { $0.googlePayPayments } }

    /// Records a Google Pay payment request and, for a gateway form with a gateway key held, says
    /// why the processor declines it, or nil: the token must verify for `recipientId` under the
    /// gateway's roots at the mock's "now", open with its key, not have expired, and carry
    /// `gatewayMerchantId`. The decline reads as a real gateway's, without the token's contents.
    func receiveGooglePay(
        processor: String, reference: String, form: String, token: String?, recipientId: String,
        gatewayMerchantId: (MockGooglePayGateway) -> String
    ) -> (code: String, description: String)? {
        let (gateway, now) = state.withLock { ($0.googlePayGateway, $0.clock.now) }
        var received = MockGooglePayPayment(processor: processor, reference: reference, form: form, token: token)
        var refusal: (code: String, description: String)?
        if let token, let gateway {
            do throws(GooglePayError) {
                let verified = try ECv2.verify(
                    try GooglePayToken.parse(Array(token.utf8)), recipientId: recipientId, roots: gateway.roots, at: now)
                let data = try ECv2.decrypt(verified, with: gateway.privateKey, at: now)
                received.authMethod = data.card.authMethod.rawValue
                let expected = gatewayMerchantId(gateway)
                if data.gatewayMerchantId != expected {
                    refusal = (
                        "gateway_merchant_mismatch",
                        "the Google Pay token was issued for another gateway merchant, not \(expected.prefix(64))"
                    )
                }
            } catch {
                refusal = (
                    "decryption_failed", "the Google Pay token could not be verified or decrypted by the gateway: \(error.code.rawValue)"
                )
            }
        }
        state.withLock { $0.googlePayPayments.append(received) }
        return refusal
    }

    /// A card number as a decrypted Google Pay payment carries it: 12–19 ASCII digits.
    static func isCardNumber(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        return (12...19).contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// Whether `value` is Google's ECv2 `PaymentMethodToken` as a JSON string.
    static func isGooglePayToken(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        return (try? GooglePayToken.parse(Array(text.utf8))) != nil
    }
}
