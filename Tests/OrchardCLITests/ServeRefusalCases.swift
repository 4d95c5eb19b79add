import Foundation

/// Every refusal `orchard serve` makes at startup, one case each (ServeRefusalWalkTests checks
/// that together they reach every refusal site in Sources/ that is not exempted with a reason).
extension RefusalCase {
    static var all: [RefusalCase] {
        issueExamples + fileCases + gatewayAndServerCases + merchantCases + identityCases + processingKeyCases + storeCases
            + observabilityCases + operationsCases + pageAndWebhookCases + processorCases + platformCases + startupCases
            + registryCases + walletOrdersCases + merchantTokenUsageCases + googlePayCases
    }

    /// The ten that passed doctor and were refused by serve (issue 52), and the docs' PostgreSQL snippet.
    static let issueExamples: [RefusalCase] = [
        .raw(
            "README's example with WORLDLINE_SECRET unset",
            """
            {
              "merchants": [{
                "merchantIdentifier": "merchant.com.example.shop",
                "displayName": "Example Shop",
                "domains": ["shop.example"],
                "identityCertificate": "keys/merchant_id.cer",
                "identityKey": "keys/identity.key",
                "domainAssociationFile": "keys/apple-developer-merchantid-domain-association",
                "processingKeys": [{"certificate": "keys/apple_pay.cer"}],
                "processor": {"type": "worldline", "merchantId": "PSPID", "apiKeyId": "…",
                              "secretApiKey": "env:WORLDLINE_SECRET"}
              }],
              "stateDirectory": "/var/lib/orchard"
            }
            """),
        .edit("a worldpay processor with no entity") { json, _ in json.merchant["processor"] = ["type": "worldpay"] },
        .edit("processor.zzzUnknown") { json, _ in json.merchant[section: "processor"]["zzzUnknown"] = 1 },
        .edit("server.port 70000") { json, _ in json[section: "server"]["port"] = 70000 },
        .edit("webhooks.firstRetrySeconds 0") { json, _ in json[section: "webhooks"]["firstRetrySeconds"] = 0 },
        .edit("limits.orders.perClientIP.burst 5000000") { json, _ in
            json[section: "limits"]["orders"] = ["perClientIP": ["perMinute": 60, "burst": 5_000_000]]
        },
        .edit("metrics.port is server.port") { json, _ in
            json[section: "server"]["port"] = 18_080
            json["metrics"] = ["port": 18_080]
        },
        .edit("a 3-character admin.token") { json, _ in json["admin"] = ["token": "short-token"] },
        .edit("applePaySDKIntegrity without a pinned SDK") { json, _ in
            json["checkout"] = ["applePaySDKIntegrity": "sha384-" + Data(repeating: 1, count: 48).base64EncodedString()]
        },
        .edit("a platformIntegrator whose key does not match its certificate") { json, _ in
            json.addPlatform { $0["identityKey"] = "stranger.key" }
        },
        .edit("docs/scaling.md's store.postgres snippet (no payments.vaultKey)", environment: ["ORCHARD_DB_PASSWORD": "secret"]) {
            json, _ in
            json["store"] = [
                "postgres": [
                    "host": "db.internal", "database": "orchard", "user": "orchard", "password": "env:ORCHARD_DB_PASSWORD",
                    "tls": ["caFile": "db-ca.pem"],
                ]
            ]
            json[section: "payments"]["vaultKey"] = nil
        },
    ]

    /// The file itself.
    static let fileCases: [RefusalCase] = [
        .raw("no configuration file", nil),
        .raw("not JSON", "{\"merchants\": ["),
        .raw("an unknown top-level key", "{\"merchants\": [], \"zzzUnknown\": 1}"),
    ]

    static let gatewayAndServerCases: [RefusalCase] = [
        .edit("appleGateway.baseURL over http") { json, _ in json[section: "appleGateway"]["baseURL"] = "http://127.0.0.1:1" },
        .edit("a test gateway without allowNonAppleHost") { json, _ in json[section: "appleGateway"]["allowNonAppleHost"] = nil },
        .edit("appleGateway.caFile with no PEM") { json, _ in json[section: "appleGateway"]["caFile"] = "junk.pem" },
        .edit("appleGateway.timeoutMilliseconds 30000") { json, _ in json[section: "appleGateway"]["timeoutMilliseconds"] = 30_000 },
        .edit("server.publicDirectory without index.html") { json, _ in json[section: "server"]["publicDirectory"] = "public" },
        .edit("server.maxBodyBytes 10") { json, _ in json[section: "server"]["maxBodyBytes"] = 10 },
        .edit("server.drainTimeoutSeconds 0") { json, _ in json[section: "server"]["drainTimeoutSeconds"] = 0 },
        .edit("server.idleTimeoutSeconds 0") { json, _ in json[section: "server"]["idleTimeoutSeconds"] = 0 },
        .edit("server.trustedProxies with a name") { json, _ in json[section: "server"]["trustedProxies"] = ["proxy.internal"] },
        .edit("server.clientAddressHeader Forwarded") { json, _ in json[section: "server"]["clientAddressHeader"] = "Forwarded" },
        .edit("server.acceptTraceparent sometimes") { json, _ in json[section: "server"]["acceptTraceparent"] = "sometimes" },
        .edit("payments.tokenMaximumAgeSeconds 0") { json, _ in json[section: "payments"]["tokenMaximumAgeSeconds"] = 0 },
        .edit("payments.testTokenRootCertificate with no PEM") { json, _ in
            json[section: "payments"]["testTokenRootCertificate"] = "junk.pem"
        },
        .edit("payments.reconcileIntervalSeconds 0") { json, _ in json[section: "payments"]["reconcileIntervalSeconds"] = 0 },
        .edit("payments.vaultKey of 3 hex digits", environment: ["VAULT_KEY": "abc"]) { json, _ in
            json[section: "payments"]["vaultKey"] = "env:VAULT_KEY"
        },
    ]

    static let merchantCases: [RefusalCase] = [
        .edit("no merchant") { json, _ in json["merchants"] = [] },
        .edit("two merchants with one domain") { json, _ in
            let merchant = json.merchant.fields
            json["merchants"] = [merchant, merchant]
        },
        .edit("an empty displayName") { json, _ in json.merchant["displayName"] = "" },
        .edit("no domains") { json, _ in json.merchant["domains"] = [] },
        .edit("a domain with a space") { json, _ in json.merchant["domains"] = ["shop example"] },
        .edit("a catalogue without processingKeys") { json, _ in json.merchant["processingKeys"] = nil },
        .edit("a catalogue in an unknown currency") { json, _ in json.merchant["catalogue"] = "catalogue-currency.json" },
        .edit("a catalogue that is not an object") { json, _ in json.merchant["catalogue"] = "catalogue-shape.json" },
        .edit("an RSA processing certificate alone for Worldpay") { json, _ in
            json.merchant["processingKeys"] = [["certificate": "processing-rsa.pem"]]
        },
    ]

    static let identityCases: [RefusalCase] = [
        .edit("a missing identity certificate") { json, _ in json.merchant["identityCertificate"] = "missing.pem" },
        .edit("an identity certificate that is not one") { json, _ in json.merchant["identityCertificate"] = "junk.pem" },
        .edit("a processing certificate as the identity") { json, bench in
            json.merchant["identityCertificate"] = "processing-rsa.pem"
            json.merchant["identityKey"] = "expired.key"
            _ = bench
        },
        .edit("an expired identity") { json, _ in
            json.merchant["identityCertificate"] = "expired.pem"
            json.merchant["identityKey"] = "expired.key"
        },
        .edit("an EC key for the RSA identity") { json, _ in json.merchant["identityKey"] = "test-processing-ec.key" },
        .edit("a PKCS#12 identity and identityCertificate") { json, _ in json.merchant["identity"] = ["pkcs12": "no-key.p12"] },
        .edit("a PKCS#12 identity without a key") { json, _ in
            json.merchant["identity"] = ["pkcs12": "no-key.p12"]
            json.merchant["identityCertificate"] = nil
            json.merchant["identityKey"] = nil
        },
        .edit("a PKCS#12 identity without a certificate") { json, _ in
            json.merchant["identity"] = ["pkcs12": "no-certificate.p12"]
            json.merchant["identityCertificate"] = nil
            json.merchant["identityKey"] = nil
        },
        .edit("no identityKey") { json, _ in json.merchant["identityKey"] = nil },
    ]

    static let processingKeyCases: [RefusalCase] = [
        .edit("an identity certificate as a processing certificate") { json, _ in
            json.merchant["processingKeys"] = [["privateKey": "test-processing-ec.key", "certificate": "test-merchant-identity.pem"]]
        },
        .edit("a processing key whose certificate is another key's") { json, _ in
            json.merchant["processingKeys"] = [["privateKey": "test-processing-ec.key", "certificate": "processing-other-key.pem"]]
        },
        .edit("an expired processing certificate") { json, _ in
            json.merchant["processingKeys"] = [["privateKey": "test-processing-ec.key", "certificate": "processing-expired.pem"]]
        },
        .edit("a processing certificate alone for another merchant") { json, _ in
            json.merchant["processingKeys"] = [["certificate": "processing-other-merchant.pem"]]
        },
        .edit("a processing key with pkcs12 and privateKey") { json, _ in
            json.merchant["processingKeys"] = [["pkcs12": "no-key.p12", "privateKey": "test-processing-ec.key"]]
        },
        .edit("a processing PKCS#12 without a key") { json, _ in json.merchant["processingKeys"] = [["pkcs12": "no-key.p12"]] },
        .edit("an empty processing key entry") { json, _ in json.merchant["processingKeys"] = [[String: Any]()] },
        .edit("a password for a processing certificate alone", environment: ["KEY_PASSWORD": "secret"]) { json, _ in
            json.merchant["processingKeys"] = [["certificate": "processing-rsa.pem", "password": "env:KEY_PASSWORD"]]
        },
    ]
}
