import Foundation
import OrchardCore
import Testing

@Suite("Record identifiers")
struct RecordIdentifierTests {
    @Test("IDs are 32 lowercase hex digits, all different, and none holds 13+ decimal digits in a row (a card number's shape)")
    func noCardShapedIDs() {
        // Without the redraw about one ID in a hundred holds such a run: 20,000 would show ~200.
        let ids = (0..<20_000).map { _ in RecordIdentifier.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(id)")
            #expect(id.firstMatch(of: /[0-9]{13}/) == nil, "\(id)")
        }
        #expect(RecordIdentifier.isLookup(String(repeating: "a", count: 64)))
        #expect(!RecordIdentifier.isLookup(String(repeating: "a", count: 65)))
    }

    @Test("API key IDs are never card-number-shaped either")
    func apiKeyIDs() {
        let date = Date()
        for _ in 0..<5_000 {
            let id = APIKeyRecord.generate(merchantIdentifier: "merchant.example", at: date).record.id
            #expect(id.hasPrefix("key_") && id.utf8.count == 20, "\(id)")
            #expect(id.firstMatch(of: /[0-9]{13}/) == nil, "\(id)")
        }
    }
}
