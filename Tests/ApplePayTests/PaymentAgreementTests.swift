import ApplePay
import Foundation
import Testing

/// One way to break an agreement, and the message that must name it.
struct Breakage: Sendable, CustomTestStringConvertible {
    var base: PaymentAgreement
    var change: @Sendable (inout PaymentAgreement) -> Void
    var expected: String

    init(_ base: PaymentAgreement, _ change: @escaping @Sendable (inout PaymentAgreement) -> Void, _ expected: String) {
        self.base = base
        self.change = change
        self.expected = expected
    }

    /// A break of the monthly recurring agreement.
    init(_ change: @escaping @Sendable (inout PaymentAgreement) -> Void, _ expected: String) {
        self.init(PaymentAgreementTests.monthly, change, expected)
    }

    var testDescription: String { expected }
}

/// Recurring, deferred and automatic-reload agreements: checked field by field against an
/// injected time, and emitted as the exact Apple Pay JS dictionaries.
@Suite("Payment agreements: checks and the Apple Pay JS fields")
struct PaymentAgreementTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z
    static let monthly = PaymentAgreement(
        type: .recurring, paymentDescription: "Coffee Club", billingAgreement: "Billed monthly until cancelled.",
        managementURL: "https://shop.example/account",
        regularBilling: .init(label: "Coffee Club", amount: 1250, startDate: "2027-02-01T00:00:00Z", intervalUnit: .month))
    static let hotel = PaymentAgreement(
        type: .deferred, paymentDescription: "Hotel stay", managementURL: "https://shop.example/bookings",
        deferredBilling: .init(label: "Two nights", amount: 32_000, paymentDate: "2027-03-01T12:00:00Z"),
        freeCancellationDate: "2027-02-27T12:00:00Z", freeCancellationDateTimeZone: "Europe/Paris")
    static let topUp = PaymentAgreement(
        type: .automaticReload, paymentDescription: "Transit card", managementURL: "https://shop.example/card",
        automaticReloadBilling: .init(label: "Top-up", amount: 2000, thresholdAmount: 500))

    @Test("a recurring, a deferred and a reload agreement pass and become Apple Pay JS's fields, amounts in decimal")
    func emitted() throws {
        for agreement in [Self.monthly, Self.hotel, Self.topUp] { try agreement.check(now: Self.now) }
        var request = ApplePayPaymentRequest(
            order: PricedOrder(
                currency: "EUR", lines: [], items: [], subtotal: 1250, shippingMethod: nil, couponCode: nil, discount: 0,
                shippingCountry: nil, total: 1250),
            countryCode: "FR", supportedNetworks: ["visa"], shippingMethods: [], requiredShippingContactFields: [],
            supportsCouponCode: false, displayName: "Shop", applicationData: [1])
        request.setAgreement(Self.monthly, tokenNotificationURL: "https://pay.shop.example/apple-pay/token-events/m1")
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])
        let recurring = try #require(json["recurringPaymentRequest"] as? [String: Any])
        let regular = try #require(recurring["regularBilling"] as? [String: Any])
        #expect(regular["amount"] as? String == "12.50" && regular["paymentTiming"] as? String == "recurring")
        #expect(regular["recurringPaymentIntervalUnit"] as? String == "month" && regular["recurringPaymentIntervalCount"] as? Int == 1)
        #expect(regular["recurringPaymentStartDate"] as? String == "2027-02-01T00:00:00Z")
        #expect(recurring["managementURL"] as? String == "https://shop.example/account")
        #expect(recurring["tokenNotificationURL"] as? String == "https://pay.shop.example/apple-pay/token-events/m1")
        #expect(json["deferredPaymentRequest"] == nil && json["automaticReloadPaymentRequest"] == nil, "one kind only")

        request.setAgreement(Self.topUp, tokenNotificationURL: nil)
        let reload = try #require(
            (try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])?["automaticReloadPaymentRequest"]
                as? [String: Any])
        let billing = try #require(reload["automaticReloadBilling"] as? [String: Any])
        #expect(billing["automaticReloadPaymentThresholdAmount"] as? String == "5.00" && billing["amount"] as? String == "20.00")
        #expect(billing["recurringPaymentIntervalUnit"] == nil, "no recurring fields on a reload line")
    }

    @Test(
        "each malformed agreement is refused with its own message",
        arguments: [
            Breakage({ $0.regularBilling = nil }, "a recurring agreement needs regularBilling"),
            Breakage({ $0.deferredBilling = .init(label: "x", amount: 1) }, "deferredBilling does not belong to a recurring agreement"),
            Breakage({ $0.managementURL = "http://shop.example/account" }, "managementURL must be an https URL"),
            Breakage({ $0.paymentDescription = " " }, "paymentDescription must be 1–256 characters"),
            Breakage({ $0.regularBilling?.amount = 0 }, "regularBilling.amount must be 1–99999999999 minor units"),
            Breakage({ $0.regularBilling?.startDate = "2026-12-01T00:00:00Z" }, "regularBilling.startDate must not be in the past"),
            Breakage({ $0.regularBilling?.startDate = "1 February" }, "regularBilling.startDate must be an ISO-8601 date"),
            Breakage({ $0.regularBilling?.endDate = "2027-01-20T00:00:00Z" }, "regularBilling.endDate must be after its startDate"),
            Breakage({ $0.regularBilling?.intervalCount = 0 }, "regularBilling.intervalCount must be 1–999"),
            Breakage({ $0.regularBilling?.thresholdAmount = 5 }, "regularBilling.thresholdAmount does not belong here"),
            Breakage(
                { $0.trialBilling = .init(label: "Trial", amount: 100, endDate: "2027-03-01T00:00:00Z") },
                "regularBilling.startDate must not be before trialBilling.endDate"
            ),
        ])
    func recurringRefusals(breakage: Breakage) {
        Self.expectRefused(breakage)
    }

    @Test(
        "deferred and reload agreements refuse what their kind cannot take",
        arguments: [
            Breakage(
                PaymentAgreementTests.hotel, { $0.deferredBilling?.paymentDate = "2027-01-01T00:00:00Z" },
                "paymentDate must be in the future"),
            Breakage(PaymentAgreementTests.hotel, { $0.deferredBilling?.paymentDate = nil }, "deferredBilling.paymentDate is required"),
            Breakage(
                PaymentAgreementTests.hotel, { $0.freeCancellationDate = "2027-03-02T00:00:00Z" },
                "freeCancellationDate must be in the future and not after"
            ),
            Breakage(PaymentAgreementTests.hotel, { $0.freeCancellationDateTimeZone = "Mars/Olympus" }, "must be an IANA time zone"),
            // Foundation's GMT-offset parser traps on a minute that is not a digit: never parsed.
            Breakage(PaymentAgreementTests.hotel, { $0.freeCancellationDateTimeZone = "GMT+01:x0" }, "must be an IANA time zone"),
            Breakage(PaymentAgreementTests.hotel, { $0.freeCancellationDateTimeZone = "GMT+01:/0" }, "must be an IANA time zone"),
            Breakage(PaymentAgreementTests.hotel, { $0.freeCancellationDateTimeZone = "GMT+01:é0" }, "must be an IANA time zone"),
            Breakage(PaymentAgreementTests.hotel, { $0.freeCancellationDateTimeZone = "GMT-1:0" }, "must be an IANA time zone"),
            Breakage(PaymentAgreementTests.topUp, { $0.automaticReloadBilling?.thresholdAmount = nil }, "thresholdAmount is required"),
            Breakage(PaymentAgreementTests.topUp, { $0.automaticReloadBilling?.thresholdAmount = 0 }, "thresholdAmount must be 1–"),
            Breakage(PaymentAgreementTests.topUp, { $0.regularBilling = .init(label: "x", amount: 1) }, "regularBilling does not belong"),
        ])
    func otherRefusals(breakage: Breakage) {
        Self.expectRefused(breakage)
    }

    static func expectRefused(_ breakage: Breakage) {
        var agreement = breakage.base
        breakage.change(&agreement)
        let expected = breakage.expected
        do {
            try agreement.check(now: Self.now)
            Issue.record("accepted: \(expected)")
        } catch {
            #expect(error.code == .invalidAgreement)
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }
}
