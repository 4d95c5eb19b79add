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
    /// Claims registered merchant `partnerIdentifier`'s registration for calls to Apple, as
    /// `holder`, until `until`: a compare-and-set that takes it when nobody holds it, when
    /// `holder` does already (a renewal), or when another's claim expired by `now` (its instance
    /// crashed or overran). The guard's repair and an unregistration both claim it, so Apple never
    /// hears a repair's `register` after an unregistration's delete.
    func claimRegistration(partnerIdentifier: String, holder: String, until: Date, at now: Date) async throws -> RegistrationClaim
    /// Gives up `holder`'s claim on `partnerIdentifier`'s registration; nothing when another holds it.
    func releaseRegistration(partnerIdentifier: String, holder: String) async throws
}

/// What claiming a registration found.
public enum RegistrationClaim: Sendable, Equatable {
    /// The caller holds it now.
    case claimed
    /// Another holder's unexpired claim holds it.
    case held
    /// No such registration: nothing to claim.
    case absent
}
