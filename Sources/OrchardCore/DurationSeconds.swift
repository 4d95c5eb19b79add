import Foundation

extension Duration {
    /// This duration in seconds, for `Date` arithmetic (leases, deadlines, backoff).
    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
