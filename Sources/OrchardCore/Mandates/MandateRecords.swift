import ApplePay
import Foundation

/// Mandates as stored. A mandate is created only in the transaction that records its first
/// payment as authorized (``PaymentTransition/mandate``, a unit of work of
/// ``OrderPayments/transition(_:)``), so no authorized agreement goes without one; every later
/// change is a compare-and-set on `active`, with its webhook event in the same transaction.
public protocol MandateRecords: Sendable {
    func mandate(id: String) async throws -> MandateRecord?
    /// Newest first; of every state when `state` is nil.
    func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord]
    /// The merchant's mandates on one Apple merchant token (normally one), newest first.
    func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord]
    /// Ends an active mandate with `mandate.ended`; nil, changing nothing, when it was not active.
    func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord?
    /// Replaces an active mandate's card details and MPAN details (each as given, nil included)
    /// with `mandate.updated`; nil, changing nothing, when it was not active.
    func updateMandate(
        id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, merchantToken: MerchantTokenDetails?, at date: Date
    ) async throws -> MandateRecord?
}
