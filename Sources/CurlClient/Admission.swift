import Synchronization

/// Counts transfers in flight (queued for the engine thread or running) in total, per origin
/// and per caller-named group, and refuses one more past a limit instead of queueing it: a
/// slow upstream then costs its callers a fast ``CurlError/Kind/busy``, never a growing queue
/// or a task waiting for a slot.
final class Admission: Sendable {
    struct Limits: Sendable {
        var total: Int
        var perOrigin: Int
        var perGroup: Int
    }

    /// What a transfer holds while in flight; handed back to ``leave(_:)`` exactly once.
    struct Ticket: Sendable {
        fileprivate let keys: [String]
    }

    private struct State {
        var total = 0
        var counts: [String: Int] = [:]
    }

    let limits: Limits
    private let state = Mutex(State())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Takes a slot for `origin` (and `group`, when given) or throws ``CurlError/Kind/busy`` taking nothing.
    func enter(origin: String, group: String?) throws(CurlError) -> Ticket {
        let keys = ["origin " + origin] + (group.map { ["group " + $0] } ?? [])
        let refusal: String? = state.withLock { state in
            if state.total >= limits.total {
                return "\(limits.total) requests are already in flight"
            }
            if state.counts[keys[0], default: 0] >= limits.perOrigin {
                return "\(limits.perOrigin) requests to \(origin) are already in flight"
            }
            if let group, state.counts[keys[1], default: 0] >= limits.perGroup {
                return "\(limits.perGroup) requests for \(group) are already in flight"
            }
            state.total += 1
            for key in keys { state.counts[key, default: 0] += 1 }
            return nil
        }
        if let refusal {
            throw CurlError(kind: .busy, message: "\(refusal); not sent")
        }
        return Ticket(keys: keys)
    }

    func leave(_ ticket: Ticket) {
        state.withLock { state in
            state.total -= 1
            for key in ticket.keys {
                let left = state.counts[key, default: 1] - 1
                // Idle origins and groups leave the table, so it stays as small as what is in flight.
                state.counts[key] = left > 0 ? left : nil
            }
        }
    }

    /// Transfers in flight now.
    var inFlight: Int { state.withLock { $0.total } }

    /// `scheme://host:port` of a URL, lowercased, without credentials: what the per-origin limit counts.
    static func origin(of url: String) -> String {
        var rest = Substring(url)
        var scheme = "https"
        if let range = rest.firstRange(of: "://") {
            scheme = rest[..<range.lowerBound].lowercased()
            rest = rest[range.upperBound...]
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority
        let lowered = hostPort.lowercased()
        let hasPort = lowered.last.map(\.isNumber) == true && lowered.contains(":") && !lowered.hasSuffix("]")
        if hasPort { return "\(scheme)://\(lowered)" }
        return "\(scheme)://\(lowered):\(scheme == "http" ? 80 : 443)"
    }
}
