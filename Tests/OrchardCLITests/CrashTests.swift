import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// Real `orchard serve` processes killed with SIGKILL between and during payments, against the
/// mock Worldline over loopback HTTPS. The mock lives in the test process, so its record of
/// charges survives every kill.
@Suite("kill -9: a real server process, the mock processor, restarts")
struct CrashTests {
    static func mock() async throws -> MockProcessors {
        let mock = try MockProcessors(
            serverIdentity: TestMaterial.shared.server, worldpay: ProcessorFixture.worldpay, worldline: ProcessorFixture.worldline)
        try await mock.start()
        return mock
    }

    /// References the mock charged (authorized), Orchard's `<orderId>-<n>`.
    static func charged(_ mock: MockProcessors) -> [String] {
        mock.charges.filter { $0.state != .refused }.map(\.reference)
    }

    /// Waits until the server's reconciler has settled every stale and unknown payment.
    static func quiesce(_ server: ServerProcess, orders: [String]) async throws -> [String] {
        var open: [String] = []
        _ = try await Eventually.until(every: .milliseconds(250)) {
            open = []
            for state in ["unknown", "pending"] {
                let response = try await server.send("GET", "/admin/payments?state=\(state)&limit=1000", admin: true)
                open += (response.json?["payments"] as? [[String: Any]] ?? []).compactMap { $0["reference"] as? String }
            }
            return open.isEmpty
        }
        return open
    }

    /// Stops the server and checks every invariant over its database.
    static func finalCheck(_ server: ServerProcess, mock: MockProcessors, orders: [String]) async throws {
        await server.stop()
        let store = try SQLiteStore(path: server.databasePath)
        let problems = try await PaymentInvariants.check(orders: orders, store: store, charges: charged(mock))
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        let references = try await orders.asyncFlatMap { try await store.payments(orderId: $0) }.map(\.reference)
        for reference in charged(mock) {
            #expect(references.filter { $0 == reference }.count == 1, "the charge \(reference) maps to one payment")
        }
    }

    enum Step: CaseIterable {
        case tap, killDuringTap, kill, resolve, wait
    }

    static let behaviours: [MockProcessorBehaviour] = [
        .authorize, .refuse(code: "05", description: "Do not honour"), .status(503), .status(400), .dropAfterCharge,
        .delay(.milliseconds(1500)),
    ]

    /// The 50 seeds, in five shares run side by side, each on its own server and mock: a share
    /// spends most of its time waiting for a process to start or a reconciler to act.
    static let shares = 5
    static let seedsPerShare: UInt64 = 10

    @Test(
        "50 seeded sequences of processor behaviours, retries, resolves and kill -9 (between and during calls) keep the invariants",
        arguments: 0..<shares)
    func sequences(share: Int) async throws {
        let mock = try await Self.mock()
        defer { Task { await mock.stop() } }
        let server = try ServerProcess(processorURL: mock.baseURL)
        try await server.start()
        var orders: [String] = []
        var kills = 0
        let first = UInt64(share) * Self.seedsPerShare
        for seed in first..<first + Self.seedsPerShare {
            var random = SplitMix64(seed: seed)
            let (id, request) = try await server.order()
            orders.append(id)
            var log: [String] = []
            for _ in 0..<Int.random(in: 2...5, using: &random) {
                let step = Step.allCases.randomElement(using: &random)!
                let behaviour = Self.behaviours.randomElement(using: &random)!
                log.append("\(step)(\(behaviour))")
                switch step {
                case .tap:
                    mock.behaviour = behaviour
                    _ = try await server.pay(id, request)
                case .killDuringTap:
                    mock.behaviour = .delay(.milliseconds(400))
                    let (body, _) = try AuthorizeBody.make(id, request, minter: server.minter)
                    let tap = Task { try? await server.send("POST", "/api/apple-pay/authorize", body: body) }
                    // The scenario: a kill at a random moment of the tap (before, during or after the charge).
                    try await Task.sleep(for: .milliseconds(Int.random(in: 5...300, using: &random)))
                    await server.kill()
                    _ = await tap.value
                    try await server.start()
                    kills += 1
                case .kill:
                    await server.kill()
                    try await server.start()
                    kills += 1
                case .resolve:
                    try await resolve(server, mock: mock, order: id)
                case .wait:
                    // The scenario's step "time passes": the server's reconciler takes its next turn.
                    try await reconcilerTurn(server, order: id)
                }
                let problems = try await check(server, mock: mock, order: id)
                guard problems.isEmpty else {
                    Issue.record("seed \(seed): \(problems.joined(separator: "; ")) after \(log.joined(separator: ", "))")
                    return
                }
            }
        }
        mock.behaviour = .authorize
        let open = try await Self.quiesce(server, orders: orders)
        #expect(open.isEmpty, "still open after reconciliation: \(open)")
        #expect(kills >= 4, "the sequences killed the server \(kills) times")
        try await Self.finalCheck(server, mock: mock, orders: orders)
    }

    /// Waits for the server's reconciler to act on the order's unknown payment, if it has one due
    /// for a re-send (nothing else in the server acts on its own): its state, sends or attempts change.
    func reconcilerTurn(_ server: ServerProcess, order: String) async throws {
        func unknown() async throws -> [String: Any]? {
            let response = try await server.send("GET", "/admin/payments?order=\(order)&state=unknown", admin: true)
            return (response.json?["payments"] as? [[String: Any]])?.first
        }
        func turn(_ payment: [String: Any]) -> [String] {
            ["state", "sends", "reconcileAttempts"].map { "\(payment[$0] ?? "")" }
        }
        guard let payment = try await unknown(), let id = payment["id"] as? String, payment["nextReconcileAt"] is String else { return }
        let before = turn(payment)
        let acted = try await Eventually.until(every: .milliseconds(100)) {
            let response = try await server.send("GET", "/admin/payments/\(id)", admin: true)
            guard let now = response.json?["payment"] as? [String: Any] else { return false }
            return turn(now) != before
        }
        #expect(acted, "the reconciler took its turn at \(id)")
    }

    /// An operator resolves the order's unknown payment from the mock's records, unless its charge is still running.
    func resolve(_ server: ServerProcess, mock: MockProcessors, order: String) async throws {
        guard let unknown = try await server.payments(order: order).first(where: { $0.state == "unknown" }),
            !mock.isInProgress(unknown.reference)
        else { return }
        let state = Self.charged(mock).contains(unknown.reference) ? "authorized" : "refused"
        let response = try await server.send(
            "POST", "/admin/payments/\(unknown.id)/resolve", body: Array(#"{"state": "\#(state)"}"#.utf8), admin: true)
        #expect([200, 409].contains(response.status), "resolve answered \(response.status)")
    }

    /// The invariants through the admin API, at any moment (every move changes payment and order together).
    func check(_ server: ServerProcess, mock: MockProcessors, order: String) async throws -> [String] {
        let payments = try await server.payments(order: order)
        let charges = Self.charged(mock).filter { $0.hasPrefix(order + "-") }
        var problems: [String] = []
        if charges.count > 1 { problems.append("charged \(charges.count) times") }
        for reference in charges {
            let states = payments.filter { $0.reference == reference }.map(\.state)
            if states.count != 1 || !["authorized", "settled", "unknown", "pending"].contains(states[0]) {
                problems.append("charge \(reference) is \(states) in Orchard")
            }
        }
        if payments.filter({ $0.state == "authorized" || $0.state == "settled" }).count > 1 {
            problems.append("two authorized payments")
        }
        return problems
    }

    @Test("kill -9 ten times under 16 concurrent authorizations: every 200 is an authorized payment, every charge one payment")
    func killUnderLoad() async throws {
        let mock = try await Self.mock()
        defer { Task { await mock.stop() } }
        mock.behaviour = .delay(.milliseconds(40))
        let server = try ServerProcess(processorURL: mock.baseURL, processorTimeoutMilliseconds: 2000)
        try await server.start()
        let load = LoadRecord()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    while !load.stop.load(ordering: .relaxed) {
                        guard let (id, request) = try? await server.order() else {
                            // The server is down (killed): a shopper tries again a moment later.
                            try await Task.sleep(for: .milliseconds(20))
                            continue
                        }
                        load.seen.withLock { $0.orders.append(id) }
                        if let response = try? await server.pay(id, request), response.status == 200,
                            let payment = response.json?["paymentId"] as? String
                        {
                            load.seen.withLock { $0.successes.append((id, payment)) }
                        }
                    }
                }
            }
            var random = SplitMix64(seed: 16)
            for _ in 0..<10 {
                // The scenario: kills at random moments of the load, not a wait for anything.
                try await Task.sleep(for: .milliseconds(Int.random(in: 250...700, using: &random)))
                await server.kill()
                try await server.start()
            }
            // Load on the last restart too: until a payment has gone through it.
            let before = load.seen.withLock { $0.successes.count }
            #expect(try await Eventually.until { load.seen.withLock { $0.successes.count } > before })
            load.stop.store(true, ordering: .relaxed)
            try await group.waitForAll()
        }
        mock.behaviour = .authorize
        let (orders, successes) = load.seen.withLock { ($0.orders, $0.successes) }
        print("kill -9 under load: \(orders.count) orders, \(successes.count) payments answered 200, \(Self.charged(mock).count) charges")
        #expect(successes.count > 20, "the clients got \(successes.count) payments through")
        let open = try await Self.quiesce(server, orders: orders)
        #expect(open.isEmpty, "still open after reconciliation: \(open)")
        await server.stop()
        let store = try SQLiteStore(path: server.databasePath)
        for success in successes {
            let payment = try await store.payment(id: success.payment)
            #expect(payment?.state == .authorized && payment?.orderId == success.order, "a 200 the client saw is authorized")
        }
        try await Self.finalCheck(server, mock: mock, orders: orders)
    }
}

/// What the load's clients saw, shared between their tasks.
final class LoadRecord: Sendable {
    let stop = Atomic<Bool>(false)
    let seen = Mutex<(orders: [String], successes: [(order: String, payment: String)])>(([], []))
}

extension Sequence {
    func asyncFlatMap<T>(_ transform: (Element) async throws -> [T]) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result += try await transform(element) }
        return result
    }
}
