import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// Registered merchants' sealed settings in memory.
extension InMemoryStore {
    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        state.withLock { $0.settings }
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        state.withLock { $0.settings[partnerIdentifier] = sealed }
    }

    public func claimRegistration(partnerIdentifier: String, holder: String, until: Date, at now: Date) async throws -> RegistrationClaim {
        state.withLock { state in
            guard state.merchants[partnerIdentifier] != nil else { return .absent }
            if let claim = state.claims[partnerIdentifier], claim.holder != holder, claim.until > now { return .held }
            state.claims[partnerIdentifier] = (holder, until)
            return .claimed
        }
    }

    public func releaseRegistration(partnerIdentifier: String, holder: String) async throws {
        state.withLock { state in
            if state.claims[partnerIdentifier]?.holder == holder { state.claims[partnerIdentifier] = nil }
        }
    }
}
