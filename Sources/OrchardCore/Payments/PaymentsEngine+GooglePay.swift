import ApplePay
import Foundation
import GooglePay
import Logging

/// A token checked against its order: what the claim records and the processor is handed.
struct CheckedToken {
    /// The payment's claim key: Apple's transaction ID (hex), or `googlepay:` and the hash of
    /// Google's signed message. Unique: a second use of the token loses the claim.
    var claimKey: String
    var wallet: WalletCredential
    var network: String?
    var lastFour: String
    /// Apple's merchant token fields, when the token was a merchant token Orchard decrypted.
    var merchantToken: DecryptedPayment.Fields?
    /// The price version the shopper's sheet showed, when the token carries nothing of the
    /// price (Google Pay): the claim pays the order only at that version. Nil: the version the
    /// token was checked against (Apple Pay's amount is in the token).
    var priceVersion: Int? = nil
}

/// Google Pay tokens: checked as far as Orchard can without the gateway's key, and in direct
/// mode opened with the merchant's own.
extension PaymentsEngine {
    /// The claim key's prefix for Google Pay: Apple's transaction IDs are hex, so the two never meet.
    static let googlePayClaimPrefix = "googlepay:"

    /// Checks a Google Pay token for this order: the merchant takes Google Pay, the token's signatures verify for the merchant's recipient ID
    /// under an unexpired root and intermediate key; in direct mode it opens, has not expired,
    /// and was authenticated as the merchant allows. Google's token carries nothing of the order
    /// or its amount: the order is charged at the server's total, and the claim takes it only at
    /// the price version the page's sheet showed (after the replay check, in one decision).
    func checkGooglePay(_ method: GooglePayPaymentMethod, priceVersion: Int?, against order: OrderRecord) throws(CoreError)
        -> CheckedToken
    {
        guard let settings = googlePay[order.merchantIdentifier] else {
            throw CoreError(.invalidToken, "the payment could not be verified (this merchant does not take Google Pay)")
        }
        guard order.priced.agreement == nil else {
            throw CoreError(.invalidToken, "the payment could not be verified (a payment that sets up a mandate takes Apple Pay)")
        }
        let decrypted: GooglePayPaymentData?
        do throws(GooglePayError) {
            decrypted = try Self.openGooglePay(method, settings: settings, at: time.now)
        } catch {
            logger.warning(
                "Google Pay token refused",
                metadata: ["order": "\(order.id)", "reason": "\(error.code.rawValue)", "detail": "\(error.message)"])
            throw CoreError(.invalidToken, "the payment could not be verified (\(error.code.rawValue))")
        }
        if let card = decrypted?.card, !settings.allowedAuthMethods.contains(card.authMethod.rawValue) {
            logger.warning(
                "Google Pay token refused", metadata: ["order": "\(order.id)", "reason": "authMethod \(card.authMethod.rawValue)"])
            throw CoreError(.invalidToken, "the payment could not be verified (authMethod \(card.authMethod.rawValue) is not allowed)")
        }
        return CheckedToken(
            claimKey: Self.googlePayClaimPrefix + method.claimKey, wallet: .googlePay(method, decrypted: decrypted),
            network: method.cardNetwork, lastFour: decrypted.map { String($0.card.pan.suffix(4)) } ?? method.cardDetails ?? "",
            merchantToken: nil, priceVersion: priceVersion)
    }

    /// Verifies the token at `now` and, in direct mode, opens it with the first of the merchant's
    /// keys whose tag matches; nil in gateway mode, where only the gateway can open it.
    static func openGooglePay(_ method: GooglePayPaymentMethod, settings: GooglePaySettings, at now: Date) throws(GooglePayError)
        -> GooglePayPaymentData?
    {
        let verified = try ECv2.verify(method.parsed, recipientId: settings.recipientId, roots: settings.signingKeys, at: now)
        guard case .direct(let keys) = settings.mode else { return nil }
        var refusal = GooglePayError(.tagMismatch, "no key opens the message")
        for key in keys {
            do throws(GooglePayError) {
                return try ECv2.decrypt(verified, with: key, at: now)
            } catch {
                // Another key may be the one it was sealed for; any other refusal is final.
                guard error.code == .tagMismatch else { throw error }
                refusal = error
            }
        }
        throw refusal
    }

    /// A Google Pay payment's request as first sent, from its sealed token: checked and opened
    /// again as at its first send (its message has expired since, and it was checked then).
    func rebuildGooglePay(_ token: String, payment: PaymentRecord, order: OrderRecord) throws(CoreError) -> WalletCredential {
        guard let settings = googlePay[order.merchantIdentifier] else {
            throw CoreError(.invalidToken, "the merchant no longer takes Google Pay")
        }
        do throws(GooglePayError) {
            let method = GooglePayPaymentMethod(
                token: token, parsed: try GooglePayToken.parse(Array(token.utf8)), cardNetwork: payment.network,
                cardDetails: payment.lastFour.isEmpty ? nil : payment.lastFour)
            return .googlePay(method, decrypted: try Self.openGooglePay(method, settings: settings, at: payment.createdAt))
        } catch {
            throw CoreError(.invalidToken, "its sealed Google Pay token no longer verifies (\(error.code.rawValue))")
        }
    }
}
