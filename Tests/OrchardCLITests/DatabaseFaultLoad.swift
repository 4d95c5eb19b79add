import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardPostgres
import OrchardServer
import OrchardServerTesting
import OrchardTesting
import Synchronization
import Testing

/// What the database chaos tests share: two real `orchard serve` processes on one PostgreSQL
/// database, six shoppers ordering and paying in a loop through the mock processor, the journal
/// of every answer they got, and the check after the fault that every charge at the processor
/// is exactly one authorized payment.
enum DatabaseFaultLoad {
    static let shoppers = 6

    /// Every answer the shoppers got, and the orders they made.
    final class Journal: Sendable {
        struct Answer: Sendable {
            var started: ContinuousClock.Instant
            var elapsed: Duration
            var status: Int
            var path: String
        }
        let answers = Mutex<[Answer]>([])
        let orders = Mutex<[String]>([])
        let authorized = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)

        func timed(_ path: String, _ call: () async throws -> CurlResponse) async -> CurlResponse? {
            let started = ContinuousClock.now
            let response = try? await call()
            let answer = Answer(started: started, elapsed: .now - started, status: response?.status ?? 0, path: path)
            answers.withLock { $0.append(answer) }
            return response
        }

        /// The answers to requests begun in `start..<end`.
        func answers(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> [Answer] {
            answers.withLock { $0 }.filter { $0.started >= start && $0.started < end }
        }
    }

    /// One shopper: an order, then a payment with a fresh token, again and again.
    static func shop(on server: ServerProcess, journal: Journal) async {
        let basket = Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8)
        while !journal.stop.load(ordering: .relaxed) {
            guard let created = await journal.timed("orders", { try await server.send("POST", "/api/orders", body: basket) }),
                created.status == 201, let id = created.json?["orderId"] as? String,
                let request = created.json?["paymentRequest"] as? [String: Any],
                let (body, _) = try? AuthorizeBody.make(id, request, minter: server.minter)
            else { continue }
            journal.orders.withLock { $0.append(id) }
            let paid = await journal.timed("authorize") { try await server.send("POST", "/api/apple-pay/authorize", body: body) }
            if paid?.status == 200 { journal.authorized.add(1, ordering: .relaxed) }
        }
    }

    /// The shoppers, half on each instance, until the journal says stop.
    static func startShopping(on a: ServerProcess, _ b: ServerProcess, journal: Journal) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<shoppers {
                    group.addTask { await shop(on: index.isMultiple(of: 2) ? a : b, journal: journal) }
                }
            }
        }
    }

    /// Two instances on `settings`, started, and the shoppers trading on both: a dozen payments
    /// made before the fault, whatever time they take.
    static func trading(
        mock: MockProcessors, environment: [String: String], _ settings: ConfigurationFile.Postgres
    ) async throws -> (a: ServerProcess, b: ServerProcess, journal: Journal, shoppers: Task<Void, Never>) {
        let a = try instance(mock: mock, environment: environment, settings)
        let b = try instance(mock: mock, environment: environment, settings)
        try await a.start()
        try await b.start()
        let journal = Journal()
        let shoppers = startShopping(on: a, b, journal: journal)
        #expect(try await Eventually.until { journal.authorized.load(ordering: .relaxed) >= 12 }, "trading before the fault")
        return (a, b, journal, shoppers)
    }

    static func ready(_ server: ServerProcess) async -> Bool {
        (try? await server.send("GET", "/health"))?.status == 200
    }

    /// After a fault ends at `ended`: how long until both instances said ready again (nil: never),
    /// once they trade again the shoppers stop, the reconcilers settle whatever the fault left
    /// pending or unknown (recorded as an issue if anything stays open), and both instances stop.
    static func recover(
        _ a: ServerProcess, _ b: ServerProcess, journal: Journal, shoppers: Task<Void, Never>, since ended: ContinuousClock.Instant
    ) async throws -> (readyAgain: Duration?, orders: [String]) {
        let readyAgain = try await Eventually.value(timeout: .seconds(90), every: .milliseconds(100)) { () async -> Duration? in
            let up = [await ready(a), await ready(b)].allSatisfy { $0 }
            return up ? .now - ended : nil
        }
        let before = journal.authorized.load(ordering: .relaxed)
        #expect(try await Eventually.until { journal.authorized.load(ordering: .relaxed) >= before + 12 }, "trading again")
        journal.stop.store(true, ordering: .relaxed)
        await shoppers.value
        let orders = journal.orders.withLock { $0 }
        let open = try await CrashTests.quiesce(a, orders: orders)
        #expect(open.isEmpty, "still open after reconciliation: \(open)")
        await a.stop()
        await b.stop()
        return (readyAgain, orders)
    }

    /// An instance on `postgres` (the test's database settings, `PGPASS` in its environment) and the mock processor.
    static func instance(
        mock: MockProcessors, environment: [String: String], _ postgres: ConfigurationFile.Postgres
    ) throws -> ServerProcess {
        try ServerProcess(
            processorURL: mock.baseURL, environment: environment,
            configure: { file in
                file.store = .init(postgres: postgres)
                file.payments?.vaultKey = "env:VAULT_KEY"
                file.limits = ServerHarness.noLimits
                file.limits?.authorizations = .init(perClientIP: .init(perMinute: 60_000, burst: 1000))
            })
    }

    /// Opens the database directly and checks every charge at the processor against the
    /// payments: each one authorized payment, none charged twice. Returns the charges and those
    /// that are not one authorized payment.
    static func checkCharges(orders: [String], mock: MockProcessors, database: PostgresSettings) async throws -> (
        charges: [String], unmatched: [String]
    ) {
        let store = try await PostgresStore.open(database, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
        return try await store.withRunning { store in
            let charges = CrashTests.charged(mock)
            let problems = try await PaymentInvariants.check(orders: orders, store: store, charges: charges)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            var unmatched: [String] = []
            for reference in charges {
                let orderId = String(reference.prefix { $0 != "-" })
                let states = try await store.payments(orderId: orderId).filter { $0.reference == reference }.map(\.state)
                if states != [.authorized] { unmatched.append("\(reference): \(states)") }
            }
            #expect(unmatched.isEmpty, "charges that are not one authorized payment: \(unmatched.prefix(5))")
            #expect(Set(charges).count == charges.count, "a reference charged twice")
            return (charges, unmatched)
        }
    }
}
