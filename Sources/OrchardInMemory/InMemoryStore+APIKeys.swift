import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// API keys in memory, with the SQLite store's semantics.
extension InMemoryStore {
    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try state.withLock { state in
            let active = state.apiKeys.count { $0.merchantIdentifier == key.merchantIdentifier && $0.revokedAt == nil }
            try APIKeyRecord.checkCap(adding: key, active: Int(active))
            state.apiKeys.append(key)
        }
    }

    public func apiKey(id: String) async throws -> APIKeyRecord? {
        state.withLock { $0.apiKeys.first { $0.id == id } }
    }

    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        state.withLock { state in
            state.apiKeys.enumerated().filter { merchantIdentifier == nil || $0.element.merchantIdentifier == merchantIdentifier }
                .sorted {
                    ($0.element.merchantIdentifier, $0.element.createdAt, $0.offset) < (
                        $1.element.merchantIdentifier, $1.element.createdAt, $1.offset
                    )
                }
                .map(\.element)
        }
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard let index = state.apiKeys.firstIndex(where: { $0.id == id && $0.revokedAt == nil }) else { return false }
            state.apiKeys[index].revokedAt = date
            return true
        }
    }
}
