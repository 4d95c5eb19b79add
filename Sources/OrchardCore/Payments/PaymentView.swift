import ApplePay
import Foundation

/// A payment as the payments API and webhooks show it to the shop: no processor internals
/// beyond its reference, never card data beyond the network and last four digits.
public struct PaymentView: Sendable, Codable, Equatable {
    public var id: String
    /// The payment request (or catalogue order) it pays.
    public var paymentRequestId: String
    /// The shop's reference, for a payments-API request.
    public var reference: String?
    public var metadata: [String: String]?
    public var state: PaymentState
    /// Minor units.
    public var amount: Int64
    public var amountRefunded: Int64
    /// Once settled: what the capture took (the whole amount, or part of it; refunds are bounded by it).
    public var amountCaptured: Int64?
    public var currency: String
    public var network: String?
    public var lastFour: String
    public var processor: String
    public var processorReference: String?
    public var processorCode: String?
    public var processorMessage: String?
    /// The mandate this payment set up or charged.
    public var mandateId: String?
    /// Apple's merchant token identifier, when the token was a merchant token.
    public var merchantTokenIdentifier: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(payment: PaymentRecord, request: PaymentRequestRecord?, refunded: Int64) {
        id = payment.id
        paymentRequestId = payment.orderId
        reference = request?.reference
        metadata = request?.metadata
        state = payment.state
        amount = payment.amount
        amountRefunded = refunded
        amountCaptured = payment.captured
        currency = payment.currency
        network = payment.network
        lastFour = payment.lastFour
        processor = payment.processor
        processorReference = payment.processorReference
        processorCode = payment.processorCode
        processorMessage = payment.processorMessage
        mandateId = payment.mandateId
        merchantTokenIdentifier = payment.merchantTokenIdentifier
        createdAt = payment.createdAt
        updatedAt = payment.updatedAt
    }

    /// Sorted keys, ISO 8601 dates: the API's and the webhooks' JSON.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
