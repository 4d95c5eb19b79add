import Foundation

/// What a payment sets up beyond itself (Apple Pay JS 14+): a subscription (`recurring`), one
/// later charge (`deferred`: hotels, pre-orders) or top-ups when a balance runs low
/// (`automaticReload`). The sheet shows it, and the token then carries a merchant token.
///
/// Amounts are minor units and dates ISO-8601 strings, as the payments API takes them; each
/// kind has only its own billing, exactly as Apple's request dictionaries have.
public struct PaymentAgreement: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case recurring, deferred, automaticReload
    }

    public var type: Kind
    /// Shown on the sheet and in Wallet ("Orchard Coffee Club, monthly").
    public var paymentDescription: String
    /// The terms the shopper agrees to, shown on the sheet.
    public var billingAgreement: String?
    /// Where the shopper manages or cancels the agreement; https only.
    public var managementURL: String
    /// `recurring`: the regular charge.
    public var regularBilling: Billing?
    /// `recurring`: a trial before it.
    public var trialBilling: Billing?
    /// `deferred`: the one later charge, with its `paymentDate`.
    public var deferredBilling: Billing?
    /// `deferred`: until when the shopper may cancel for free.
    public var freeCancellationDate: String?
    /// `deferred`: the time zone of `freeCancellationDate` (an IANA name).
    public var freeCancellationDateTimeZone: String?
    /// `automaticReload`: the top-up, with its `thresholdAmount`.
    public var automaticReloadBilling: Billing?

    /// One line of an agreement: what is charged, and when.
    public struct Billing: Sendable, Equatable, Codable {
        public var label: String
        /// Minor units.
        public var amount: Int64
        /// `recurring`: the first charge (default: now) and the last.
        public var startDate: String?
        public var endDate: String?
        /// `recurring`: `year`, `month` (the default), `day`, `hour` or `minute`, times `intervalCount` (default 1).
        public var intervalUnit: IntervalUnit?
        public var intervalCount: Int?
        /// `deferred`: when the charge is made.
        public var paymentDate: String?
        /// `automaticReload`: the balance (minor units) below which the top-up is charged.
        public var thresholdAmount: Int64?

        public init(
            label: String, amount: Int64, startDate: String? = nil, endDate: String? = nil, intervalUnit: IntervalUnit? = nil,
            intervalCount: Int? = nil, paymentDate: String? = nil, thresholdAmount: Int64? = nil
        ) {
            self.label = label
            self.amount = amount
            self.startDate = startDate
            self.endDate = endDate
            self.intervalUnit = intervalUnit
            self.intervalCount = intervalCount
            self.paymentDate = paymentDate
            self.thresholdAmount = thresholdAmount
        }
    }

    public enum IntervalUnit: String, Sendable, Codable, CaseIterable {
        case year, month, day, hour, minute
    }

    public init(
        type: Kind, paymentDescription: String, billingAgreement: String? = nil, managementURL: String,
        regularBilling: Billing? = nil, trialBilling: Billing? = nil, deferredBilling: Billing? = nil,
        freeCancellationDate: String? = nil, freeCancellationDateTimeZone: String? = nil, automaticReloadBilling: Billing? = nil
    ) {
        self.type = type
        self.paymentDescription = paymentDescription
        self.billingAgreement = billingAgreement
        self.managementURL = managementURL
        self.regularBilling = regularBilling
        self.trialBilling = trialBilling
        self.deferredBilling = deferredBilling
        self.freeCancellationDate = freeCancellationDate
        self.freeCancellationDateTimeZone = freeCancellationDateTimeZone
        self.automaticReloadBilling = automaticReloadBilling
    }

    /// The largest amount a billing line may carry (``Money/maximumMinorUnits``, as everywhere).
    public static let maximumAmount = Money.maximumMinorUnits
}

extension PaymentAgreement {
    /// Every rule Apple's sheet and a processor's stored-credential agreement rely on, at `now`;
    /// the first broken one is thrown, naming its field.
    public func check(now: Date) throws(ApplePayError) {
        try Self.text(paymentDescription, "paymentDescription", limit: 256)
        if let billingAgreement { try Self.text(billingAgreement, "billingAgreement", limit: 1000) }
        try Self.httpsURL(managementURL, "managementURL")
        let present: [(String, Bool)] = [
            ("regularBilling", regularBilling != nil), ("trialBilling", trialBilling != nil),
            ("deferredBilling", deferredBilling != nil), ("freeCancellationDate", freeCancellationDate != nil),
            ("freeCancellationDateTimeZone", freeCancellationDateTimeZone != nil),
            ("automaticReloadBilling", automaticReloadBilling != nil),
        ]
        let allowed: Set<String> =
            switch type {
            case .recurring: ["regularBilling", "trialBilling"]
            case .deferred: ["deferredBilling", "freeCancellationDate", "freeCancellationDateTimeZone"]
            case .automaticReload: ["automaticReloadBilling"]
            }
        if let stray = present.first(where: { $0.1 && !allowed.contains($0.0) }) {
            throw Self.invalid("\(stray.0) does not belong to a \(type.rawValue) agreement")
        }
        switch type {
        case .recurring: try checkRecurring(now: now)
        case .deferred: try checkDeferred(now: now)
        case .automaticReload: try checkReload()
        }
    }

    private func checkRecurring(now: Date) throws(ApplePayError) {
        guard let regular = regularBilling else { throw Self.invalid("a recurring agreement needs regularBilling") }
        let regularStart = try Self.checkPeriod(regular, "regularBilling", now: now)
        if let trial = trialBilling {
            let trialStart = try Self.checkPeriod(trial, "trialBilling", now: now)
            let trialEnd = try trial.endDate.map { date throws(ApplePayError) in try Self.date(date, "trialBilling.endDate") }
            if let trialEnd, let regularStart, regularStart < trialEnd {
                throw Self.invalid("regularBilling.startDate must not be before trialBilling.endDate")
            }
            if let trialStart, let regularStart, regularStart < trialStart {
                throw Self.invalid("regularBilling.startDate must not be before trialBilling.startDate")
            }
        }
    }

    private func checkDeferred(now: Date) throws(ApplePayError) {
        guard let billing = deferredBilling else { throw Self.invalid("a deferred agreement needs deferredBilling") }
        try Self.line(billing, "deferredBilling", allowing: ["paymentDate"])
        guard let text = billing.paymentDate else { throw Self.invalid("deferredBilling.paymentDate is required") }
        let paymentDate = try Self.date(text, "deferredBilling.paymentDate")
        guard paymentDate > now else { throw Self.invalid("deferredBilling.paymentDate must be in the future") }
        if let text = freeCancellationDate {
            let until = try Self.date(text, "freeCancellationDate")
            guard until > now, until <= paymentDate else {
                throw Self.invalid("freeCancellationDate must be in the future and not after deferredBilling.paymentDate")
            }
        }
        if let zone = freeCancellationDateTimeZone {
            guard freeCancellationDate != nil else { throw Self.invalid("freeCancellationDateTimeZone needs freeCancellationDate") }
            // Looked up among the known names, never parsed: Foundation's own parsing of
            // `GMT+01:x0`-like names overflows a UInt8 and traps (swift-foundation 6.3.1).
            guard Self.timeZones.contains(zone) else {
                throw Self.invalid("freeCancellationDateTimeZone must be an IANA time zone like Europe/Paris")
            }
        }
    }

    /// The IANA time zone names this system knows, and UTC.
    static let timeZones = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "GMT"])

    private func checkReload() throws(ApplePayError) {
        guard let billing = automaticReloadBilling else { throw Self.invalid("an automaticReload agreement needs automaticReloadBilling") }
        try Self.line(billing, "automaticReloadBilling", allowing: ["thresholdAmount"])
        guard let threshold = billing.thresholdAmount else { throw Self.invalid("automaticReloadBilling.thresholdAmount is required") }
        guard (1...Self.maximumAmount).contains(threshold) else {
            throw Self.invalid("automaticReloadBilling.thresholdAmount must be 1–\(Self.maximumAmount) minor units")
        }
    }

    /// A recurring line: its dates in order and not in the past, its interval sane; returns its start.
    private static func checkPeriod(_ billing: Billing, _ name: String, now: Date) throws(ApplePayError) -> Date? {
        try line(billing, name, allowing: ["startDate", "endDate", "intervalUnit", "intervalCount"])
        if let count = billing.intervalCount, !(1...999).contains(count) {
            throw invalid("\(name).intervalCount must be 1–999")
        }
        // A start a little in the past is today's first charge, written a moment ago.
        let start = try billing.startDate.map { text throws(ApplePayError) in try date(text, "\(name).startDate") }
        if let start, start < now.addingTimeInterval(-86_400) { throw invalid("\(name).startDate must not be in the past") }
        if let text = billing.endDate {
            let end = try date(text, "\(name).endDate")
            guard end > (start ?? now) else { throw invalid("\(name).endDate must be after its startDate (or now)") }
        }
        return start
    }

    /// The label and amount every line has, and no field of another kind's line.
    private static func line(_ billing: Billing, _ name: String, allowing: Set<String>) throws(ApplePayError) {
        try text(billing.label, "\(name).label", limit: 128)
        guard (1...maximumAmount).contains(billing.amount) else { throw invalid("\(name).amount must be 1–\(maximumAmount) minor units") }
        let fields: [(String, Bool)] = [
            ("startDate", billing.startDate != nil), ("endDate", billing.endDate != nil), ("intervalUnit", billing.intervalUnit != nil),
            ("intervalCount", billing.intervalCount != nil), ("paymentDate", billing.paymentDate != nil),
            ("thresholdAmount", billing.thresholdAmount != nil),
        ]
        if let stray = fields.first(where: { $0.1 && !allowing.contains($0.0) }) {
            throw invalid("\(name).\(stray.0) does not belong here (this line takes: \(allowing.sorted().joined(separator: ", ")))")
        }
    }

    static func text(_ value: String, _ name: String, limit: Int) throws(ApplePayError) {
        guard !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, value.count <= limit else {
            throw invalid("\(name) must be 1–\(limit) characters")
        }
    }

    static func httpsURL(_ value: String, _ name: String) throws(ApplePayError) {
        guard value.utf8.count <= 2048, let url = URL(string: value), url.scheme == "https", let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil
        else {
            throw invalid("\(name) must be an https URL (like https://shop.example/account/subscription)")
        }
    }

    /// An ISO-8601 instant (`2027-01-31T09:00:00Z`, or with an offset).
    static func date(_ text: String, _ name: String) throws(ApplePayError) -> Date {
        guard let date = try? Date(text, strategy: .iso8601) else {
            throw invalid("\(name) must be an ISO-8601 date and time like 2027-01-31T09:00:00Z")
        }
        return date
    }

    static func invalid(_ message: String) -> ApplePayError {
        ApplePayError(.invalidAgreement, "agreement: \(message)")
    }
}
