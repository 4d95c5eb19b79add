import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardPostgres
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// The chaos test: two real `orchard serve` processes on one private PostgreSQL cluster, six
/// shoppers ordering and paying in a loop through the mock processor (``DatabaseFaultLoad``), and PostgreSQL stopped
/// (`pg_ctl stop -m fast`, as a failover does) for a while, then started again. During the
/// outage every answer comes within the bound and `/health` says not ready; soon after the
/// restart both instances serve again by themselves; and every charge at the processor ends as
/// exactly one authorized payment.
///
/// The suite's outage lasts 8 s; `scripts/chaos` runs the long form (`ORCHARD_OUTAGE_SECONDS=25`).
@Suite("A database that goes away under load: two instances on one PostgreSQL", .serialized, .enabled(if: PostgresServer.enabled))
struct DatabaseOutageTests {
    static var outage: Duration {
        .seconds(Int(ProcessInfo.processInfo.environment["ORCHARD_OUTAGE_SECONDS"] ?? "").map { max(2, min($0, 120)) } ?? 8)
    }
    /// The longest answer allowed while the database is down: the 1 s acquire timeout set
    /// below, with room for a loaded 2-core machine. Before, requests waited for the database.
    static let bound: Duration = .seconds(5)
    @Test("PostgreSQL stopped under load: fast answers, /health 503, back by itself, every charge one authorized payment")
    func outageUnderLoad() async throws {
        let postgres = try await PostgresServer.dedicated(settings: [:])
        defer { postgres.stop() }
        let database = try await postgres.createDatabase()
        let mock = try await CrashTests.mock()
        let environment = ["PGPASS": postgres.password, "VAULT_KEY": String(repeating: "7e", count: 32)]
        let settings = ConfigurationFile.Postgres(
            host: "127.0.0.1", port: postgres.port, database: database.database, user: PostgresServer.user, password: "env:PGPASS",
            connectTimeoutMilliseconds: 1000, acquireTimeoutMilliseconds: 1000)
        let (a, b, journal, shoppers) = try await DatabaseFaultLoad.trading(mock: mock, environment: environment, settings)

        try await postgres.halt()
        let halted = ContinuousClock.now
        let notReady = try await Eventually.value(timeout: Self.outage, every: .milliseconds(100)) { () async -> Duration? in
            let down = [await DatabaseFaultLoad.ready(a), await DatabaseFaultLoad.ready(b)].allSatisfy { !$0 }
            return down ? .now - halted : nil
        }
        // The outage is the scenario's length, not a wait for an event.
        try await Task.sleep(until: halted + Self.outage)
        try await postgres.resume()
        let resumed = ContinuousClock.now
        let (readyAgain, orders) = try await DatabaseFaultLoad.recover(a, b, journal: journal, shoppers: shoppers, since: resumed)

        let during = journal.answers(from: halted, to: resumed)
        let longest = during.map(\.elapsed).max() ?? .zero
        #expect(!during.isEmpty, "the shoppers kept asking during the outage")
        #expect(longest < Self.bound, "an answer took \(longest) while the database was down")
        // Calls begun just before the stop may still succeed; none may hang, and none may fail otherwise.
        #expect(during.allSatisfy { [200, 201, 503, 504].contains($0.status) }, "\(Set(during.map(\.status)))")
        #expect(notReady != nil, "/health said ready on both instances throughout the outage")
        #expect(readyAgain != nil, "the instances did not serve again after the restart")

        let (charges, unmatched) = try await DatabaseFaultLoad.checkCharges(orders: orders, mock: mock, database: database)
        let statuses = Dictionary(grouping: during, by: \.status).mapValues(\.count)
        print(
            """
            database outage of \(Self.outage): \(during.count) answers during it, the longest \(longest), \
            statuses \(statuses.sorted { $0.key < $1.key }); /health 503 on both after \(notReady ?? .zero); \
            ready again \(readyAgain ?? .zero) after the restart; \(charges.count) charges, \(orders.count) orders, \
            every charge one authorized payment: \(unmatched.isEmpty)
            """)
        await mock.stop()
    }

    @Test("a charge whose outcome cannot be written while the database is down: payment_unknown now, authorized once by the reconciler")
    func chargeDuringOutage() async throws {
        let postgres = try await PostgresServer.dedicated(settings: [:])
        defer { postgres.stop() }
        let database = try await postgres.createDatabase()
        let mock = try await CrashTests.mock()
        let server = try ServerProcess(
            processorURL: mock.baseURL, processorTimeoutMilliseconds: 4000,
            environment: ["PGPASS": postgres.password, "VAULT_KEY": String(repeating: "7e", count: 32)],
            configure: { file in
                file.store = .init(
                    postgres: .init(
                        host: "127.0.0.1", port: postgres.port, database: database.database, user: PostgresServer.user,
                        password: "env:PGPASS", acquireTimeoutMilliseconds: 1000))
                file.payments?.vaultKey = "env:VAULT_KEY"
            })
        try await server.start()
        let (id, request) = try await server.order()
        // The processor takes the charge and sends no answer; the database stops before Orchard's
        // call gives up (4 s), so the outcome it then has to write cannot be written.
        mock.behaviour = .hold
        let tap = Task { try await server.pay(id, request) }
        #expect(try await Eventually.until { mock.charges.contains { $0.reference.hasPrefix(id + "-") } })
        try await postgres.halt()
        let answer = try await tap.value
        #expect(answer.status == 504 && answer.json?["status"] as? String == "failure", "payment_unknown: \(answer.status)")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("not be charged twice"))

        mock.behaviour = .authorize
        mock.finishHeldCharges()
        try await postgres.resume()
        #expect(try await Eventually.until { try await server.payments(order: id).first?.state == "authorized" })
        #expect(mock.charges.filter { $0.reference.hasPrefix(id + "-") }.count == 1, "charged once")
        await server.stop()
        await mock.stop()
    }
}
