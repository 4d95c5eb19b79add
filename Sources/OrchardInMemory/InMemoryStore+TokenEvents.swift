import Foundation
import OrchardCore
import Synchronization

/// The token-event inbox in memory, with the SQL stores' semantics (the contract tests run all three).
extension InMemoryStore {
    public func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        state.withLock { state in
            if state.tokenEvents.contains(where: { $0.merchantIdentifier == item.merchantIdentifier && $0.eventId == item.eventId }) {
                return .duplicate
            }
            guard state.tokenEvents.count(where: { $0.source == item.source && $0.state == .pending }) < maxPendingFromSource else {
                return .sourceFull
            }
            state.tokenEvents.append(item)
            return .recorded
        }
    }

    public func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        state.withLock { state in
            let due = state.tokenEvents.indices.filter {
                state.tokenEvents[$0].state == .pending && (state.tokenEvents[$0].nextAttemptAt.map { $0 <= date } ?? false)
            }
            .sorted { (state.tokenEvents[$0].nextAttemptAt ?? date, $0) < (state.tokenEvents[$1].nextAttemptAt ?? date, $1) }
            let leased = Self.fairly(due, group: { state.tokenEvents[$0].source }, perGroup: perSource, total: limit)
            for index in leased { state.tokenEvents[index].nextAttemptAt = leaseEnd }
            return leased.map { state.tokenEvents[$0] }
        }
    }

    public func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        state.withLock { state in
            guard
                let index = state.tokenEvents.firstIndex(where: {
                    $0.id == attempt.itemId && $0.state == .pending && $0.attempts == attempt.attempts
                })
            else { return false }
            state.tokenEvents[index].state = attempt.state
            if attempt.counted {
                state.tokenEvents[index].attempts += 1
                state.tokenEvents[index].lastError = attempt.error
            }
            state.tokenEvents[index].nextAttemptAt = attempt.state == .pending ? attempt.nextAttemptAt : nil
            state.tokenEvents[index].finishedAt = attempt.state == .pending ? nil : attempt.at
            return true
        }
    }

    public func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        let wanted = Set(sources)
        return state.withLock { state in
            var standings: [String: TokenEventSourceStanding] = [:]
            for item in state.tokenEvents where wanted.contains(item.source) {
                guard let finished = item.finishedAt, item.state == .applied || item.state == .unknown else { continue }
                var standing = standings[item.source] ?? .unknown
                if item.state == .applied {
                    standing.lastConfirmed = max(standing.lastConfirmed ?? finished, finished)
                } else {
                    standing.lastRefuted = max(standing.lastRefuted ?? finished, finished)
                }
                standings[item.source] = standing
            }
            return standings
        }
    }

    public func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        state.withLock { state in
            state.tokenEvents.first { $0.merchantIdentifier == merchantIdentifier && $0.eventId == eventId }
        }
    }
}
