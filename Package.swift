// swift-tools-version:6.1
import PackageDescription

// Every Swift target's: the loop at the end adds them.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "orchard",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "orchard", targets: ["orchard"]),
        .executable(name: "orchard-sandbox", targets: ["orchard-sandbox"]),
        .library(name: "ApplePay", targets: ["ApplePay"]),
        .library(name: "CurlClient", targets: ["CurlClient"]),
        .library(name: "OrchardServer", targets: ["OrchardServer"]),
        .library(name: "OrchardTesting", targets: ["OrchardTesting"]),
    ],
    // Off by default: `swift build --traits OTel` adds swift-otel's OTLP/HTTP span exporter
    // (docs/monitoring.md#exporting-spans-with-swift-otel); the default build compiles none of it.
    traits: [
        .trait(
            name: "OTel",
            description: "Export spans over OTLP/HTTP with swift-otel (the configuration's tracing.otlp section)")
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Only with the OTel trait, and only its OTLP/HTTP exporter (no gRPC).
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // libcurl, linked through pkg-config.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // SQLite, the embedded default store.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The system OpenSSL: PKCS#12 reading (legacy RC2/3DES files included) and RSA_v1's OAEP decryption.
        .target(name: "COpenSSLShims", linkerSettings: [.linkedLibrary("crypto")]),
        // Typed, prefixed wrappers for libcurl's variadic calls.
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        // Async HTTPS client on one libcurl multi handle driven by a dedicated thread.
        .target(
            name: "CurlClient",
            dependencies: ["CCurlShims", .product(name: "Tracing", package: "swift-distributed-tracing")]
        ),
        // W3C trace context: the tracer Orchard starts with (IDs only, no exporter) and the log metadata it gives.
        .target(
            name: "OrchardTracing",
            dependencies: [
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The Apple Pay core: pure, no I/O.
        .target(
            name: "ApplePay",
            dependencies: [
                "COpenSSLShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Wallet orders, pure: order.json in Apple's schema, the package (manifest, CMS signature, zip)
        // and the Order Type ID identity that signs it.
        .target(
            name: "WalletOrders",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Google Pay, pure: ECv2 payment method tokens, their signatures checked against Google's
        // root signing keys, and (direct mode) their decryption.
        .target(
            name: "GooglePay",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Certificate tooling for `orchard certs`: CSRs, Apple .cer import, inspection of PEM, DER and PKCS#12.
        .target(
            name: "CertificateTools",
            dependencies: [
                "ApplePay",
                "COpenSSLShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Contracts and the payments engine: records, the store, session, registration and
        // processor protocols, domain errors, the payment state machine. No HTTP server, no curl, no SQLite.
        .target(
            name: "OrchardCore",
            dependencies: [
                "ApplePay",
                "GooglePay",
                "WalletOrders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // Adapter: Apple's gateway (merchant sessions, Web Merchant Registration) over the libcurl client.
        .target(
            name: "AppleGateway",
            dependencies: [
                "WalletOrders",
                "ApplePay",
                "CurlClient",
                "OrchardCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Adapter: the SQLite store, the embedded default.
        .target(
            name: "OrchardSQLite",
            dependencies: [
                "WalletOrders",
                "ApplePay",
                "CSQLite",
                "OrchardCore",
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Adapter: the PostgreSQL store, for several instances sharing one database.
        .target(
            name: "OrchardPostgres",
            dependencies: [
                "WalletOrders",
                "ApplePay",
                "OrchardCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What runs beside the HTTP routes and what they share: the merchant directory and registry
        // sync, the background loops (reconciliation, webhooks, token events, guard, purges, gauges),
        // the settings values the routes read. No HTTP server, no configuration loader.
        .target(
            name: "OrchardServices",
            dependencies: [
                "ApplePay",
                "OrchardCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // The configuration file: its format, loading and checks, the doctor, and the engine and
        // directory made from it. Used by the composition root, never by the HTTP server.
        .target(
            name: "OrchardConfiguration",
            dependencies: [
                "ApplePay",
                "CertificateTools",
                "GooglePay",
                "OrchardCore",
                "OrchardServices",
                "WalletOrders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Writes Public/ (the checkout page) and OrchardServer/OpenAPI/ (the API description) as Swift tables, so
        // they ship inside the binary.
        .executableTarget(name: "EmbedFiles"),
        .plugin(name: "EmbedPublic", capability: .buildTool(), dependencies: ["EmbedFiles"], path: "Sources/EmbedPublicPlugin"),
        // The Hummingbird application: routes, middleware, the request context and the response
        // mapping; handed its settings, services and adapters.
        .target(
            name: "OrchardServer",
            dependencies: [
                "ApplePay",
                "GooglePay",
                "OrchardCore",
                "OrchardServices",
                "OrchardTracing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            // The OpenAPI document is compiled in by the plugin, not a source or a resource.
            exclude: ["OpenAPI"],
            plugins: ["EmbedPublic"]
        ),
        // Adapter: payment processors (Worldpay Access, Worldline Direct), each with its settings,
        // configuration driver and client, over the libcurl client.
        .target(
            name: "ProcessorClients",
            dependencies: [
                "ApplePay",
                "CurlClient",
                "GooglePay",
                "OrchardCore",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Adapter: calls to the shop (signed webhooks) over the libcurl client.
        .target(
            name: "ShopCallbacks",
            dependencies: ["CurlClient", "OrchardCore"]
        ),
        // Adapter: the in-memory store, for tests and the engine's bench (no file, no socket).
        .target(
            name: "OrchardInMemory",
            dependencies: [
                "WalletOrders", "ApplePay", "OrchardCore",
            ]
        ),
        // Test PKI and the mock Apple gateway (mutual TLS on loopback).
        .target(
            name: "OrchardTesting",
            dependencies: [
                "ApplePay",
                "GooglePay",
                "OrchardCore",
                "OrchardInMemory",
                "WalletOrders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            // The demo's simulated Apple Pay sheet (JS + CSS), and the demo shop's catalogue (a copy of
            // Config/catalogue.json, a test keeps them equal) for a demo started outside the repository.
            resources: [.copy("SimulatedSheet"), .copy("demo-catalogue.json")]
        ),
        // The shared test merchant's configuration files, for the configuration's and the server's
        // tests. In no product.
        .target(
            name: "OrchardConfigurationTesting",
            dependencies: ["OrchardConfiguration", "OrchardTesting", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // What a router test needs: `ApplicationDependencies.testing(…)` (the composition root on the
        // in-memory store, a configuration made in memory, no file) and the in-process transport.
        // No SQLite, no PostgreSQL, no process. In no product.
        .target(
            name: "OrchardServerTesting",
            dependencies: [
                "ApplePay", "CurlClient", "OrchardComposition", "OrchardConfiguration", "OrchardConfigurationTesting", "OrchardCore",
                "OrchardInMemory", "OrchardServer", "OrchardServices", "OrchardTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // The integration tests' fixtures (the harness on SQLite and the mock gateway over mutual TLS,
        // in process or live, the mock-processor fixture, a server process, nginx in front), shared by
        // the integration and the command line's tests. In no product: nothing that ships links it.
        .target(
            name: "OrchardIntegrationTesting",
            dependencies: [
                "AppleGateway", "ApplePay", "CurlClient", "OrchardConfiguration", "OrchardConfigurationTesting", "OrchardCore",
                "OrchardInMemory", "OrchardRuntime", "OrchardServerTesting",
                "OrchardServer", "OrchardServices", "OrchardSQLite", "OrchardTesting", "ProcessorClients",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // The composition root: every service made once from a loaded configuration and the adapters
        // it is handed (the runtime's, or a test's in-memory ones). No adapter of its own.
        .target(
            name: "OrchardComposition",
            dependencies: [
                "ApplePay", "OrchardConfiguration", "OrchardCore", "OrchardServer", "OrchardServices",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What both executables run: the adapters the composition root is handed, and the command-line basics.
        .target(
            name: "OrchardRuntime",
            dependencies: [
                "OrchardComposition",
                "AppleGateway",
                "ApplePay",
                "CurlClient",
                "OrchardConfiguration",
                "OrchardCore",
                "OrchardPostgres",
                "OrchardServer",
                "OrchardServices",
                "OrchardSQLite",
                "OrchardTracing",
                "ProcessorClients",
                "ShopCallbacks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTel"])),
            ]
        ),
        // The production tool: serve, token decrypt, certs, domains, payments. No test doubles.
        .executableTarget(
            name: "orchard",
            dependencies: [
                "OrchardConfiguration", "OrchardServices",
                "AppleGateway",
                "ApplePay",
                "CertificateTools",
                "CurlClient",
                "OrchardCore",
                "OrchardRuntime",
                "OrchardServer",
                "OrchardSQLite",
                "ProcessorClients",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Development tools: the demo, the mock Apple gateway and test tokens (OrchardTesting).
        .executableTarget(
            name: "orchard-sandbox",
            dependencies: [
                "OrchardConfiguration", "OrchardServices",
                "ApplePay",
                "OrchardCore",
                "OrchardRuntime",
                "OrchardServer",
                "OrchardTesting",
                "ProcessorClients",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "CurlClientTests",
            dependencies: ["CurlClient", "OrchardTesting"]
        ),
        .testTarget(
            name: "ApplePayTests",
            dependencies: [
                "ApplePay",
                "OrchardTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "GooglePayTests",
            dependencies: ["GooglePay", "OrchardTesting", .product(name: "Crypto", package: "swift-crypto")],
            // Read by path: Tink's ECv2 test tokens, with their source and licence, and the pin
            // scripts/bootstrap installs the second implementation from.
            exclude: ["Fixtures", "requirements.txt"]
        ),
        .testTarget(
            name: "WalletOrdersTests",
            dependencies: [
                "WalletOrders",
                "OrchardTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            // Read by path: the order schema for Python's jsonschema, and the pin scripts/bootstrap installs it from.
            exclude: ["Fixtures", "requirements.txt"]
        ),
        .testTarget(
            name: "CertificateToolsTests",
            dependencies: [
                "CertificateTools",
                "OrchardTesting",
                "ApplePay",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // Core's policies and services, in memory (OrchardTesting's store and test identity): no sockets, no files.
        .testTarget(
            name: "OrchardCoreTests",
            dependencies: [
                "OrchardInMemory",
                "OrchardCore", "ApplePay", "GooglePay", "OrchardTesting", "WalletOrders", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The repositories' contract, run on SQLite, in memory and on PostgreSQL alike.
        .testTarget(
            name: "StoreContractTests",
            dependencies: [
                "OrchardInMemory",
                "ApplePay", "OrchardCore", "OrchardPostgres", "OrchardSQLite", "OrchardTesting", "WalletOrders",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // What only the SQLite adapter has: its writer's group commit; the payments engine across a restart on its file.
        .testTarget(
            name: "OrchardSQLiteTests",
            dependencies: [
                "ApplePay", "OrchardCore", "OrchardSQLite", "OrchardTesting", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What only the PostgreSQL adapter has: migrations, connection failures, TLS.
        .testTarget(
            name: "OrchardPostgresTests",
            dependencies: [
                "ApplePay", "OrchardCore", "OrchardPostgres", "OrchardTesting", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The Apple gateway adapter against the mock gateway over mutual TLS.
        .testTarget(
            name: "AppleGatewayTests",
            dependencies: [
                "AppleGateway", "ApplePay", "CurlClient", "OrchardCore", "OrchardTesting", "OrchardInMemory", "WalletOrders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OrchardRuntimeTests",
            dependencies: [
                "OrchardConfiguration", "OrchardRuntime", "OrchardServer", "CurlClient", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OrchardTestingTests",
            dependencies: [
                "OrchardTesting", "CurlClient", "ApplePay",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OrchardTracingTests",
            dependencies: ["OrchardTracing", .product(name: "Tracing", package: "swift-distributed-tracing")]
        ),
        // The processor clients against the mock processors on loopback HTTPS, without the server.
        .testTarget(
            name: "ProcessorClientsTests",
            dependencies: [
                "ApplePay", "CurlClient", "GooglePay", "OrchardCore", "OrchardTesting", "ProcessorClients",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The executables as processes: orchard's commands, orchard serve's startup, the sandbox's demo.
        .testTarget(
            name: "OrchardCLITests",
            dependencies: [
                "OrchardIntegrationTesting", "OrchardServerTesting",
                "ApplePay", "CurlClient", "OrchardConfiguration", "OrchardCore", "OrchardPostgres", "OrchardRuntime", "OrchardServer",
                "OrchardServices", "OrchardSQLite", "OrchardTesting", "ShopCallbacks", "orchard", "orchard-sandbox",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .testTarget(
            name: "OrchardConfigurationTests",
            dependencies: [
                "WalletOrders",
                "ApplePay", "GooglePay", "OrchardConfiguration", "OrchardConfigurationTesting", "OrchardCore", "OrchardServices",
                "OrchardTesting",
                "ProcessorClients", "CurlClient",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ShopCallbacksTests",
            dependencies: ["CurlClient", "OrchardCore", "OrchardTesting", "ShopCallbacks"]
        ),
        // The loops driven directly, on the in-memory store and test clocks: no server, no SQLite.
        .testTarget(
            name: "OrchardServicesTests",
            dependencies: [
                "OrchardServices",
                "OrchardCore",
                "OrchardInMemory",
                "OrchardTesting",
                "ApplePay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Router tests: the routes, middleware and error mapping on in-memory dependencies
        // (`ApplicationDependencies.testing`), as Hummingbird's own tests are. No SQLite file, no
        // PostgreSQL, no process, no socket on Orchard's side (LayeringTests holds this).
        .testTarget(
            name: "OrchardServerTests",
            dependencies: [
                "ApplePay", "GooglePay", "OrchardComposition", "OrchardConfiguration", "OrchardConfigurationTesting", "OrchardCore",
                "OrchardInMemory", "OrchardServer", "OrchardServerTesting", "OrchardServices", "OrchardTesting", "OrchardTracing",
                "WalletOrders",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The server with its real adapters: SQLite, the mock gateway and processors over mutual TLS,
        // live sockets, PostgreSQL, processes.
        .testTarget(
            name: "OrchardIntegrationTests",
            dependencies: [
                "OrchardIntegrationTesting",
                "WalletOrders",
                "OrchardServerTesting",
                "OrchardInMemory",
                "AppleGateway",
                "OrchardComposition",
                "OrchardConfiguration",
                "OrchardCore",
                "OrchardPostgres",
                "OrchardRuntime",
                "OrchardServer",
                "OrchardServices",
                "OrchardSQLite",
                "OrchardTracing",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "ProcessorClients",
                "ShopCallbacks",
                "OrchardTesting",
                "CurlClient",
            ]
        ),
    ]
)

// Fuzzing and benchmark tools, never shipped: in the package only with ORCHARD_TOOLS=1 (scripts/fuzz and
// Benchmarks/ set it), so `swift build` and `swift test` build none of them, as Hummingbird keeps its
// benchmarks behind an environment variable.
let tools: [Target] = [
    // libFuzzer harness for what Orchard reads from outside: tokens, in-app bodies, payment data,
    // Apple's token events, processors' answers (scripts/fuzz builds it with -sanitize=fuzzer).
    // A tool, never shipped.
    .target(name: "CFuzzerDriver"),
    .executableTarget(
        name: "TokenFuzzer",
        dependencies: [
            "ApplePay", "CFuzzerDriver", "GooglePay", "OrchardCore", "ProcessorClients", .product(name: "Crypto", package: "swift-crypto"),
        ]
    ),
    // Verify+decrypt throughput on the real vectors (Benchmarks/bench-tokens).
    .executableTarget(
        name: "TokenBenchmark",
        dependencies: [
            "ApplePay",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ]
    ),
    // Setup and baselines for Benchmarks/bench-authorize and Benchmarks/bench-http (orders, minted tokens,
    // the disk's commit rate). Uses the test PKI, so it is never part of `orchard`.
    .executableTarget(
        name: "orchard-bench",
        dependencies: [
            "OrchardConfiguration", "OrchardServices",
            "ApplePay",
            "CSQLite",
            "CurlClient",
            "OrchardTesting",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]
    ),
    // The HTTP floor Benchmarks/bench-http compares Orchard with: one bare Hummingbird route.
    .executableTarget(
        name: "orchard-bench-floor",
        dependencies: [
            .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]
    ),
]
if Context.environment["ORCHARD_TOOLS"] == "1" {
    package.targets += tools
}

// Every Swift target gets the same upcoming features, applied here once (as swift-certificates does).
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + swiftSettings
}
