import CurlClient
import Foundation
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// The mock processors' write control route, as a test in another process (pretix's) uses it:
/// the next authorizations answered as queued, then as before.
@Suite("Mock processors: queued answers")
struct MockControlTests {
    @Test(
        "POST /_mock/next-answers queues a decline for the next authorization, then the mock authorizes again",
        arguments: [
            MockProcessorSetup.Kind.worldpay, .worldlineEncrypted,
        ])
    func queuedDecline(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let queued = try await fixture.raw("/_mock/next-answers", ["answers": ["decline"]], headers: [])
            #expect(queued.status == 200 && queued.json["queued"] as? Int == 1)
            let declined = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: nil))
            #expect(declined.status == .refused, "\(declined)")
            let next = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: nil))
            #expect(next.status == .authorized)
        }
    }

    @Test("the route refuses an answer it does not know, and takes POST only")
    func refusals() async throws {
        try await MandateFixture.with(.worldpay) { fixture in
            let unknown = try await fixture.raw("/_mock/next-answers", ["answers": ["explode"]], headers: [])
            #expect(unknown.status == 400 && (unknown.json["error"] as? String)?.contains("decline") == true)
            let wrongShape = try await fixture.raw("/_mock/next-answers", ["answers": "decline"], headers: [])
            #expect(wrongShape.status == 400)
            let read = try await fixture.http.execute(
                CurlRequest(
                    method: "GET", url: fixture.mock.baseURL + "/_mock/next-answers", trust: TLSTrust(caPEM: TestMaterial.shared.caPEM)))
            #expect(read.status == 405)
            let declined = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: nil))
            #expect(declined.status == .authorized, "nothing was queued by the refused calls")
        }
    }
}
