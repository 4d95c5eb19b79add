import Foundation
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardTesting
import Testing

/// `orchard guard status` on the demo's configuration, over records written to its store as the
/// guard writes them (through the policy and the store's compare-and-set).
@Suite("orchard guard status")
struct GuardCommandTests {
    @Test("nothing checked yet; a failing domain with its advice and first failure, exit 1; --problems leaves out what is ok")
    func status() async throws {
        try await KeysCommandTests.withSetup { setup in
            let empty = try await setup.orchard(["guard", "status"])
            #expect(empty.status == 0 && empty.lines == ["the guard has checked nothing yet (is orchard serve running?)"], "\(empty)")

            let configuration = try ServerConfiguration.load(path: setup.configuration)
            let store: any GuardRecords = try configuration.openSQLiteStore()
            let now = Date()
            let merchant = KeysCommandTests.merchant
            let file = GuardSubject(merchantIdentifier: merchant, kind: .domainFile, target: "localhost")
            let identity = GuardSubject(merchantIdentifier: merchant, kind: .identityCertificate, target: "0a:0b")
            try await store.syncGuardSubjects([file, identity], at: now)
            let policy = GuardPolicy(interval: 900, recheck: 60)
            for record in try await store.leaseGuardChecks(at: now, until: now.addingTimeInterval(300), limit: 10) {
                var next = record
                if record.subject.kind == .domainFile {
                    let answer = GuardObservation.failing("https://localhost/… answers HTTP 403: Apple needs 200 with the file")
                    next = policy.next(after: next, observed: answer, at: now).record
                    next = policy.next(after: next, observed: answer, at: now.addingTimeInterval(60)).record
                } else {
                    next = policy.next(after: next, observed: .ok("valid for a long time"), at: now).record
                }
                #expect(try await store.recordGuardCheck(next, events: []))
            }

            let all = try await setup.orchard(["guard", "status"])
            #expect(all.status == 1 && all.stderr == "orchard: 1 failing\n", "\(all.stderr)")
            #expect(all.stdout.contains("FAILING  \(merchant)  domain_file  localhost"))
            #expect(all.stdout.contains("answers HTTP 403: Apple needs 200 with the file") && all.stdout.contains("failing since"))
            #expect(all.stdout.contains("OK  \(merchant)  identity_certificate  0a:0b"))
            let problems = try await setup.orchard(["guard", "status", "--problems"])
            #expect(problems.status == 1 && !problems.stdout.contains("identity_certificate") && problems.stdout.contains("domain_file"))
            let other = try await setup.orchard(["guard", "status", "--merchant", "merchant.other"])
            #expect(other.status == 0 && other.lines == ["the guard has checked nothing yet (is orchard serve running?)"])
        }
    }
}
