import Foundation
import OrchardCore
import Testing

/// The guard's decisions on their own: each record's next state from what a check saw, when it
/// is due again, and the one event (or none) each change reports.
@Suite("Guard policy: states, warnings, confirmation, repairs and the one event per change")
struct GuardPolicyTests {
    let policy = GuardPolicy(interval: 3600, recheck: 60, maximumRepairs: 3)
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400

    static func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }

    static func record(_ kind: GuardCheckKind, target: String = "shop.example") -> GuardRecord {
        GuardRecord(subject: GuardSubject(merchantIdentifier: "merchant.test", kind: kind, target: target), nextCheckAt: start)
    }

    /// Moves `record` on by one check at `seconds`; the event that change reports.
    func check(_ record: inout GuardRecord, _ observation: GuardObservation, at seconds: TimeInterval) -> WebhookEventType? {
        let (next, event) = policy.next(after: record, observed: observation, at: Self.at(seconds))
        record = next
        return event
    }

    /// A certificate observed at `seconds` with `daysLeft` days (and an hour) to go.
    func certificate(_ record: inout GuardRecord, daysLeft: Double, at seconds: TimeInterval) -> WebhookEventType? {
        let notValidAfter = Self.at(seconds + daysLeft * Self.day + 3600)
        return check(&record, .certificate(notValidAfter: notValidAfter, "valid until \(notValidAfter)"), at: seconds)
    }

    @Test("a first check that finds all well is ok and reports nothing; ok again reports nothing")
    func pendingToOk() {
        var record = Self.record(.domainFile)
        #expect(check(&record, .ok("served byte for byte"), at: 0) == nil)
        #expect(record.state == .ok && record.changedAt == Self.at(0) && record.checkedAt == Self.at(0))
        #expect(record.nextCheckAt == Self.at(3540) && record.detail == "served byte for byte" && record.failures == 0)
        #expect(check(&record, .ok("served byte for byte"), at: 3600) == nil)
        #expect(record.changedAt == Self.at(0), "no change, no new changedAt")
    }

    @Test("a first failure is not confirmed: looked at again soon, nothing reported; the second is, once, with the check's event")
    func confirmation() {
        let expected: [GuardCheckKind: WebhookEventType] = [
            .domainFile: .domainVerificationFailed, .registration: .registrationDrift,
        ]
        for (kind, event) in expected {
            var record = Self.record(kind)
            #expect(check(&record, .ok("fine"), at: 0) == nil)
            #expect(check(&record, .failing("answered 403"), at: 3600) == nil, "\(kind): unconfirmed")
            #expect(record.state == .ok && record.failures == 1 && record.firstFailureAt == Self.at(3600) && record.changedAt == Self.at(0))
            #expect(record.nextCheckAt == Self.at(3660), "\(kind): rechecked after 60 s, well within the interval")
            #expect(record.detail == "answered 403")

            #expect(check(&record, .failing("answered 403"), at: 3660) == event, "\(kind): confirmed")
            #expect(
                record.state == .failing && record.failures == 2 && record.firstFailureAt == Self.at(3600), "since the first failed check")
            #expect(record.changedAt == Self.at(3660) && record.nextCheckAt == Self.at(7200), "then at the interval less the recheck")
            #expect(check(&record, .failing("answered 404"), at: 7260) == nil, "\(kind): still failing, reported once")
            #expect(record.failures == 3 && record.firstFailureAt == Self.at(3600) && record.changedAt == Self.at(3660))
        }
    }

    @Test("a failure that clears before it is confirmed reports nothing and starts the count again")
    func unconfirmedClears() {
        var record = Self.record(.domainFile)
        #expect(check(&record, .ok("fine"), at: 0) == nil)
        #expect(check(&record, .failing("timed out"), at: 3600) == nil)
        #expect(check(&record, .ok("fine"), at: 3660) == nil)
        #expect(record.state == .ok && record.failures == 0 && record.nextCheckAt == Self.at(7200))
        #expect(check(&record, .failing("timed out"), at: 7260) == nil, "one failure again: unconfirmed again")
        #expect(record.state == .ok && record.failures == 1)
    }

    @Test("a pending record's first failures are confirmed the same way")
    func pendingFailure() {
        var record = Self.record(.domainFile)
        #expect(check(&record, .failing("redirected"), at: 0) == nil)
        #expect(record.state == .pending && record.failures == 1)
        #expect(check(&record, .failing("redirected"), at: 60) == .domainVerificationFailed)
        #expect(record.state == .failing)
    }

    @Test("failing then ok is restored, reported once; the run of failures is forgotten")
    func restored() {
        let expected: [GuardCheckKind: WebhookEventType] = [
            .domainFile: .domainVerificationRestored, .registration: .registrationRestored,
        ]
        for (kind, event) in expected {
            var record = Self.record(kind)
            _ = check(&record, .failing("x"), at: 0)
            #expect(check(&record, .failing("x"), at: 60) != nil)
            #expect(check(&record, .ok("served again"), at: 3660) == event, "\(kind)")
            #expect(record.state == .ok && record.failures == 0 && record.repairs == 0 && record.firstFailureAt == nil)
            #expect(record.changedAt == Self.at(3660))
            #expect(check(&record, .ok("served again"), at: 7260) == nil, "\(kind): restored once")
        }
    }

    @Test(
        "a certificate at 40, 29, 14, 6 days and expired: ok, then each warning and the expiry once, each also when checked again",
        arguments: [GuardCheckKind.domainCertificate, .identityCertificate, .processingCertificate])
    func certificateStages(kind: GuardCheckKind) {
        var record = Self.record(kind)
        let steps: [(days: Double, state: GuardState, stage: Int, event: WebhookEventType?)] = [
            (40, .ok, 0, nil), (29, .expiring, 30, .certificateExpiring), (14, .expiring, 15, .certificateExpiring),
            (6, .expiring, 7, .certificateExpiring), (-1, .failing, 0, .certificateExpired),
        ]
        var seconds: TimeInterval = 0
        for step in steps {
            #expect(certificate(&record, daysLeft: step.days, at: seconds) == step.event, "\(step.days) days")
            #expect(record.state == step.state && record.stage == step.stage, "\(step.days) days")
            #expect(record.changedAt == Self.at(seconds) && record.expiresAt == Self.at(seconds + step.days * Self.day + 3600))
            #expect(record.nextCheckAt == Self.at(seconds + 3540), "a certificate's state needs no second look")
            // The same certificate an hour later: the same stage, nothing new to say.
            #expect(certificate(&record, daysLeft: step.days - 1.0 / 24, at: seconds + 3600) == nil, "\(step.days) days, again")
            #expect(record.state == step.state && record.stage == step.stage && record.changedAt == Self.at(seconds))
            seconds += 86_400
        }
        #expect(record.firstFailureAt == Self.at(4 * 86_400), "expired since the check that found it so")
    }

    @Test("a renewal is reported: expiring or expired, then valid for longer", arguments: [-3.0, 6, 20])
    func renewal(daysLeft: Double) {
        var record = Self.record(.identityCertificate)
        #expect(certificate(&record, daysLeft: daysLeft, at: 0) != nil)
        #expect(record.state == (daysLeft < 0 ? .failing : .expiring))
        #expect(certificate(&record, daysLeft: 790, at: 3600) == .certificateRenewed)
        #expect(record.state == .ok && record.stage == 0 && record.firstFailureAt == nil && record.changedAt == Self.at(3600))
        #expect(certificate(&record, daysLeft: 789, at: 7200) == nil)
    }

    @Test("a renewal that still leaves fewer than 30 days is a renewal at a later stage")
    func partialRenewal() {
        var record = Self.record(.processingCertificate)
        #expect(certificate(&record, daysLeft: 5, at: 0) == .certificateExpiring)
        #expect(certificate(&record, daysLeft: 25, at: 3600) == .certificateRenewed)
        #expect(record.state == .expiring && record.stage == 30)
    }

    @Test("an inconclusive check keeps the state, the stage and the run of failures; it reports nothing")
    func inconclusive() {
        var record = Self.record(.domainCertificate)
        #expect(certificate(&record, daysLeft: 10, at: 0) == .certificateExpiring)
        let before = record
        #expect(check(&record, .inconclusive("the domain did not answer"), at: 3600) == nil)
        #expect(record.state == .expiring && record.stage == 15 && record.expiresAt == before.expiresAt)
        #expect(record.changedAt == before.changedAt && record.checkedAt == Self.at(3600) && record.nextCheckAt == Self.at(7140))
        #expect(record.detail == "the domain did not answer")

        var failing = Self.record(.registration)
        _ = check(&failing, .failing("x"), at: 0)
        _ = check(&failing, .failing("x"), at: 60)
        #expect(check(&failing, .inconclusive("Apple did not answer"), at: 3660) == nil)
        #expect(failing.state == .failing && failing.failures == 2 && failing.firstFailureAt == Self.at(0))
        #expect(check(&failing, .ok("every domain at Apple"), at: 7260) == .registrationRestored, "then restored, once")
    }

    @Test("a drift the guard repaired fails at once, is looked at again soon, and repairs stop at the maximum")
    func repairs() {
        var record = Self.record(.registration, target: "partner-1")
        #expect(check(&record, .ok("every domain at Apple"), at: 0) == nil)
        #expect(policy.mayRepair(record))
        #expect(check(&record, .failing("shop.example missing at Apple; registered again", repaired: true), at: 3600) == .registrationDrift)
        #expect(record.state == .failing && record.repairs == 1 && record.failures == 1 && record.nextCheckAt == Self.at(3660))
        #expect(record.firstFailureAt == Self.at(3600))
        #expect(policy.mayRepair(record))
        #expect(check(&record, .failing("still missing; registered again", repaired: true), at: 3660) == nil, "reported once")
        #expect(check(&record, .failing("still missing; registered again", repaired: true), at: 3720) == nil)
        #expect(record.repairs == 3 && !policy.mayRepair(record), "three repairs: left to an operator")
        #expect(check(&record, .failing("still missing"), at: 3780) == nil)
        #expect(record.repairs == 3 && record.nextCheckAt == Self.at(7320), "no repair: back to the interval")
        #expect(check(&record, .ok("every domain at Apple"), at: 7380) == .registrationRestored)
        #expect(record.repairs == 0 && policy.mayRepair(record), "a new run of failures may be repaired again")

        for kind in GuardCheckKind.allCases where kind != .registration {
            #expect(!policy.mayRepair(Self.record(kind)), "\(kind): nothing the guard repairs")
        }
        #expect(!GuardPolicy(interval: 3600, recheck: 60, maximumRepairs: 0).mayRepair(Self.record(.registration)))
    }

    @Test("days left are whole days rounded down, 0 once expired, bounded for a far-future date")
    func daysLeft() {
        let now = Self.start
        #expect(GuardPolicy.daysLeft(notValidAfter: now.addingTimeInterval(Self.day * 30 - 1), at: now) == 29)
        #expect(GuardPolicy.daysLeft(notValidAfter: now.addingTimeInterval(Self.day * 30), at: now) == 30)
        #expect(GuardPolicy.daysLeft(notValidAfter: now.addingTimeInterval(-Self.day), at: now) == 0)
        #expect(GuardPolicy.daysLeft(notValidAfter: now, at: now) == 0)
        let year9999 = Date(timeIntervalSince1970: 253_402_300_799)
        #expect(GuardPolicy.daysLeft(notValidAfter: year9999, at: now) == 1_000_000)
        #expect(GuardPolicy.daysLeft(notValidAfter: .distantFuture, at: .distantPast) == 1_000_000)
        #expect(GuardPolicy.standing(notValidAfter: year9999, at: now) == (.ok, 0))
        #expect(GuardPolicy.standing(notValidAfter: now, at: now) == (.failing, 0), "valid until now: expired")
        #expect(GuardPolicy.standing(notValidAfter: now.addingTimeInterval(Self.day * 7 - 1), at: now) == (.expiring, 7))
        #expect(GuardPolicy.standing(notValidAfter: now.addingTimeInterval(Self.day * 7), at: now) == (.expiring, 15))
    }

    @Test("the recheck is at most half the interval, so a failure is confirmed within one interval")
    func recheckBounded() {
        #expect(GuardPolicy(interval: 300, recheck: 900).recheck == 150)
    }
}
