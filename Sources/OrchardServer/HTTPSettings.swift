import Foundation
import OrchardCore
import OrchardServices

/// What the routes and middleware read from the configuration: where to listen, what to
/// accept, the page's sources, the rates and the admin token. The composition root maps the
/// loaded configuration onto it; the server never sees the configuration file.
public struct HTTPSettings: Sendable {
    public var host: String
    public var port: Int
    /// A connection idle (or stuck in half a request) this long is closed.
    public var idleTimeout: Duration
    public var maxBodyBytes: Int
    /// The folder of static files that replaces the built-in checkout page; nil: the built-in page.
    public var publicDirectory: String?
    /// Peers whose client-address header (and, by default, `traceparent`) is believed.
    public var trustedProxies: [IPNetwork]
    public var clientAddressHeader: String
    /// Whose `traceparent` a request's span continues.
    public var acceptTraceparent: TraceparentTrust
    /// Where the page loads Apple's JS SDK from; nil: not loaded.
    public var applePaySDK: URL?
    /// How the page loads it: its SRI hash and how long it waits for it.
    public var checkoutPage: CheckoutPageSettings
    public var limits: RateLimitSettings
    /// The admin API's bearer token; nil turns the admin API off.
    public var adminToken: AdminToken?
    /// The token-event inbox's caps (for the notification route).
    public var tokenEvents: TokenEventPolicy
    /// One webhook attempt's deadline (for the admin API's test delivery).
    public var webhookTimeout: Duration
    /// Every certificate Orchard holds, for `/health`.
    public var certificates: [ConfiguredCertificate]
    /// Where merchants' pages load Google's `pay.js` from, when not from this server: their
    /// origins join the policy as the Apple SDK's does.
    public var googlePayScripts: [URL] = []

    /// Settings as given; the composition root maps a loaded configuration onto them, whose
    /// loader holds the defaults.
    public init(
        host: String, port: Int, idleTimeout: Duration, maxBodyBytes: Int, publicDirectory: String?, trustedProxies: [IPNetwork],
        clientAddressHeader: String, acceptTraceparent: TraceparentTrust, applePaySDK: URL?, checkoutPage: CheckoutPageSettings,
        limits: RateLimitSettings, adminToken: AdminToken?, tokenEvents: TokenEventPolicy,
        webhookTimeout: Duration, certificates: [ConfiguredCertificate]
    ) {
        self.host = host
        self.port = port
        self.idleTimeout = idleTimeout
        self.maxBodyBytes = maxBodyBytes
        self.publicDirectory = publicDirectory
        self.trustedProxies = trustedProxies
        self.clientAddressHeader = clientAddressHeader
        self.acceptTraceparent = acceptTraceparent
        self.applePaySDK = applePaySDK
        self.checkoutPage = checkoutPage
        self.limits = limits
        self.adminToken = adminToken
        self.tokenEvents = tokenEvents
        self.webhookTimeout = webhookTimeout
        self.certificates = certificates
    }

    /// The policy every response carries: nothing inline, nothing from elsewhere but Apple's
    /// SDK and Google's `pay.js` when they are configured. The page and the demo's simulated sheet are built for it.
    ///
    /// The SDK's origin (one exact host) joins the fetch directives its code window may use:
    /// its scripts, styles, fonts and images, its requests and its frames, as PSPs that ship it
    /// allow (`default-src` with that origin). Objects, media, workers and manifests stay closed.
    ///
    /// Google's `pay.js`, where a merchant takes Google Pay, is admitted the same way: its origin,
    /// and for Google's own script the host its button images come from (`www.gstatic.com`).
    public var contentSecurityPolicy: String {
        var origins = applePaySDK.flatMap(Self.origin).map { [$0] } ?? []
        for script in googlePayScripts {
            guard let origin = Self.origin(script), !origins.contains(origin) else { continue }
            origins.append(origin)
            if origin == "https://pay.google.com", !origins.contains("https://www.gstatic.com") {
                origins.append("https://www.gstatic.com")
            }
        }
        let sdk = origins.map { " \($0)" }.joined()
        return [
            "default-src 'none'", "script-src 'self'\(sdk)", "style-src 'self'\(sdk)", "img-src 'self' data:\(sdk)",
            "connect-src 'self'\(sdk)", "frame-src \(sdk.isEmpty ? "'none'" : String(sdk.dropFirst()))", "font-src 'self'\(sdk)",
            "manifest-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return url.port.map { "\(scheme)://\(bracketed):\($0)" } ?? "\(scheme)://\(bracketed)"
    }
}
