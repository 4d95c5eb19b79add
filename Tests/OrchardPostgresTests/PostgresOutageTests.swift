import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import Testing

/// The database going away under a running store: every call fails within the acquire timeout
/// as ``StoreError/Code/unavailable`` instead of waiting for the database to come back, and the
/// store serves again by itself once it has.
@Suite("PostgreSQL store: a database that goes away", .enabled(if: PostgresServer.enabled))
struct PostgresOutageTests {
    static func order(_ id: String) -> OrderRecord {
        let priced = PricedOrder(
            currency: "EUR", lines: [], items: [], subtotal: 100, shippingMethod: nil, couponCode: nil, discount: 0,
            shippingCountry: nil, total: 100)
        return OrderRecord(
            id: id, merchantIdentifier: "merchant.test", state: .open, priced: priced, applicationData: [], createdAt: Date())
    }

    @Test("stopped: reads, writes and the readiness check fail within the acquire timeout; started again: it serves")
    func outage() async throws {
        let server = try await PostgresServer.dedicated(settings: [:])
        defer { server.stop() }
        var settings = try await server.createDatabase(poolSize: 2)
        settings.acquireTimeout = .milliseconds(500)
        let store = try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
        try await store.withRunning { store in
            // The 500 ms acquire bound is for the outage; before it, on a loaded machine running the
            // whole suite, a first connection can take longer: wait for the store to be up.
            #expect(
                try await Eventually.until(every: .milliseconds(100)) {
                    if (try? await store.insert(Self.order("outage-order"))) != nil { return true }
                    return (try? await store.order(id: "outage-order")) != nil  // written, its answer lost
                })
            try await store.checkAvailable()

            try await server.halt()
            let clock = ContinuousClock()
            for call in ["read", "write", "check"] {
                let started = clock.now
                await #expect {
                    switch call {
                    case "read": _ = try await store.order(id: "outage-order")
                    case "write": try await store.insert(Self.order("during-outage"))
                    default: try await store.checkAvailable()
                    }
                } throws: { ($0 as? StoreError)?.code == .unavailable }
                // The bound is the point: before, each call waited until the database came back.
                let waited = clock.now - started
                #expect(waited < .seconds(10), "\(call) answered after \(waited), past the 500 ms acquire timeout by far")
            }

            try await server.resume()
            #expect(
                try await Eventually.until(timeout: .seconds(60), every: .milliseconds(100)) {
                    (try? await store.checkAvailable()) != nil
                })
            #expect(try await store.order(id: "outage-order")?.id == "outage-order")
            #expect(try await store.order(id: "during-outage") == nil, "the write refused during the outage changed nothing")
        }
    }
}
