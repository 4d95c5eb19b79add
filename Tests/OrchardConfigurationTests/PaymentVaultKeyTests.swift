import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServices
import OrchardTesting
import Testing

/// The vault key's file and configured forms, read by the server's configuration
/// (`PaymentVault.load` lives with it); what the vault seals is OrchardCoreTests' PaymentVaultTests.
@Suite("Payment vault key: the key file and a configured key")
struct PaymentVaultKeyTests {
    @Test("the vault key: created once with mode 0600 and reused; a configured key must be 64 hex digits")
    func vaultKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("payments.key")
        _ = try PaymentVault.load(path: path)
        let first = try #require(FileManager.default.contents(atPath: path))
        _ = try PaymentVault.load(path: path)
        #expect(FileManager.default.contents(atPath: path) == first, "an existing key is never replaced")
        #expect(first.count == 32)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try directory.write("short.key", Array(first.prefix(31)))
        #expect(throws: ConfigurationError.self) { try PaymentVault.load(path: directory.path("short.key")) }
        _ = try PaymentVault.parseKey(Array((String(repeating: "ab", count: 32) + "\n").utf8), name: "env:KEY")
        #expect(throws: ConfigurationError.self) { try PaymentVault.parseKey(Array("not-hex".utf8), name: "env:KEY") }
    }

}
