import Foundation
import OrchardCore
import Synchronization

/// Usage keys and announcements: each write under the one lock, as the SQL stores' transactions.
extension InMemoryStore {
    public func currentUsageKey(merchantIdentifier: String) async throws -> UsageKeyRecord? {
        state.withLock { $0.usageKeys.last { $0.merchantIdentifier == merchantIdentifier && $0.retiredAt == nil } }
    }

    public func addUsageKey(_ key: UsageKeyRecord, replacing: String?) async throws -> Bool {
        state.withLock { state in
            let current = state.usageKeys.lastIndex { $0.merchantIdentifier == key.merchantIdentifier && $0.retiredAt == nil }
            guard current.map({ state.usageKeys[$0].id }) == replacing else { return false }
            if let current { state.usageKeys[current].retiredAt = key.createdAt }
            state.usageKeys.append(key)
            return true
        }
    }

    public func markUsageDue(merchantIdentifier: String, merchantTokenIdentifier: String, at date: Date) async throws {
        state.withLock { state in
            let key = UsageAnnouncementKey(merchant: merchantIdentifier, token: merchantTokenIdentifier)
            guard var row = state.usageAnnouncements[key] else {
                state.usageAnnouncements[key] = UsageAnnouncement(
                    merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: merchantTokenIdentifier, dueAt: date)
                return
            }
            row.state = .pending
            row.dueAt = min(row.dueAt ?? date, date)
            row.version += 1
            state.usageAnnouncements[key] = row
        }
    }

    public func markAllUsageDue(merchantIdentifier: String, at date: Date) async throws -> Int {
        state.withLock { state in
            var count = 0
            for (key, var row) in state.usageAnnouncements where key.merchant == merchantIdentifier && row.state != .retired {
                row.state = .pending
                row.dueAt = min(row.dueAt ?? date, date)
                row.version += 1
                state.usageAnnouncements[key] = row
                count += 1
            }
            return count
        }
    }

    public func scheduleUsageAnnouncements(merchantIdentifiers: [String], at date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let merchants = Set(merchantIdentifiers)
            var count = 0
            for mandate in state.mandates where count < limit && mandate.state == .active && merchants.contains(mandate.merchantIdentifier)
            {
                guard let token = mandate.merchantTokenIdentifier else { continue }
                let key = UsageAnnouncementKey(merchant: mandate.merchantIdentifier, token: token)
                guard state.usageAnnouncements[key] == nil else { continue }
                state.usageAnnouncements[key] = UsageAnnouncement(
                    merchantIdentifier: mandate.merchantIdentifier, merchantTokenIdentifier: token, dueAt: date)
                count += 1
            }
            return count
        }
    }

    public func leaseUsageAnnouncements(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [UsageAnnouncement] {
        state.withLock { state in
            let due = state.usageAnnouncements.filter { ($0.value.dueAt ?? .distantFuture) <= date }
                .sorted {
                    ($0.value.dueAt ?? date, $0.key.merchant, $0.key.token) < ($1.value.dueAt ?? date, $1.key.merchant, $1.key.token)
                }
                .prefix(limit)
            return due.map { key, row in
                var leased = row
                leased.dueAt = leaseEnd
                leased.version += 1
                state.usageAnnouncements[key] = leased
                return leased
            }
        }
    }

    public func recordUsageAnnouncement(_ announcement: UsageAnnouncement, expectedVersion: Int) async throws -> Bool {
        state.withLock { state in
            let key = UsageAnnouncementKey(merchant: announcement.merchantIdentifier, token: announcement.merchantTokenIdentifier)
            guard let stored = state.usageAnnouncements[key] else { return false }
            let matched = stored.version == expectedVersion
            var written = announcement
            if !matched {
                written.state = stored.state
                written.dueAt = stored.dueAt
            }
            written.version = stored.version + 1
            state.usageAnnouncements[key] = written
            return matched
        }
    }

    public func usageAnnouncements(merchantTokenIdentifier: String) async throws -> [UsageAnnouncement] {
        state.withLock { state in
            state.usageAnnouncements.values.filter { $0.merchantTokenIdentifier == merchantTokenIdentifier }
                .sorted { $0.merchantIdentifier < $1.merchantIdentifier }
        }
    }

    public func payments(mandateId: String, limit: Int) async throws -> [PaymentRecord] {
        state.withLock { state in
            Array(state.payments.filter { $0.mandateId == mandateId }.reversed().prefix(limit))
        }
    }
}
