import Foundation

/// Who chose where a call goes: the operator (the configuration file), or a tenant (a merchant a
/// platform integrator registered, whose webhook, quote URL and processor come through the admin
/// API). A tenant's destinations reach public unicast addresses only.
public enum DestinationChooser: Sendable, Equatable {
    /// The configuration file: any address, as written (a sidecar on loopback, a private processor).
    case configuration
    /// The admin API, for a registered merchant: ``TenantDestinations`` decides.
    case tenant
}

/// Where calls a tenant chose may go: public unicast addresses (``SpecialAddresses``) and the
/// private networks the configuration file lists (`outbound.registeredMerchants.privateNetworks`,
/// for tests and private deployments). The admin API checks a URL when it is set; the HTTP client
/// checks every address a name resolves to when it connects, which is what stops DNS rebinding.
public struct TenantDestinations: Sendable, Equatable {
    /// Networks besides public unicast that tenants' destinations may reach; empty in production.
    public var privateNetworks: [IPNetwork]

    public init(privateNetworks: [IPNetwork] = []) {
        self.privateNetworks = privateNetworks
    }

    /// Why a connection to `address` is refused (`10.0.0.5, not a public address (private-use,
    /// 10.0.0.0/8)`), or nil when it may be made.
    public func refusal(for address: IPAddress) -> String? {
        guard let why = SpecialAddresses.refusal(for: address) else { return nil }
        if privateNetworks.contains(where: { $0.contains(address) }) { return nil }
        return "\(address.compact), not a public address (\(why))"
    }

    /// Domains that name this machine or a private network wherever they are resolved (RFC 6761,
    /// RFC 6762, RFC 8375, ICANN's `.internal`): no public shop lives there.
    static let localSuffixes = ["localhost", "local", "internal", "home.arpa"]

    /// The admin-time check of a tenant's URL, after ``WebhookEndpoint/check(_:)``: its host must
    /// be a public IP address (or one of ``privateNetworks``) or a domain name that is not
    /// obviously local. Nil when it passes. A name still goes through the connect-time check.
    public func refusal(forURL url: String) -> String? {
        // The host as the URL writes it (an IDN stays in its xn-- form, as libcurl sends it).
        guard let components = URLComponents(string: url), var host = (components.encodedHost ?? components.host)?.lowercased(),
            !host.isEmpty
        else {
            return "must be an absolute URL with a host"
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let address = IPAddress(host) {
            return refusal(for: address).map { "points at \($0)" }
        }
        if host.hasSuffix(".") { host.removeLast() }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        let letters = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
        guard host.utf8.count <= 253,
            labels.allSatisfy({ (1...63).contains($0.count) && $0.allSatisfy(letters.contains) && $0.first != "-" && $0.last != "-" })
        else {
            return "has a host (\(host)) that is neither an IP address nor a domain name (write an internationalized name in its xn-- form)"
        }
        guard let last = labels.last, !last.allSatisfy(\.isNumber), !last.hasPrefix("0x") else {
            return "has a host (\(host)) written as a number: write an IPv4 address as four decimal parts (a.b.c.d)"
        }
        if let suffix = Self.localSuffixes.first(where: { host == $0 || host.hasSuffix("." + $0) }) {
            let place = host == suffix ? "is \(host)" : "has a host (\(host)) under .\(suffix)"
            return "\(place), which names this machine or a private network, not a public address"
        }
        guard labels.count > 1 else {
            return "has a single-label host (\(host)), which the resolver completes with local search domains: use a fully qualified name"
        }
        return nil
    }
}
