import Foundation
import OrchardCore
import OrchardServices

/// The configuration file's shape (JSON). docs/configuration.md documents every key (a test keeps the two in step).
public struct ConfigurationFile: Codable, Sendable {
    public struct Server: Codable, Sendable {
        public var host: String?
        public var port: Int?
        /// The folder of static files (the checkout page); relative to the config file.
        public var publicDirectory: String?
        /// Largest request body accepted by the API, in bytes.
        public var maxBodyBytes: Int?
        /// How long SIGTERM waits for in-flight requests before cutting them (default 25).
        public var drainTimeoutSeconds: Int?
        /// Seconds a client connection may sit idle (or send half a request) before it is closed (default 60).
        public var idleTimeoutSeconds: Int?
        /// Reverse proxies (addresses or CIDR blocks) whose `clientAddressHeader` names the client
        /// (default: loopback, a proxy on the same machine; `[]` trusts none).
        public var trustedProxies: [String]?
        /// `X-Forwarded-For` (default) or `X-Real-IP`: the header trusted proxies set.
        public var clientAddressHeader: String?
        /// Whose W3C `traceparent` continues a trace: `trustedProxies` (default), `anyone` or `nobody`.
        public var acceptTraceparent: String?

        public init(host: String? = nil, port: Int? = nil, publicDirectory: String? = nil, maxBodyBytes: Int? = nil) {
            self.host = host
            self.port = port
            self.publicDirectory = publicDirectory
            self.maxBodyBytes = maxBodyBytes
        }
    }

    public struct AppleGateway: Codable, Sendable {
        public var baseURL: String?
        /// A PEM CA bundle to trust for the gateway instead of the system store.
        public var caFile: String?
        /// Must be true for a `baseURL` whose host is not Apple's (a mock gateway).
        public var allowNonAppleHost: Bool?
        public var connectTimeoutMilliseconds: Int?
        public var timeoutMilliseconds: Int?

        public init(
            baseURL: String? = nil, caFile: String? = nil, allowNonAppleHost: Bool? = nil,
            connectTimeoutMilliseconds: Int? = nil, timeoutMilliseconds: Int? = nil
        ) {
            self.baseURL = baseURL
            self.caFile = caFile
            self.allowNonAppleHost = allowNonAppleHost
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    public struct Merchant: Codable, Sendable {
        public var merchantIdentifier: String
        public var displayName: String
        public var domains: [String]
        /// The identity as one PKCS#12 file (what Keychain exports), instead of the pair below.
        public var identity: PKCS12File?
        /// The identity certificate: PEM (leaf first) or DER; a file or `env:NAME`.
        public var identityCertificate: String?
        /// Its private key: PEM or DER, SEC1, PKCS#1 or PKCS#8, encrypted or not; a file or `env:NAME`.
        public var identityKey: String?
        /// The key's password when it is encrypted: `env:NAME` or a file, never the password itself.
        public var identityKeyPassword: String?
        public var domainAssociationFile: String?
        /// The catalogue (JSON) this merchant sells from; orders are off without one.
        public var catalogue: String?
        /// Payment processing keys; the token's publicKeyHash picks one (rotation).
        public var processingKeys: [ProcessingKeyFile]?
        /// Where authorized payments go (record only when absent).
        public var processor: ProcessorSection?
        /// Where the merchant's signed events go (none when absent).
        public var webhook: MerchantWebhook?
        /// The shop's quote URL and its signing secret: asked to price each sheet change of a
        /// payments-API request (absent: Orchard prices from the request's shipping methods).
        public var quote: MerchantWebhook?
        /// The merchant's orders in the shopper's Wallet (WalletOrdersConfiguration.swift); off when absent.
        public var walletOrders: WalletOrders?
        /// What Wallet shows of each merchant token's payments (MerchantTokenUsageConfiguration.swift); off when absent.
        public var merchantTokenUsage: MerchantTokenUsage?
        /// Google Pay beside Apple Pay (GooglePayConfiguration.swift); off when absent.
        public var googlePay: GooglePay?

        public init(
            merchantIdentifier: String, displayName: String, domains: [String], identityCertificate: String?,
            identityKey: String?, domainAssociationFile: String? = nil, catalogue: String? = nil,
            processingKeys: [ProcessingKeyFile]? = nil, processor: ProcessorSection? = nil
        ) {
            self.processor = processor
            self.catalogue = catalogue
            self.processingKeys = processingKeys
            self.merchantIdentifier = merchantIdentifier
            self.displayName = displayName
            self.domains = domains
            self.identityCertificate = identityCertificate
            self.identityKey = identityKey
            self.domainAssociationFile = domainAssociationFile
        }
    }

    /// A processing key: its private key (any format the identity key takes) and its processing
    /// certificate, or both in one PKCS#12 file; without a certificate, the merchant identifier
    /// is used for the KDF.
    public struct ProcessingKeyFile: Codable, Sendable {
        public var privateKey: String?
        public var certificate: String?
        /// The private key's password: `env:NAME` or a file.
        public var password: String?
        /// Key and processing certificate in one PKCS#12 file, opened with `password`.
        public var pkcs12: String?

        public init(privateKey: String?, certificate: String? = nil, password: String? = nil, pkcs12: String? = nil) {
            self.privateKey = privateKey
            self.certificate = certificate
            self.password = password
            self.pkcs12 = pkcs12
        }
    }

    /// A certificate and its key in one PKCS#12 (.p12) file, modern or legacy.
    public typealias PKCS12File = PKCS12Section

    /// The checkout page's settings.
    public struct Checkout: Codable, Sendable {
        /// `"session"` (ApplePaySession, the default) or `"paymentrequest"` (the Payment Request API).
        public var applePayMode: String?
        /// Apple's Apple Pay JS SDK, which adds `<apple-pay-button>`. Absent: Apple's CDN;
        /// `"none"`: not loaded (the page draws its own button). Its origin joins the CSP.
        public var applePaySDK: String?
        /// The SDK's Subresource Integrity hash (`sha384-…`), for a pinned version only.
        public var applePaySDKIntegrity: String?
        /// How long a browser without Apple Pay of its own waits for the SDK before the page says unavailable.
        public var applePaySDKTimeoutMilliseconds: Int?

        public init(applePaySDK: String? = nil) {
            self.applePaySDK = applePaySDK
        }
    }

    /// A payment platform integrator's own identity, for the Web Merchant Registration API
    /// and for the sessions of the merchants it registers.
    public struct PlatformIntegrator: Codable, Sendable {
        /// The platform's merchant ID: its certificates carry it, and registered merchants' tokens are encrypted to it.
        public var merchantIdentifier: String
        public var identity: PKCS12File?
        public var identityCertificate: String?
        public var identityKey: String?
        public var identityKeyPassword: String?
        /// Apple's association file for the platform, served on every registered domain.
        public var domainAssociationFile: String?
        /// Decrypt the tokens of registered merchants (they encrypt to the platform).
        public var processingKeys: [ProcessingKeyFile]?
        /// Where the platform's own events go: the guard's reports about registered merchants.
        public var webhook: MerchantWebhook?
        /// The key (64 hex digits, `env:NAME` or a file) sealing registered merchants' processor and
        /// webhook settings at rest; the admin API sets none without it.
        public var settingsKey: String?

        public init(
            merchantIdentifier: String, identityCertificate: String?, identityKey: String?, domainAssociationFile: String? = nil,
            processingKeys: [ProcessingKeyFile]? = nil
        ) {
            self.merchantIdentifier = merchantIdentifier
            self.identityCertificate = identityCertificate
            self.identityKey = identityKey
            self.domainAssociationFile = domainAssociationFile
            self.processingKeys = processingKeys
        }
    }

    /// The admin API (`/admin/`), off unless a token is set.
    public struct Admin: Codable, Sendable {
        /// `env:NAME` or a file holding the bearer token (never the token itself): at least 32 characters.
        public var token: String?

        public init(token: String? = nil) {
            self.token = token
        }
    }

    public var server: Server?
    public var appleGateway: AppleGateway?
    public var platformIntegrator: PlatformIntegrator?
    public var admin: Admin?
    public var payments: Payments?
    public var checkout: Checkout?
    public var webhooks: Webhooks?
    public var metrics: Metrics?
    public var log: Log?
    /// Span export over OTLP (builds with the OTel trait only; ObservabilityConfiguration.swift).
    public var tracing: TraceExport?
    public var limits: Limits?
    public var outbound: Outbound?
    public var orders: Orders?
    public var retention: Retention?
    /// How Apple's token notifications are fetched (TokenEventsConfiguration.swift).
    public var tokenEvents: TokenEvents?
    /// The guard of domains, certificates and registrations (GuardConfiguration.swift).
    public var `guard`: Guard?
    /// Where the SQLite database lives; relative to the config file. Default `state`.
    public var stateDirectory: String?
    /// PostgreSQL instead of SQLite (StoreConfiguration.swift).
    public var store: Store?
    public var merchants: [Merchant]

    public init(
        server: Server? = nil, appleGateway: AppleGateway? = nil, payments: Payments? = nil, checkout: Checkout? = nil,
        stateDirectory: String? = nil, platformIntegrator: PlatformIntegrator? = nil, admin: Admin? = nil, merchants: [Merchant]
    ) {
        self.checkout = checkout
        self.platformIntegrator = platformIntegrator
        self.admin = admin
        self.server = server
        self.appleGateway = appleGateway
        self.payments = payments
        self.stateDirectory = stateDirectory
        self.merchants = merchants
    }
}
