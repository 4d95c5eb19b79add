import Foundation

extension RefusalCase {
    /// `store.postgres` as written; every refusal here comes before any connection.
    static func postgres(_ name: String, environment: [String: String] = [:], _ change: @escaping @Sendable (inout JSONObject) -> Void)
        -> RefusalCase
    {
        .edit(name, environment: environment) { json, _ in
            var postgres = JSONObject(["host": "127.0.0.1", "port": 1, "database": "orchard", "user": "orchard"])
            change(&postgres)
            json[section: "store"]["postgres"] = postgres.fields
            json[section: "payments"]["vaultKey"] = "env:VAULT_KEY"
        }
    }

    static let storeCases: [RefusalCase] = [
        postgres("store.postgres.port 0") { $0["port"] = 0 },
        postgres("store.postgres with host and socket") { $0["socket"] = "/tmp" },
        postgres("store.postgres.database empty") { $0["database"] = " " },
        postgres("store.postgres.poolSize 0") { $0["poolSize"] = 0 },
        postgres("store.postgres.connectTimeoutMilliseconds 1") { $0["connectTimeoutMilliseconds"] = 1 },
        postgres("store.postgres.password empty") { $0["password"] = "empty-secret" },
        postgres("store.postgres.keepaliveCount 99") { $0["keepaliveCount"] = 99 },
        postgres("store.postgres.callTimeoutMilliseconds below the statement timeout") { $0["callTimeoutMilliseconds"] = 1000 },
        postgres("store.postgres.tls.mode maybe") { $0["tls"] = ["mode": "maybe"] },
        postgres("store.postgres TLS over a socket") {
            $0["host"] = nil
            $0["socket"] = "/tmp/.s.PGSQL.1"
            $0["tls"] = ["mode": "require"]
        },
        postgres("store.postgres.tls.caFile with mode require") { $0["tls"] = ["mode": "require", "caFile": "db-ca.pem"] },
        postgres("store.postgres.tls.caFile with no PEM") { $0["tls"] = ["mode": "verify-full", "caFile": "junk.pem"] },
    ]

    static let observabilityCases: [RefusalCase] = [
        .edit("metrics.refreshIntervalSeconds 0") { json, _ in json["metrics"] = ["refreshIntervalSeconds": 0] },
        .edit("log.format xml") { json, _ in json["log"] = ["format": "xml"] },
        .edit("log.level loud") { json, _ in json["log"] = ["level": "loud"] },
        .edit("tracing.serviceName empty") { json, _ in json["tracing"] = ["serviceName": ""] },
        .edit("tracing.serviceName without otlp") { json, _ in json["tracing"] = ["serviceName": "shop"] },
        .edit("tracing.otlp.protocol grpc") { json, _ in json["tracing"] = ["otlp": ["protocol": "grpc"]] },
        .edit("tracing.otlp.endpoint over ftp") { json, _ in json["tracing"] = ["otlp": ["endpoint": "ftp://127.0.0.1"]] },
    ]

    static let operationsCases: [RefusalCase] = [
        .edit("limits.maxTrackedClients 1") { json, _ in json[section: "limits"]["maxTrackedClients"] = 1 },
        .edit("outbound.registeredMerchants.privateNetworks with a name") { json, _ in
            json["outbound"] = ["registeredMerchants": ["privateNetworks": ["intranet"]]]
        },
        .edit("outbound.registeredMerchants.testProcessors over http") { json, _ in
            json["outbound"] = ["registeredMerchants": ["testProcessors": [["baseURL": "http://127.0.0.1:1"]]]]
        },
        .edit("outbound.proxy over ftp") { json, _ in json["outbound"] = ["proxy": "ftp://proxy.internal"] },
        .edit("outbound.maxTransfers 0") { json, _ in json["outbound"] = ["maxTransfers": 0] },
        .edit("retention.expiredOrdersDays 5000") { json, _ in json["retention"] = ["expiredOrdersDays": 5000] },
        .edit("tokenEvents.pollIntervalMilliseconds 1") { json, _ in json["tokenEvents"] = ["pollIntervalMilliseconds": 1] },
        .edit("guard.intervalSeconds 1") { json, _ in json[section: "guard"]["intervalSeconds"] = 1 },
        .edit("orders.openForSeconds 1") { json, _ in json["orders"] = ["openForSeconds": 1] },
    ]

    static let pageAndWebhookCases: [RefusalCase] = [
        .edit("checkout.applePaySDK over ftp") { json, _ in json["checkout"] = ["applePaySDK": "ftp://cdn.example/sdk.js"] },
        .edit("checkout.applePayMode popup") { json, _ in json["checkout"] = ["applePayMode": "popup"] },
        .edit("checkout.applePaySDKTimeoutMilliseconds 1") { json, _ in json["checkout"] = ["applePaySDKTimeoutMilliseconds": 1] },
        .edit("checkout.applePaySDKIntegrity with no SDK") { json, _ in
            json["checkout"] = [
                "applePaySDK": "none", "applePaySDKIntegrity": "sha384-" + Data(repeating: 1, count: 48).base64EncodedString(),
            ]
        },
        .edit("checkout.applePaySDKIntegrity not a hash") { json, _ in
            json["checkout"] = [
                "applePaySDK": "https://applepay.cdn-apple.com/jsapi/1.2.0/apple-pay-sdk.js", "applePaySDKIntegrity": "md5-abc",
            ]
        },
        .edit("a webhook over http") { json, _ in json.merchant[section: "webhook"]["url"] = "http://shop.example/hooks" },
        .edit("a webhook's previousSecret equal to its secret") { json, _ in
            json.merchant[section: "webhook"]["previousSecret"] = json.merchant[section: "webhook"]["secret"]
        },
        .edit("a whsec_ webhook secret of 8 bytes") { json, _ in json.merchant[section: "webhook"]["secret"] = "webhook-whsec-short" },
        .edit("a short webhook secret") { json, _ in json.merchant[section: "webhook"]["secret"] = "webhook-short" },
    ]

    static let processorCases: [RefusalCase] = [
        .edit("processor.type stripe") { json, _ in json.merchant[section: "processor"]["type"] = "stripe" },
        .edit("processor.entity a number") { json, _ in json.merchant[section: "processor"]["entity"] = 5 },
        .edit("processor.timeoutMilliseconds a string") { json, _ in json.merchant[section: "processor"]["timeoutMilliseconds"] = "x" },
        .edit("processor.allowNonProductionHost a string") { json, _ in
            json.merchant[section: "processor"]["allowNonProductionHost"] = "yes"
        },
        .edit("processor.username empty") { json, _ in json.merchant[section: "processor"]["username"] = "empty-secret" },
        .edit("processor.baseURL over http") { json, _ in json.merchant[section: "processor"]["baseURL"] = "http://127.0.0.1:1" },
        .edit("a test processor without allowNonProductionHost") { json, _ in
            json.merchant[section: "processor"]["allowNonProductionHost"] = nil
        },
        .edit("processor.timeoutMilliseconds 100") { json, _ in json.merchant[section: "processor"]["timeoutMilliseconds"] = 100 },
        .edit("processor.narrative of 30 characters") { json, _ in
            json.merchant[section: "processor"]["narrative"] = String(repeating: "n", count: 30)
        },
        .edit("worldline authorizationMode PRE", environment: ["WORLDLINE_SECRET": "secret"]) { json, _ in
            json.merchant["processor"] = [
                "type": "worldline", "merchantId": "PSPID", "apiKeyId": "key", "secretApiKey": "env:WORLDLINE_SECRET",
                "authorizationMode": "PRE",
            ]
        },
        .edit("worldline decryption nobody", environment: ["WORLDLINE_SECRET": "secret"]) { json, _ in
            json.merchant["processor"] = [
                "type": "worldline", "merchantId": "PSPID", "apiKeyId": "key", "secretApiKey": "env:WORLDLINE_SECRET",
                "decryption": "nobody",
            ]
        },
    ]

    static let platformCases: [RefusalCase] = [
        .edit("platformIntegrator.merchantIdentifier not a merchant ID") { json, _ in
            json.addPlatform { $0["merchantIdentifier"] = "not a merchant ID" }
        },
        .edit("a platform processing certificate alone") { json, _ in
            json.addPlatform { $0["processingKeys"] = [["certificate": "platform-processing-held.pem"]] }
        },
        .edit("platformIntegrator.settingsKey of 3 hex digits", environment: ["SETTINGS_KEY": "abc"]) { json, _ in
            json.addPlatform { $0["settingsKey"] = "env:SETTINGS_KEY" }
        },
    ]

    /// What serve refuses after loading, before it listens: the store it cannot reach, the vault key.
    static let startupCases: [RefusalCase] = [
        .edit("a payment vault key file of 5 bytes") { json, _ in json["stateDirectory"] = "vault-short" },
        postgres("store.postgres at a closed port") { _ in },
        postgres("store.postgres.tls.caFile that does not parse") { $0["tls"] = ["mode": "verify-full", "caFile": "fake-ca.pem"] },
    ]
}
