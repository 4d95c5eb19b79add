import Crypto
import Foundation

/// Orchard's mark on the association file it serves, so the guard can tell Orchard's own answer
/// from anyone else's: HMAC-SHA256 over the domain and the bytes, under a key only Orchard holds.
///
/// It was a `Repr-Digest` (RFC 9530, plain SHA-256) once, but anyone can compute a digest: a
/// tenant's domain could answer wrong bytes under their digest and make the guard log an Orchard
/// defect. A keyed value under `Repr-Digest` would misstate the representation's digest to any
/// cache that checks it, hence a header of Orchard's own. The domain is signed too, so Orchard's
/// answer for one domain, replayed by another domain, does not pass for that one's.
public struct DomainFileSigner: Sendable {
    /// The response header that carries the signature.
    public static let headerName = "Orchard-File-Signature"

    let key: SymmetricKey

    /// A signer under `key`; instances that must recognise each other's answers share it.
    public init(key: SymmetricKey) {
        self.key = key
    }

    /// A signer with a random key that lives as long as the process (tests, and servers whose
    /// vault key is random too).
    public static func random() -> DomainFileSigner {
        DomainFileSigner(key: SymmetricKey(size: .bits256))
    }

    /// The header's value for `bytes` served at `domain`: `hmac-sha256=:<base64>:`, in the
    /// structured-field form RFC 9530's fields use.
    public func signature(of bytes: [UInt8], domain: String) -> String {
        "hmac-sha256=:" + Data(mac(bytes, domain: domain)).base64EncodedString() + ":"
    }

    /// Whether `header` is this signer's signature of `bytes` at `domain`, compared in constant time.
    public func signs(_ header: String?, bytes: [UInt8], domain: String) -> Bool {
        guard let header, header.utf8.count <= 128, header.hasPrefix("hmac-sha256=:"), header.hasSuffix(":"),
            let given = Data(base64Encoded: String(header.dropFirst(13).dropLast()))
        else { return false }
        return ConstantTime.equal(Array(given), mac(bytes, domain: domain))
    }

    private func mac(_ bytes: [UInt8], domain: String) -> [UInt8] {
        // The domain's length first, so no split of domain and bytes signs as another.
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Array("orchard association file v1\n\(domain.lowercased().utf8.count):\(domain.lowercased())\n".utf8))
        hmac.update(data: bytes)
        return Array(hmac.finalize())
    }
}

extension PaymentVault {
    /// The association file's signer, under a key derived from the vault key: every instance
    /// sharing the vault key (as instances sharing a database must) recognises the others'
    /// answers, and nobody without it can make one.
    public var domainFileSigner: DomainFileSigner {
        let derived = HMAC<SHA256>.authenticationCode(for: Array("orchard association file signer v1".utf8), using: key)
        return DomainFileSigner(key: SymmetricKey(data: Data(derived)))
    }
}
