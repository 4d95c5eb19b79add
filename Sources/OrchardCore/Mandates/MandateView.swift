import ApplePay
import Foundation

/// A mandate as the payments API and webhooks show it: never the processor's stored-credential
/// reference, which only Orchard needs.
public struct MandateView: Sendable, Codable, Equatable {
    public var id: String
    public var state: MandateRecord.State
    /// `recurring`, `deferred` or `automaticReload`.
    public var type: PaymentAgreement.Kind
    public var description: String
    public var currency: String
    public var network: String?
    public var lastFour: String
    public var processor: String
    /// The payment that set it up.
    public var paymentId: String
    public var merchantTokenIdentifier: String?
    /// The card's details as Apple last told them (card art, country, expiry, last digits of the card's own number).
    public var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
    /// The MPAN's expiry and last four digits as Apple's last verified token event told them.
    public var merchantToken: MerchantTokenDetails?
    /// `shop`, `apple:<reason>` or `operator`.
    public var endedReason: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var endedAt: Date?

    public init(_ mandate: MandateRecord) {
        id = mandate.id
        state = mandate.state
        type = mandate.kind
        description = mandate.description
        currency = mandate.currency
        network = mandate.network
        lastFour = mandate.lastFour
        processor = mandate.processor
        paymentId = mandate.paymentId
        merchantTokenIdentifier = mandate.merchantTokenIdentifier
        merchantTokenMetadata = mandate.merchantTokenMetadata
        merchantToken = mandate.merchantToken
        endedReason = mandate.endedReason
        createdAt = mandate.createdAt
        updatedAt = mandate.updatedAt
        endedAt = mandate.endedAt
    }
}
