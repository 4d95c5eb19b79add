/// Apple's merchant-session gateway host names, and a strict check of the `validationURL`
/// Safari hands to `onvalidatemerchant`.
///
/// Hosts are compared exactly (no suffix or pattern match), so the merchant's client
/// certificate is never presented to a host an attacker names.
public enum GatewayHosts {
    /// Production gateway.
    public static let production = "apple-pay-gateway.apple.com"
    /// Sandbox gateway.
    public static let sandbox = "apple-pay-gateway-cert.apple.com"

    /// Every host name Apple uses for merchant sessions: global, China, sandbox and the pods.
    public static let all: Set<String> = {
        var hosts: Set<String> = [
            production, "cn-apple-pay-gateway.apple.com",
            sandbox, "cn-apple-pay-gateway-cert.apple.com",
        ]
        for site in ["nc", "pr"] {
            for pod in 1...5 {
                hosts.insert("apple-pay-gateway-\(site)-pod\(pod).apple.com")
                hosts.insert("apple-pay-gateway-\(site)-pod\(pod)-dr.apple.com")
            }
        }
        for site in ["sh", "tj"] {
            for pod in 1...3 {
                hosts.insert("cn-apple-pay-gateway-\(site)-pod\(pod).apple.com")
                hosts.insert("cn-apple-pay-gateway-\(site)-pod\(pod)-dr.apple.com")
            }
        }
        return hosts
    }()

    /// The paths Safari's validation URLs carry: the current one and the legacy one.
    public static let sessionPaths: Set<String> = ["/paymentservices/paymentSession", "/paymentservices/startSession"]

    /// The longest validation URL accepted; real ones are under 80 characters.
    public static let maximumURLLength = 256

    /// Whether `host` is exactly one of Apple's gateway names.
    public static func isAppleHost(_ host: String) -> Bool {
        all.contains(host)
    }

    /// Checks a `validationURL` and returns its host.
    ///
    /// Accepted: `https://` + an exact Apple host (lowercase, no trailing dot) + optional
    /// `:443` + one of ``sessionPaths`` (or no path); nothing else: no userinfo, query,
    /// fragment, percent-encoding, IP literal, other port or non-ASCII character.
    public static func validateValidationURL(_ url: String) throws(ApplePayError) -> String {
        func reject(_ why: String) -> ApplePayError {
            ApplePayError(.invalidValidationURL, "validationURL rejected: \(why)")
        }
        guard !url.isEmpty else { throw reject("it is empty") }
        guard url.utf8.count <= maximumURLLength else { throw reject("longer than \(maximumURLLength) bytes") }
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw reject("it holds spaces, control or non-ASCII characters")
        }
        let scheme = "https://"
        guard url.hasPrefix(scheme) else { throw reject("the scheme must be https") }
        let rest = url.dropFirst(scheme.count)
        guard !rest.contains(where: { "@%\\?#[]".contains($0) }) else {
            throw reject("userinfo, percent-encoding, queries, fragments and IP literals are not allowed")
        }
        let authority: Substring
        let path: Substring
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[slash...]
        } else {
            authority = rest
            path = ""
        }
        var host = authority
        if let colon = authority.firstIndex(of: ":") {
            guard authority[authority.index(after: colon)...] == "443" else { throw reject("the port must be 443") }
            host = authority[..<colon]
        }
        guard isAppleHost(String(host)) else { throw reject("\(host.prefix(64)) is not an Apple Pay gateway host") }
        guard path.isEmpty || path == "/" || sessionPaths.contains(String(path)) else {
            throw reject("the path must be one of \(sessionPaths.sorted().joined(separator: ", "))")
        }
        return String(host)
    }
}
