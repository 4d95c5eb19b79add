import ApplePay
import Foundation

/// The dates a recurring agreement charges on: from its regular billing's `startDate` (else the
/// end of its trial, else the first payment), every `intervalCount` `intervalUnit`s, until its
/// `endDate`. Calendar units are counted in UTC on the Gregorian calendar, each date from the
/// start (so 31 January, monthly, gives 28 February then 31 March, never drifting).
public struct RecurringSchedule: Sendable {
    let start: Date
    let end: Date?
    let unit: Calendar.Component
    let count: Int

    /// The most dates one call looks at: bounds the work whatever the agreement says.
    static let maximumSteps = 10_000

    public init(agreement: PaymentAgreement, firstPayment: Date) {
        let regular = agreement.regularBilling
        let parse = { (text: String?) in text.flatMap { try? Date($0, strategy: .iso8601) } }
        start = parse(regular?.startDate) ?? parse(agreement.trialBilling?.endDate) ?? firstPayment
        end = parse(regular?.endDate)
        unit =
            switch regular?.intervalUnit ?? .month {
            case .year: .year
            case .month: .month
            case .day: .day
            case .hour: .hour
            case .minute: .minute
            }
        count = min(max(regular?.intervalCount ?? 1, 1), 999)
    }

    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        return calendar
    }()

    /// The `n`th date (0: the start); nil past the calendar's range.
    func date(_ n: Int) -> Date? {
        let (steps, overflow) = n.multipliedReportingOverflow(by: count)
        guard !overflow else { return nil }
        return Self.calendar.date(byAdding: unit, value: steps, to: start)
    }

    /// Up to `limit` dates after `now`, not after the end.
    public func dates(after now: Date, limit: Int) -> [Date] {
        guard limit > 0 else { return [] }
        var n = firstIndex(after: now)
        var dates: [Date] = []
        var steps = 0
        while dates.count < limit, steps < Self.maximumSteps, let date = date(n) {
            steps += 1
            n += 1
            if let end, date > end { break }
            if date > now { dates.append(date) }
        }
        return dates
    }

    /// Whether the schedule ends with the last of `dates` (it has an end, and no date follows them).
    public func endsWithin(_ listed: [Date]) -> Bool {
        guard let end, let last = listed.last else { return false }
        return dates(after: last, limit: 1).isEmpty && last <= end
    }

    /// An index at or a little before the first date after `now`, without stepping there one by one.
    private func firstIndex(after now: Date) -> Int {
        guard now > start else { return 0 }
        let elapsed = Self.calendar.dateComponents([unit], from: start, to: now).value(for: unit) ?? 0
        return max(0, elapsed / count - 1)
    }
}
