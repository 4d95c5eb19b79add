import Foundation

/// What one check found.
public enum GuardObservation: Sendable, Equatable {
    /// As Apple needs it.
    case ok(String)
    /// Wrong: a domain not served as Apple fetches it, a registration missing domains at Apple.
    /// `repaired`: the guard itself already put right what it owns (a registration sent again).
    case failing(String, repaired: Bool = false)
    /// A certificate valid until `notValidAfter`: the policy reads the state from the days left.
    case certificate(notValidAfter: Date, String)
    /// Nothing could be learnt (the domain's certificate was not reachable, Apple did not answer
    /// the details call): the state stays as it was.
    case inconclusive(String)
}

/// The guard's decisions: each record's next state from what a check observed, when it is due
/// again, whether it may be repaired, and which event (at most one) reports the change. An event
/// is sent once per change of state (or of warning stage), never once per check.
public struct GuardPolicy: Sendable {
    /// The warnings ahead of a certificate's expiry, in days, largest first.
    public static let warningDays = [30, 15, 7]

    /// The longest a failure goes unreported: a check every `interval − recheck`, and the
    /// confirming second look `recheck` later.
    public var interval: TimeInterval
    /// After an unconfirmed failure or a repair: the second look that confirms it (at most half
    /// the interval).
    public var recheck: TimeInterval
    /// Repairs tried per run of failures before the guard leaves it to an operator.
    public var maximumRepairs: Int

    public init(interval: TimeInterval, recheck: TimeInterval, maximumRepairs: Int = 3) {
        self.interval = interval
        self.recheck = min(recheck, interval / 2)
        self.maximumRepairs = maximumRepairs
    }

    /// Whether a failing `record` may be repaired by the guard now: registrations only, and at
    /// most ``maximumRepairs`` times in one run of failures.
    public func mayRepair(_ record: GuardRecord) -> Bool {
        record.subject.kind == .registration && record.repairs < maximumRepairs
    }

    /// The record after `observation`, and the event that reports the change, if any.
    public func next(after record: GuardRecord, observed observation: GuardObservation, at now: Date) -> (
        record: GuardRecord, event: WebhookEventType?
    ) {
        var next = record
        next.checkedAt = now
        next.nextCheckAt = now.addingTimeInterval(interval - recheck)
        switch observation {
        case .inconclusive(let detail):
            next.detail = detail
            return (next, nil)
        case .ok(let detail):
            next.detail = detail
            next.expiresAt = nil
            settle(&next, state: .ok, stage: 0, at: now)
        case .certificate(let notValidAfter, let detail):
            next.detail = detail
            next.expiresAt = notValidAfter
            let (state, stage) = Self.standing(notValidAfter: notValidAfter, at: now)
            settle(&next, state: state, stage: stage, at: now)
        case .failing(let detail, let repaired):
            next.detail = detail
            next.failures = record.failures.addingReportingOverflow(1).overflow ? record.failures : record.failures + 1
            next.firstFailureAt = record.firstFailureAt ?? now
            if repaired { next.repairs = min(record.repairs, maximumRepairs) + 1 }
            if repaired || (record.state != .failing && next.failures < 2) {
                // A second look first: one lost packet is not a switched-off domain.
                next.nextCheckAt = now.addingTimeInterval(recheck)
            }
            if record.state != .failing && next.failures >= 2 || repaired && record.state != .failing {
                next.state = .failing
                next.stage = 0
                next.changedAt = now
            }
        }
        return (next, Self.event(from: record, to: next))
    }

    /// A certificate's state and warning stage from the days it has left.
    public static func standing(notValidAfter: Date, at now: Date) -> (GuardState, Int) {
        guard notValidAfter > now else { return (.failing, 0) }
        let days = daysLeft(notValidAfter: notValidAfter, at: now)
        guard let stage = warningDays.last(where: { days < $0 }) else { return (.ok, 0) }
        return (.expiring, stage)
    }

    /// Whole days left, rounded down; 0 once expired. Bounded, so a certificate valid until the
    /// year 9999 does not trap.
    public static func daysLeft(notValidAfter: Date, at now: Date) -> Int {
        let seconds = notValidAfter.timeIntervalSince(now)
        guard seconds > 0 else { return 0 }
        return Int(min(seconds / 86_400, 1_000_000).rounded(.down))
    }

    private func settle(_ record: inout GuardRecord, state: GuardState, stage: Int, at now: Date) {
        if state == .failing {
            record.firstFailureAt = record.firstFailureAt ?? now
        } else {
            record.firstFailureAt = nil
            record.failures = 0
            record.repairs = 0
        }
        if record.state != state || record.stage != stage { record.changedAt = now }
        record.state = state
        record.stage = stage
    }

    /// The one event a change reports; nil when nothing the shop must hear changed (a first
    /// check that finds all well, a failure not yet confirmed, the same state again).
    static func event(from old: GuardRecord, to new: GuardRecord) -> WebhookEventType? {
        let kind = new.subject.kind
        switch (old.state, new.state) {
        case (.failing, .failing), (.ok, .ok), (.pending, .ok), (_, .pending):
            return nil
        case (.expiring, .expiring):
            // A later warning (30 → 15 → 7 days); a larger stage is a renewal still within 30 days.
            guard new.stage != old.stage else { return nil }
            return new.stage < old.stage ? .certificateExpiring : .certificateRenewed
        case (_, .expiring):
            return .certificateExpiring
        case (_, .failing):
            switch kind {
            case .domainFile: return .domainVerificationFailed
            case .registration: return .registrationDrift
            case .domainCertificate, .identityCertificate, .processingCertificate: return .certificateExpired
            }
        case (.failing, .ok), (.expiring, .ok):
            switch kind {
            case .domainFile: return .domainVerificationRestored
            case .registration: return .registrationRestored
            case .domainCertificate, .identityCertificate, .processingCertificate: return .certificateRenewed
            }
        }
    }
}
