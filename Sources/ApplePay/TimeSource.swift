import Foundation

/// Where "now" comes from for every check of certificate validity or token age.
///
/// Production uses ``system``; tests and `--at` use ``fixed(_:)`` so expired real vectors
/// verify at their signing time.
public struct TimeSource: Sendable {
    private let read: @Sendable () -> Date

    public init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
    }

    public var now: Date { read() }

    public static let system = TimeSource { Date() }

    public static func fixed(_ date: Date) -> TimeSource {
        TimeSource { date }
    }
}
