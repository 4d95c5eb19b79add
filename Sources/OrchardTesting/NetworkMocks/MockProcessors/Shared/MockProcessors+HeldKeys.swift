import ApplePay
import Foundation
import Synchronization

/// The mock as a processor that holds the processing key (it issued the CSR that Apple made
/// the certificate from): Orchard forwards the token encrypted, and the mock decrypts it with
/// a key Orchard is never given. Each processor mock reads the token from its own request shape
/// and asks ``heldKeyRefusal(_:amount:currency:)``. With keys held, a token that does not decrypt, or that pays
/// another amount or currency than the request asks for, is declined before anything is taken.
extension MockProcessors {
    /// The processing keys the mock holds; none (the default): it decrypts nothing and checks
    /// only the request's shape, as before.
    public var heldKeys: [ProcessingKey] {
        get { state.withLock { $0.heldKeys } }
        set { state.withLock { $0.heldKeys = newValue } }
    }

    /// Every token the mock decrypted with a held key, oldest first.
    public var decrypted: [DecryptedPayment] { state.withLock { $0.decrypted } }

    /// Why the mock declines `token` for `amount` in `currency` (ISO 4217 alphabetic), or nil
    /// when it holds no key or the token decrypts to exactly that payment.
    func heldKeyRefusal(_ token: PaymentData, amount: Int64, currency: String) -> (code: String, description: String)? {
        let keys = heldKeys
        guard !keys.isEmpty else { return nil }
        let payment: DecryptedPayment
        do {
            payment = try TokenDecryptor(keys: keys).decrypt(try token.decoded())
        } catch {
            return ("decryption_failed", "the payment token does not decrypt with the processor's key: \(error.message)")
        }
        guard payment.fields.transactionAmount == amount, payment.fields.currencyCode == Currency(code: currency)?.numericCode else {
            return (
                "amount_mismatch",
                "the token pays \(payment.fields.transactionAmount) in \(payment.fields.currencyCode), not \(amount) \(currency)"
            )
        }
        state.withLock { $0.decrypted.append(payment) }
        return nil
    }
}
