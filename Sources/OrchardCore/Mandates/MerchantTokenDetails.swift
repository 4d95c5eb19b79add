import ApplePay
import Foundation

/// What Apple last told, in a token event's signed and encrypted metadata, of the MPAN behind a
/// mandate's merchant token: its expiry, its last four digits and, once it changed, the new
/// MPAN's identifier. Never the MPAN itself.
public struct MerchantTokenDetails: Sendable, Codable, Equatable {
    /// The MPAN's expiry as Apple writes it, `YYMMDD` (the day is the month's last): `301231`.
    public var expirationDate: String
    /// The same expiry's month (1–12) and four-digit year, as processors take it.
    public var expirationMonth: Int
    public var expirationYear: Int
    /// The MPAN's last four digits. The mandate's `lastFour` stays the first payment's.
    public var suffix: String
    /// Apple's identifier of the MPAN now in use, sent only when the MPAN changed: kept from an
    /// earlier event when a later one (an expiry alone) does not repeat it.
    public var mpanId: String?
    /// When Apple signed the metadata: one signed earlier never replaces it.
    public var signedAt: Date
    /// When Orchard recorded it.
    public var updatedAt: Date

    public init(
        expirationDate: String, expirationMonth: Int, expirationYear: Int, suffix: String, mpanId: String? = nil, signedAt: Date,
        updatedAt: Date
    ) {
        self.expirationDate = expirationDate
        self.expirationMonth = expirationMonth
        self.expirationYear = expirationYear
        self.suffix = suffix
        self.mpanId = mpanId
        self.signedAt = signedAt
        self.updatedAt = updatedAt
    }

    /// Opened metadata, recorded at `date`; `previous` gives the MPAN identifier when this one has none.
    public init(_ metadata: TokenMetadata, previous: MerchantTokenDetails?, at date: Date) {
        self.init(
            expirationDate: metadata.expirationDate, expirationMonth: metadata.expirationMonth, expirationYear: metadata.expirationYear,
            suffix: metadata.mpanSuffix, mpanId: metadata.mpanId ?? previous?.mpanId, signedAt: metadata.signingTime, updatedAt: date)
    }
}
