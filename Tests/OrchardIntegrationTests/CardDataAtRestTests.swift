import CurlClient
import Foundation
import OrchardIntegrationTesting
import OrchardServerTesting
import Testing

/// What the page's payment leaves in the state folder: the SQLite file and its journals.
@Suite("Card data at rest: the state folder after a payment")
struct CardDataAtRestTests {
    @Test("after an authorized payment and its replay, no file in the state folder holds the device account number")
    func noAccountNumberOnDisk() async throws {
        try await ServerHarness.with { server in
            let (id, request) = try await PageCheckout.createOrder(server)
            let body = try PageCheckout.paymentBody(orderId: id, request: request, amount: 990)
            #expect(try await server.send("POST", "/api/apple-pay/authorize", body: body).status == 200)
            #expect(try await server.send("POST", "/api/apple-pay/authorize", body: body).status == 409)
            let names = try FileManager.default.contentsOfDirectory(atPath: server.stateDirectory)
            #expect(names.contains("orchard.sqlite"), "\(names)")
            // The sample payload's device account number.
            for name in names {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: server.stateDirectory).appendingPathComponent(name))
                #expect(bytes.range(of: Data("4111111111111111".utf8)) == nil, "\(name)")
            }
        }
    }
}
