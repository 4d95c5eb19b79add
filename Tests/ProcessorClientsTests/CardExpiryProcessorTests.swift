import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// A card's new expiry from Apple's token event, handed to the processor that stored the
/// credential: Worldpay takes it on its token's `tokens:cardExpiryDate` link; Worldline Direct
/// has no call for it.
@Suite("Processors: a stored credential's new card expiry")
struct CardExpiryProcessorTests {
    @Test("Worldpay: the token's inquiry, then PUT {month, year} on the link it offers; the token keeps the new expiry")
    func worldpayUpdates() async throws {
        try await MandateFixture.with(.worldpay) { fixture in
            let mandate = try await fixture.mandate(.recurring)
            let before = fixture.mock.received.count
            #expect(try await fixture.processor.updateCredentialExpiry(mandate, month: 12, year: 2030))
            #expect(fixture.mock.storedTokens.first?.cardExpiryDate == MockCardExpiry(month: 12, year: 2030))
            let sent = Array(fixture.mock.received.dropFirst(before))
            #expect(sent.map(\.method) == ["GET", "PUT"])
            #expect(fixture.mock.baseURL + (sent.first?.path ?? "") == mandate.credential.reference, "the token's own href first")
            let put = try #require(sent.last)
            #expect(put.path.hasSuffix("/cardExpiryDate"), "the link the inquiry offered")
            #expect(
                put.header("Content-Type") == WorldpayProcessor.tokensMediaType && put.header("Accept") == WorldpayProcessor.tokensMediaType
            )
            let body = try #require(try JSONSerialization.jsonObject(with: Data(put.body)) as? [String: Any])
            #expect(body.count == 2 && body["month"] as? Int == 12 && body["year"] as? Int == 2030)
        }
    }

    @Test("Worldpay: a past expiry, a deleted token or a token off the configured origin is an error, and nothing changes")
    func worldpayRefusals() async throws {
        try await MandateFixture.with(.worldpay) { fixture in
            let mandate = try await fixture.mandate(.deferred)
            await #expect(throws: ProcessorActionError.self) {
                _ = try await fixture.processor.updateCredentialExpiry(mandate, month: 1, year: 2001)
            }
            #expect(fixture.mock.storedTokens.first?.cardExpiryDate == nil)
            try await fixture.processor.deleteCredential(mandate)
            await #expect(throws: ProcessorActionError.self) {
                _ = try await fixture.processor.updateCredentialExpiry(mandate, month: 12, year: 2030)
            }
            let before = fixture.mock.received.count
            let elsewhere = MandateFixture.mandate(
                .recurring, StoredCredential(reference: "https://evil.example/tokens/abc"), processor: "worldpay")
            await #expect(throws: ProcessorActionError.self) {
                _ = try await fixture.processor.updateCredentialExpiry(elsewhere, month: 12, year: 2030)
            }
            #expect(fixture.mock.received.count == before, "nothing sent off the configured origin")
        }
    }

    @Test("Worldline Direct has no call for a token's expiry: nothing is sent")
    func worldlineSendsNothing() async throws {
        try await MandateFixture.with(.worldlineEncrypted) { fixture in
            let mandate = try await fixture.mandate(.recurring)
            let before = fixture.mock.received.count
            #expect(try await fixture.processor.updateCredentialExpiry(mandate, month: 12, year: 2030) == false)
            #expect(fixture.mock.received.count == before)
        }
    }
}
