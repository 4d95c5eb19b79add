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
}
