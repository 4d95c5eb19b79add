/// A TLS client identity (certificate and private key) presented for mutual TLS.
///
/// Paths are read by libcurl when a new connection is opened; in-memory bytes are copied
/// into each transfer. Passphrases are never included in errors or descriptions.
public struct TLSIdentity: Sendable, CustomStringConvertible {
    enum Storage: Sendable {
        case pemFiles(certificate: String, key: String)
        case pemBytes(certificate: [UInt8], key: [UInt8])
        case pkcs12File(String)
        case pkcs12Bytes([UInt8])
    }

    let storage: Storage
    let passphrase: String?

    /// A PEM certificate (optionally followed by its chain) and a PEM private key on disk.
    public static func pemFiles(certificate: String, key: String, keyPassphrase: String? = nil) -> TLSIdentity {
        TLSIdentity(storage: .pemFiles(certificate: certificate, key: key), passphrase: keyPassphrase)
    }

    /// A PEM certificate and PEM private key held in memory.
    public static func pem(certificate: [UInt8], key: [UInt8], keyPassphrase: String? = nil) -> TLSIdentity {
        TLSIdentity(storage: .pemBytes(certificate: certificate, key: key), passphrase: keyPassphrase)
    }

    /// A PKCS#12 bundle (`.p12`) on disk.
    public static func pkcs12File(_ path: String, passphrase: String? = nil) -> TLSIdentity {
        TLSIdentity(storage: .pkcs12File(path), passphrase: passphrase)
    }

    /// A PKCS#12 bundle held in memory.
    public static func pkcs12(_ bytes: [UInt8], passphrase: String? = nil) -> TLSIdentity {
        TLSIdentity(storage: .pkcs12Bytes(bytes), passphrase: passphrase)
    }

    public var description: String {
        switch storage {
        case .pemFiles(let certificate, _): "TLSIdentity(PEM file \(certificate))"
        case .pemBytes: "TLSIdentity(PEM in memory)"
        case .pkcs12File(let path): "TLSIdentity(PKCS#12 file \(path))"
        case .pkcs12Bytes: "TLSIdentity(PKCS#12 in memory)"
        }
    }
}

/// Which certificate authorities the client trusts for the server's certificate.
public enum TLSTrust: Sendable, Equatable {
    /// The operating system's store (libcurl's built-in default CA bundle).
    case system
    /// A PEM bundle of CA certificates on disk.
    case caFile(String)
    /// A PEM bundle of CA certificates in memory.
    case caPEM([UInt8])

    /// Only the CAs in `pem` when given; the system store when nil.
    public init(caPEM pem: [UInt8]?) {
        self = pem.map { .caPEM($0) } ?? .system
    }
}
