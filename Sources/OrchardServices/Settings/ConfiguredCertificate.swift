import Foundation
import X509

/// A certificate Orchard holds: whose it is and what it does.
public struct ConfiguredCertificate: Sendable {
    /// A merchant ID, or "platform <ID>".
    public var owner: String
    /// "identity" or "processing".
    public var kind: String
    /// Where it was loaded from, when known.
    public var source: String?
    public var certificate: Certificate

    public init(owner: String, kind: String, source: String?, certificate: Certificate) {
        self.owner = owner
        self.kind = kind
        self.source = source
        self.certificate = certificate
    }

    /// Whole days until it expires, counted from `now` (negative once expired).
    public func daysLeft(at now: Date) -> Int {
        Int((certificate.notValidAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }
}
