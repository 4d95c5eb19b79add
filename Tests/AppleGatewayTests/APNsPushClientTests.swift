import AppleGateway
import ApplePay
import Crypto
import CurlClient
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import SwiftASN1
import Testing
import WalletOrders
import X509

/// Wallet order pushes to a mock APNs on loopback, through the libcurl client: HTTP/2, mutual TLS
/// with the Order Type ID certificate, the order type as the topic, an empty payload; each APNs
/// answer recorded as the policy says.
@Suite("APNs pushes for Wallet orders, against a mock APNs over HTTP/2 and mutual TLS")
struct APNsPushClientTests {
    struct Merchants: WalletOrderMerchants {
        let settings: WalletOrdersSettings
        func walletOrders(of merchantIdentifier: String) -> WalletOrdersSettings? { merchantIdentifier == "merchant.test" ? settings : nil }
        func walletOrderMerchant(orderTypeIdentifier: String) -> (merchantIdentifier: String, settings: WalletOrdersSettings)? {
            orderTypeIdentifier == settings.orderTypeIdentifier ? ("merchant.test", settings) : nil
        }
    }

    /// A mock APNs, the client, settings pushing to it and a store with one order whose devices are `tokens`.
    static func withAPNs(
        tokens: [String], identity: TestOrderTypeIdentity? = nil, tokenKey: MockAPNs.TokenKey? = nil,
        signing: WalletOrdersSettings.APNsTokenKey? = nil,
        _ body: (MockAPNs, WalletOrderPushSender, InMemoryStore, WalletOrderRecord) async throws -> Void
    ) async throws {
        let pki = TestMaterial.shared.pki
        let apns = try MockAPNs(
            server: try pki.issueServerCertificate(hosts: ["127.0.0.1"]), clientCA: pki.ca.certificate, tokenKey: tokenKey)
        try await apns.serving { port in
            try await withClient(port: port, apns: apns, tokens: tokens, identity: identity, signing: signing, body)
        }
    }

    static func withClient(
        port: Int, apns: MockAPNs, tokens: [String], identity: TestOrderTypeIdentity?, signing: WalletOrdersSettings.APNsTokenKey?,
        _ body: (MockAPNs, WalletOrderPushSender, InMemoryStore, WalletOrderRecord) async throws -> Void
    ) async throws {
        let pki = TestMaterial.shared.pki
        let http = try CurlHTTPClient()
        defer { http.shutdown() }
        let endpoint = RemoteEndpoint(
            baseURL: "https://127.0.0.1:\(port)", trust: .caPEM(Array(try pki.ca.certificatePEM.utf8)), connectTimeout: .seconds(5),
            timeout: .seconds(10), isProductionHost: false)
        var settings = try TestWalletOrders.settings(apns: endpoint)
        settings.apnsToken = signing
        if let identity {
            settings.identity = try OrderTypeIdentity(
                orderTypeIdentifier: TestWalletOrders.orderType, certificate: identity.leaf.certificate,
                privateKey: identity.leaf.privateKey,
                intermediates: [identity.intermediate.certificate], name: "other.pem", at: Date())
        }
        let store = InMemoryStore()
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let order = WalletOrderRecord(
            orderIdentifier: "wo1", orderTypeIdentifier: TestWalletOrders.orderType, merchantIdentifier: "merchant.test", paymentId: "p1",
            authenticationTokenHash: Array(repeating: 1, count: 32), createdAt: now, updatedAt: now)
        _ = try await store.createWalletOrder(order)
        for (index, token) in tokens.enumerated() {
            _ = try await store.registerWalletDevice(
                WalletOrderRegistration(
                    deviceIdentifier: "d\(index)", orderTypeIdentifier: TestWalletOrders.orderType, orderIdentifier: "wo1",
                    pushToken: token,
                    createdAt: now), limit: 10)
        }
        var next = order
        next.version = 2
        next.updatedAt = now
        _ = try await store.updateWalletOrder(next, event: nil)
        let sender = WalletOrderPushSender(
            store: store, merchants: Merchants(settings: settings), pusher: APNsPushClient(http: http), time: .system,
            logger: Logger(label: "test"))
        try await body(apns, sender, store, next)
    }

    @Test("a push goes over HTTP/2 with the client certificate, topic = the order type, an empty payload; a 410 unregisters the device")
    func pushes() async throws {
        let (kept, gone) = (String(repeating: "ab", count: 32), String(repeating: "cd", count: 32))
        try await Self.withAPNs(tokens: [kept, gone]) { apns, sender, store, _ in
            apns.markGone(gone)
            #expect(try await sender.sendDue() == 2)
            let pushes = await apns.waitForPushes(2)
            #expect(Set(pushes.map(\.token)) == [kept, gone])
            for push in pushes {
                #expect(push.overHTTP2 && push.topic == TestWalletOrders.orderType && push.body == "{}")
                #expect(push.pushType == "background" && push.priority == "5")
            }
            #expect(
                try await store.leaseWalletPushes(
                    at: Date().addingTimeInterval(86_400), until: Date().addingTimeInterval(86_500), limit: 10
                ).isEmpty)
            let listed = try await store.walletOrders(
                deviceIdentifier: "d1", orderTypeIdentifier: TestWalletOrders.orderType, changedAfter: nil, limit: 10)
            #expect(listed.isEmpty, "the gone token's device was unregistered")
            let stillThere = try await store.walletOrders(
                deviceIdentifier: "d0", orderTypeIdentifier: TestWalletOrders.orderType, changedAfter: nil, limit: 10)
            #expect(stillThere.count == 1)
        }
    }

    @Test("a 503 is tried again after the backoff; a certificate APNs does not trust gets no answer and is tried again")
    func retries() async throws {
        let token = String(repeating: "ef", count: 32)
        try await Self.withAPNs(tokens: [token]) { apns, sender, store, _ in
            apns.failNext(1)
            #expect(try await sender.sendDue() == 1)
            let pushes = await apns.waitForPushes(1)
            #expect(pushes.count == 1)
            let later = Date().addingTimeInterval(11)
            let retried = try await store.leaseWalletPushes(at: later, until: later.addingTimeInterval(60), limit: 10)
            #expect(retried.map(\.attempts) == [1], "due again 10 s on, its attempt counted")
        }
        let stranger = try TestPKI.make(commonName: "Not APNs's client CA").issueOrderTypeIdentity(
            orderTypeIdentifier: TestWalletOrders.orderType)
        try await Self.withAPNs(tokens: [token], identity: stranger) { apns, sender, store, _ in
            let leased = try await sender.sendDue()
            #expect(leased == 1)
            #expect(apns.pushes.isEmpty, "the handshake failed: nothing reached the mock")
            let later = Date().addingTimeInterval(11)
            let retried = try await store.leaseWalletPushes(at: later, until: later.addingTimeInterval(60), limit: 10)
            #expect(retried.map(\.attempts) == [1])
        }
    }

    @Test(
        "with a token-signing key: no client certificate, an ES256 provider token APNs checks; a token of another key is refused 403 and tried again"
    )
    func providerTokens() async throws {
        let key = P256.Signing.PrivateKey()
        let known = MockAPNs.TokenKey(key: key.publicKey, keyId: "ABC123DEFG", teamId: "TEAM123456")
        let token = String(repeating: "ac", count: 32)
        try await Self.withAPNs(
            tokens: [token], tokenKey: known, signing: .init(key: key, keyId: "ABC123DEFG", teamId: "TEAM123456")
        ) { apns, sender, _, _ in
            let leased = try await sender.sendDue()
            #expect(leased == 1)
            #expect(apns.pushes.map(\.authentication) == ["token"])
        }
        try await Self.withAPNs(
            tokens: [token], tokenKey: known, signing: .init(key: P256.Signing.PrivateKey(), keyId: "ABC123DEFG", teamId: "TEAM123456")
        ) { apns, sender, store, _ in
            let leased = try await sender.sendDue()
            #expect(leased == 1)
            #expect(apns.pushes.map(\.authentication) == ["refused:InvalidProviderToken"])
            let later = Date().addingTimeInterval(11)
            let retried = try await store.leaseWalletPushes(at: later, until: later.addingTimeInterval(60), limit: 10)
            #expect(retried.map(\.attempts) == [1], "403: tried again, the key may be fixed meanwhile")
        }
    }

    @Test("a provider token is ES256 over its header and claims, and is made again after 30 minutes, not before")
    func tokenShape() throws {
        let key = P256.Signing.PrivateKey()
        let signing = WalletOrdersSettings.APNsTokenKey(key: key, keyId: "ABC123DEFG", teamId: "TEAM123456")
        let issued = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try signing.token(issuedAt: issued)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let header = try #require(MockAPNs.json(parts[0]))
        let claims = try #require(MockAPNs.json(parts[1]))
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "ABC123DEFG")
        #expect(claims["iss"] as? String == "TEAM123456" && claims["iat"] as? Int == 1_800_000_000)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(MockAPNs.base64URL(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test("APNs's answers, as the policy reads them")
    func policy() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(WalletOrderPushPolicy.outcome(of: .status(200, reason: nil), attempts: 0, at: now) == .delivered)
        #expect(WalletOrderPushPolicy.outcome(of: .status(410, reason: "Unregistered"), attempts: 0, at: now) == .unregistered)
        #expect(WalletOrderPushPolicy.outcome(of: .status(400, reason: "BadDeviceToken"), attempts: 0, at: now) == .unregistered)
        #expect(
            WalletOrderPushPolicy.outcome(of: .status(413, reason: "PayloadTooLarge"), attempts: 0, at: now)
                == .dropped(error: "HTTP 413 PayloadTooLarge"))
        #expect(
            WalletOrderPushPolicy.outcome(of: .status(429, reason: "TooManyRequests"), attempts: 2, at: now)
                == .retry(at: now.addingTimeInterval(40), error: "HTTP 429 TooManyRequests"))
        #expect(
            WalletOrderPushPolicy.outcome(of: .noAnswer("timedOut"), attempts: 15, at: now)
                == .retry(at: now.addingTimeInterval(3 * 3600), error: "timedOut"), "the backoff stops growing at 3 hours")
        if case .dropped = WalletOrderPushPolicy.outcome(
            of: .noAnswer("timedOut"), attempts: WalletOrderPushPolicy.maximumAttempts - 1, at: now)
        {
        } else {
            Issue.record("the last attempt's failure drops the push")
        }
    }
}
