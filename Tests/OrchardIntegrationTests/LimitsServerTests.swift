import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardInMemory
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP client for what curl will not do: connect and send nothing, or half a request.
enum RawSocket {
    /// Connects to `port` on loopback, sends `bytes`, then reads until the server closes the
    /// connection: true when it did, false when `patience` passed first. Runs on its own thread.
    static func closedByServer(port: Int, sending bytes: [UInt8], patience seconds: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: run(port: port, bytes: bytes, patience: seconds)) }.start()
        }
    }

    private static func run(port: Int, bytes: [UInt8], patience: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var timeout = timeval(tv_sec: patience, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) } }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(patience)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count == 0 { return true }  // orderly close
            // A signal (other tests' children exiting) interrupts a recv with a timeout even under
            // SA_RESTART; that is not the server's doing, so wait on until the patience runs out.
            if count < 0, errno == EINTR, ContinuousClock.now < deadline { continue }
            if count < 0 { return errno == ECONNRESET }  // EAGAIN: the patience ran out first
        }
    }
}

@Suite("Limits over real HTTP: rates (429), busy upstreams (503), idle clients, body bounds, order expiry")
struct LimitsServerTests {
    /// How long an idle connection may stay open before the test gives up on its close: only a
    /// server that never closes it reaches this (the idle timeout is 1 s).
    static let idlePatience = Int(Eventually.patience.components.seconds)

    @Test("merchant sessions past a client's burst get 429 with Retry-After, and Apple is not asked")
    func sessionRate() async throws {
        try await ServerHarness.with(
            time: .fixed(Date()),
            configure: { file, _ in
                file.limits = .init(merchantSessions: .init(perClientIP: .init(perMinute: 1, burst: 2)))
            }
        ) { server in
            #expect(try await server.requestSession().status == 200)
            #expect(try await server.requestSession().status == 200)
            let refused = try await server.requestSession()
            #expect(refused.status == 429)
            #expect(refused.errorCode == "rate_limited")
            #expect(refused.header("retry-after") == "60", "one token a minute, and the clock stands still")
            #expect(refused.errorMessage?.contains("from this address") == true)
            #expect(server.gateway.issuedSessions.count == 2)
            let unknownHost = try await server.requestSession(host: "elsewhere.example")
            #expect(unknownHost.status == 421, "an unknown host is refused as before, not counted")
        }
    }

    /// A session request as forwarded by a proxy for `client` (whose own header said 192.0.2.1).
    static func session(_ server: ServerHarness, from client: String) async throws -> Int {
        let body = Array(#"{"validationURL": "https://apple-pay-gateway.apple.com/paymentservices/paymentSession"}"#.utf8)
        return try await server.send(
            "POST", "/api/apple-pay/session", body: body, extraHeaders: [(name: "X-Forwarded-For", value: "192.0.2.1, \(client)")]
        ).status
    }

    @Test("behind a trusted proxy each X-Forwarded-For client has its own bucket; from anyone else the header is ignored")
    func trustedProxies() async throws {
        let oneEach = ConfigurationFile.Limits(merchantSessions: .init(perClientIP: .init(perMinute: 1, burst: 1)))
        try await ServerHarness.with(
            time: .fixed(Date()),
            configure: { file, _ in
                file.limits = oneEach
                file.server?.trustedProxies = ["127.0.0.0/8"]
            }
        ) { server in
            let first = try await Self.session(server, from: "203.0.113.1")
            #expect(first == 200)
            #expect(try await Self.session(server, from: "203.0.113.1") == 429)
            #expect(try await Self.session(server, from: "203.0.113.2") == 200)
        }
        try await ServerHarness.with(
            time: .fixed(Date()),
            configure: { file, _ in
                file.limits = oneEach
                file.server?.trustedProxies = []
            }
        ) { server in
            let first = try await Self.session(server, from: "203.0.113.1")
            #expect(first == 200)
            #expect(try await Self.session(server, from: "203.0.113.2") == 429, "the peer is no trusted proxy: one client")
        }
    }

    @Test("orders and payment requests have per-merchant buckets too")
    func merchantRates() async throws {
        try await ServerHarness.with(
            time: .fixed(Date()),
            configure: { file, _ in
                file.limits = .init(
                    orders: .init(perMerchant: .init(perMinute: 6, burst: 1)),
                    paymentRequests: .init(perMerchant: .init(perMinute: 6, burst: 1)))
            }
        ) { server in
            let order = Array(#"{"items": [{"productId": "apple", "quantity": 1}]}"#.utf8)
            #expect(try await server.send("POST", "/api/orders", body: order).status == 201)
            let second = try await server.send("POST", "/api/orders", body: order)
            #expect(second.status == 429 && second.errorCode == "rate_limited" && second.header("retry-after") == "10")
            #expect(second.errorMessage?.contains("for this shop") == true)

            let key = try await server.apiKey()
            let cart = #"{"amount": 500, "currency": "EUR", "reference": "r-1"}"#
            #expect(try await server.api("POST", "/v1/payment-requests", key: key, json: cart, idempotencyKey: "a").status == 201)
            let again = try await server.api("POST", "/v1/payment-requests", key: key, json: cart, idempotencyKey: "b")
            #expect(again.status == 429 && again.header("retry-after") == "10")
        }
    }

    @Test("sheet updates and payment attempts are limited per client before anything is read, priced or sent")
    func updateAndAuthorizeRates() async throws {
        try await ServerHarness.with(
            time: .fixed(Date()),
            configure: { file, _ in
                file.limits = .init(
                    orderUpdates: .init(perClientIP: .init(perMinute: 1, burst: 2)),
                    authorizations: .init(perClientIP: .init(perMinute: 1, burst: 1)))
            }
        ) { server in
            let order = Array(#"{"items": [{"productId": "apple", "quantity": 1}]}"#.utf8)
            let id = try #require(try await server.send("POST", "/api/orders", body: order).json?["orderId"] as? String)
            let method = Array(#"{"identifier": "standard"}"#.utf8)
            for _ in 0..<2 {
                #expect(try await server.send("POST", "/api/orders/\(id)/shipping-method", body: method).status == 200)
            }
            // Every one of the four update routes draws from the same bucket.
            for path in ["shipping-method", "shipping-contact", "coupon", "payment-method"] {
                let limited = try await server.send("POST", "/api/orders/\(id)/\(path)", body: Array("{}".utf8))
                #expect(limited.status == 429 && limited.errorCode == "rate_limited" && limited.header("retry-after") == "60", "\(path)")
            }
            // A payment attempt: the first one is refused for its body, the second is not even read.
            let first = try await server.send("POST", "/api/apple-pay/authorize", body: Array("{}".utf8))
            #expect(first.status == 400)
            let second = try await server.send("POST", "/api/apple-pay/authorize", body: Array("{}".utf8))
            #expect(second.status == 429 && second.header("retry-after") == "60")
            #expect(second.json?["status"] as? String == "failure", "shaped for completePayment")
            #expect(try await server.store.payments(orderId: id).isEmpty)
        }
    }

    @Test("a merchant's calls to Apple past outbound.maxConcurrentPerMerchant fail at once with 503 and Retry-After, unsent")
    func busyGateway() async throws {
        try await ServerHarness.with(
            timeoutMilliseconds: 10_000,
            configure: { file, _ in
                file.outbound = .init(maxConcurrentPerMerchant: 1)
            }
        ) { server in
            // Apple holds the first call's answer until the second has been refused.
            server.gateway.holdSessions()
            async let first = server.requestSession()
            _ = try await Eventually.until { !server.gateway.receivedSessionRequests.isEmpty }
            try #require(server.gateway.receivedSessionRequests.count == 1, "the first call reached the mock")
            let second = try await server.requestSession()
            #expect(second.status == 503)
            #expect(second.errorCode == "upstream_busy")
            #expect(second.header("retry-after") == "2")
            #expect(server.gateway.receivedSessionRequests.count == 1, "the refused call was never sent")
            server.gateway.releaseSessions()
            #expect(try await first.status == 200, "the call in flight is unharmed")
        }
    }

    @Test("a client that connects and sends nothing, or half a request, is disconnected after server.idleTimeoutSeconds")
    func idleClients() async throws {
        try await ServerHarness.with(
            transport: .live,
            configure: { file, _ in
                file.server?.idleTimeoutSeconds = 1
            }
        ) { server in
            #expect(await RawSocket.closedByServer(port: server.port, sending: [], patience: Self.idlePatience))
            let half = Array("POST /api/orders HTTP/1.1\r\nHost: shop.example\r\nContent-Ty".utf8)
            #expect(await RawSocket.closedByServer(port: server.port, sending: half, patience: Self.idlePatience))
            let health = try await server.send("GET", "/health")
            #expect(health.status == 200, "and the server still answers")
        }
    }

    @Test("every body-reading route is bounded: /v1 and /admin refuse a body past server.maxBodyBytes with 413")
    func bodies() async throws {
        try await ServerHarness.with(
            environment: MoreMerchants.environment,
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
            }
        ) { server in
            let key = try await server.apiKey()
            let large = "{\"reference\": \"" + String(repeating: "x", count: 17 * 1024) + "\"}"
            let api = try await server.api("POST", "/v1/payment-requests", key: key, json: large, idempotencyKey: "big")
            #expect(api.status == 413 && api.errorCode == "payload_too_large")
            let admin = try await server.send(
                "POST", "/admin/merchants", host: "127.0.0.1", body: Array(large.utf8), extraHeaders: MoreMerchants.authorization)
            #expect(admin.status == 413 && admin.errorCode == "payload_too_large")
            let coupon = try await server.send("POST", "/api/orders/x/coupon", body: Array(large.utf8))
            #expect(coupon.status == 413)
        }
    }

    @Test("a checkout order expires after orders.openForSeconds: then it cannot change or be paid, and the expiry closes it")
    func orderExpiry() async throws {
        let clock = ManualClock()
        try await ServerHarness.with(
            time: clock.source,
            configure: { file, _ in
                file.orders = .init(openForSeconds: 120)
            }
        ) { server in
            let created = try await server.send(
                "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 1}]}"#.utf8))
            let id = try #require(created.json?["orderId"] as? String)
            let order = try #require(try await server.store.order(id: id))
            #expect(order.expiresAt == order.createdAt.addingTimeInterval(120))
            let method = Array(#"{"identifier": "standard"}"#.utf8)
            #expect(try await server.send("POST", "/api/orders/\(id)/shipping-method", body: method).status == 200)
            clock.advance(121)
            let late = try await server.send("POST", "/api/orders/\(id)/shipping-method", body: method)
            #expect(late.status == 409 && late.errorCode == "order_not_open")
            // The expiry loop runs beside the server (every 15 s of real time, on the test's clock),
            // so it may close the order before this call does: whichever comes first closes it, once.
            let closed = try await server.store.expireOrders(at: clock.now, limit: 10)
            #expect(closed == [id] || closed.isEmpty)
            #expect(try await server.store.order(id: id)?.state == .expired)
            #expect(try await server.store.expireOrders(at: clock.now, limit: 10).isEmpty, "never closed twice")
        }
    }
}
