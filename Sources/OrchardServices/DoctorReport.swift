import Foundation

/// One check of `orchard doctor`: what was checked, whether it holds, and what was found or what to do.
public struct DoctorCheck: Codable, Sendable, Equatable {
    /// The merchant (or platform) the check is about.
    public var subject: String
    /// "identity", "merchant ID", "association file", "processing key 1", "session shop.example".
    public var check: String
    public var passed: Bool
    public var detail: String

    public init(subject: String, check: String, passed: Bool, detail: String) {
        self.subject = subject
        self.check = check
        self.passed = passed
        self.detail = detail
    }

    /// `✓ merchant.x identity: …` or `✗ …`.
    public var line: String { "\(passed ? "✓" : "✗") \(subject) \(check): \(detail)" }
}

/// Every check, in order; it passes only when all of them do.
public struct DoctorReport: Encodable, Sendable, Equatable {
    public var checks: [DoctorCheck]
    public var passed: Bool { checks.allSatisfy(\.passed) }

    public init(checks: [DoctorCheck]) {
        self.checks = checks
    }

    /// One line per check.
    public var text: String { checks.map(\.line).joined(separator: "\n") }

    enum CodingKeys: String, CodingKey { case checks, passed }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(checks, forKey: .checks)
        try container.encode(passed, forKey: .passed)
    }
}
