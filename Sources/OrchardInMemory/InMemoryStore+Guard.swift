import Foundation
import OrchardCore
import Synchronization

/// The guard's records in memory, with the SQL stores' semantics (the contract tests run all three).
extension InMemoryStore {
    public func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws {
        state.withLock { state in
            state.guardRecords = state.guardRecords.filter { subjects.contains($0.key) }
            for subject in subjects where state.guardRecords[subject] == nil {
                state.guardRecords[subject] = GuardRecord(subject: subject, nextCheckAt: date)
            }
        }
    }

    public func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord] {
        state.withLock { state in
            let due = state.guardRecords.values.filter { $0.nextCheckAt <= date }
                .sorted { ($0.nextCheckAt, Self.order($0.subject)) < ($1.nextCheckAt, Self.order($1.subject)) }
                .prefix(max(limit, 0))
            return due.map { record in
                var leased = record
                leased.nextCheckAt = leaseEnd
                leased.version += 1
                state.guardRecords[record.subject] = leased
                return leased
            }
        }
    }

    public func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool {
        state.withLock { state in
            guard state.guardRecords[record.subject]?.version == record.version else { return false }
            var written = record
            written.version += 1
            state.guardRecords[record.subject] = written
            state.events += events
            return true
        }
    }

    public func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord] {
        state.withLock { state in
            state.guardRecords.values.filter { merchantIdentifier == nil || $0.subject.merchantIdentifier == merchantIdentifier }
                .sorted { Self.order($0.subject) < Self.order($1.subject) }
        }
    }

    /// Merchant, kind, target: the order every store lists records in.
    static func order(_ subject: GuardSubject) -> String {
        subject.merchantIdentifier + "\u{0}" + subject.kind.rawValue + "\u{0}" + subject.target
    }
}
