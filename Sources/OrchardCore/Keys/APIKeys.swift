import Foundation

/// Merchants' secret API keys, as their hashes: looked up by ID on every payments-API call.
public protocol APIKeys: Sendable {
    /// Adds a key; fails with ``CoreError/Code/limitReached`` when the merchant already holds
    /// ``APIKeyRecord/maximumActive`` active keys.
    func insertAPIKey(_ key: APIKeyRecord) async throws
    func apiKey(id: String) async throws -> APIKeyRecord?
    /// Every key (revoked ones too), of one merchant or of all (merchant by merchant), oldest first.
    func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord]
    /// False when there is no such active key.
    func revokeAPIKey(id: String, at date: Date) async throws -> Bool
}
