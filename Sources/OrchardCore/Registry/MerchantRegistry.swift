import ApplePay
import Foundation

/// The merchants a platform integrator registered, with their domains and their sealed
/// settings. Retiring one is this repository's unit of work although it also revokes the
/// merchant's API keys and skips its undelivered webhook events: one transaction, so nothing of
/// the tenant survives it (see ``deleteRegistration(partnerIdentifier:at:)``).
public protocol MerchantRegistry: Sendable {
    /// Merchants registered through the Web Merchant Registration API, with their domains.
    func registeredMerchants() async throws -> [RegisteredMerchant]
    /// Creates or replaces a registered merchant and its domain set; a domain another
    /// merchant holds fails with ``CoreError/Code/domainTaken`` and changes nothing.
    func saveRegistration(_ merchant: RegisteredMerchant) async throws
    /// Retires a registered merchant, in one transaction: forgets it, its domains and its sealed
    /// settings, revokes its API keys at `date`, and marks its undelivered webhook events
    /// `skipped` (``RetiredTenant/skippedEventError``), so nothing of this tenant reaches a later
    /// one registered under the same identifier. Also run before a new registration under an
    /// identifier that has none, to clear what an earlier tenant left. Returns the
    /// ``RetiredTenant/recordKey(for:)`` the tenant's records moved to.
    @discardableResult
    func deleteRegistration(partnerIdentifier: String, at date: Date) async throws -> String
    /// Registered merchants' settings (processor, webhook), sealed by the server: opaque here.
    func sealedMerchantSettings() async throws -> [String: [UInt8]]
    /// Creates or replaces one registered merchant's sealed settings.
    func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws
}
