import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices
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
            // The demo's configuration disables the guard (see StoreCommandsTests for the enabled case).
            let disabled = "the guard is disabled (guard.enabled is false in the configuration), so it has checked nothing"
            #expect(empty.status == 0 && empty.lines == [disabled], "\(empty)")

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
            #expect(other.status == 0 && other.lines == [disabled])
        }
    }

    @Test("a domain's Location and Content-Type reach the terminal with their escape sequences shown, never run")
    func hostileHeadersEscaped() async throws {
        try await KeysCommandTests.withSetup { setup in
            let configuration = try ServerConfiguration.load(path: setup.configuration)
            let store: any GuardRecords = try configuration.openSQLiteStore()
            let now = Date()
            let file = GuardSubject(merchantIdentifier: KeysCommandTests.merchant, kind: .domainFile, target: "localhost")
            try await store.syncGuardSubjects([file], at: now)
            // A hostile domain's redirect: a title change, a screen clear, C1 CSI and a bidi override.
            let location = "https://evil.example/\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}31m\u{202E}gpj.exe"
            let verdict = DomainFileVerdict(
                ProbeAnswer(status: 302, contentType: "text/html\u{1B}[8m", location: location, body: []), domain: "localhost",
                expected: [1])
            let policy = GuardPolicy(interval: 900, recheck: 60)
            for record in try await store.leaseGuardChecks(at: now, until: now.addingTimeInterval(300), limit: 10) {
                let next = policy.next(after: record, observed: .failing(verdict.detail), at: now).record
                #expect(try await store.recordGuardCheck(next, events: []))
            }
            let shown = try await setup.orchard(["guard", "status"])
            let bytes = Array(shown.stdout.utf8)
            #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "\(shown.stdout.debugDescription)")
            #expect(!shown.stdout.unicodeScalars.contains { [0x9B, 0x202E].contains($0.value) }, "\(shown.stdout.debugDescription)")
            #expect(shown.stdout.contains(#"https://evil.example/\u{1B}]0;owned\u{7}\u{1B}[2J\u{9B}31m\u{202E}gpj.exe"#), "\(shown.stdout)")
        }
    }
}
