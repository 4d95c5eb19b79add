import Foundation

/// `order.json`'s encoding: dates in RFC 3339 (UTC, milliseconds), keys sorted so one order is
/// always the same bytes, slashes unescaped.
public enum WalletOrderJSON {
    static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let wholeSeconds = Date.ISO8601FormatStyle()

    public static func encode(_ order: WalletOrder) throws(WalletOrderError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(dateStyle.format(date))
        }
        do {
            return Array(try encoder.encode(order))
        } catch {
            throw WalletOrderError(.invalidOrder, "cannot write order.json (\(error))")
        }
    }

    /// Reads `order.json` back (tests, and tools that check a package).
    public static func decode(_ bytes: [UInt8]) throws -> WalletOrder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            if let date = (try? dateStyle.parse(text)) ?? (try? wholeSeconds.parse(text)) { return date }
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 date: \(text)"))
        }
        return try decoder.decode(WalletOrder.self, from: Data(bytes))
    }
}

extension WalletOrder {
    /// The rules of Apple's schema this order breaks, as sentences; empty when it keeps them all.
    public func problems() -> [String] {
        var found: [String] = []
        if let token = authenticationToken, token.count < 16 { found.append("authenticationToken is shorter than 16 characters") }
        if (webServiceURL == nil) != (authenticationToken == nil) {
            found.append("webServiceURL and authenticationToken go together")
        }
        if let url = webServiceURL, !url.hasPrefix("https://"), !Self.isLoopbackHTTP(url) {
            found.append("webServiceURL must start with https://")
        }
        if updatedAt < createdAt { found.append("updatedAt is before createdAt") }
        var amounts = [payment?.total] + (payment?.summaryItems ?? []).map(\.value) + (payment?.transactions ?? []).map(\.amount)
        amounts += (lineItems ?? []).map(\.price)
        for amount in amounts.compactMap({ $0 }) where !Self.isCurrencyAmount(amount) {
            found.append("\(amount.amount) \(amount.currency) is not a decimal amount with an ISO 4217 code")
        }
        var seen = Set<String>()
        for fulfillment in fulfillments ?? [] {
            if !seen.insert(fulfillment.fulfillmentIdentifier).inserted {
                found.append("fulfillment \(fulfillment.fulfillmentIdentifier) appears twice")
            }
            if !Fulfillment.statuses(of: fulfillment.kind).contains(fulfillment.status) {
                found.append("\(fulfillment.status) is not a \(fulfillment.kind.rawValue) fulfillment status")
            }
            if fulfillment.kind == .pickup, fulfillment.displayName == nil { found.append("a pickup fulfillment needs displayName") }
        }
        return found
    }

    /// Plain http to this machine: what tests and the demo serve Wallet's calls on (Wallet itself takes https only).
    static func isLoopbackHTTP(_ url: String) -> Bool {
        ["http://127.0.0.1", "http://localhost", "http://[::1]"].contains { prefix in
            url.hasPrefix(prefix) && [nil, ":", "/"].contains(url.dropFirst(prefix.count).first.map(String.init))
        }
    }

    static func isCurrencyAmount(_ value: CurrencyAmount) -> Bool {
        let currency = value.currency.utf8
        guard currency.count == 3, currency.allSatisfy({ (65...90).contains($0) }) else { return false }
        let unsigned = value.amount.hasPrefix("-") ? String(value.amount.dropFirst()) : value.amount
        let parts = unsigned.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }) else {
            return false
        }
        return true
    }
}
