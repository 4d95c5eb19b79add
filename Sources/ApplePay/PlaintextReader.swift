/// Reads the decrypted payment's common shape directly: one object of plain strings, an integer
/// `transactionAmount` and a `paymentData` object of plain strings. JSONDecoder cost more than
/// the rest of a token's checks but the curve operations. Anything else (escapes, nulls, other
/// nested values, duplicate keys, the merchant-token fields) returns nil and is left to
/// JSONDecoder, so what this accepts decodes exactly as JSONDecoder would decode it.
struct PlaintextReader {
    let bytes: [UInt8]
    var cursor = 0

    static func fields(_ json: [UInt8]) -> DecryptedPayment.Fields? {
        var reader = PlaintextReader(bytes: json)
        guard let top = reader.object(nested: true), reader.skipSpace() == nil else { return nil }
        var strings = top.strings
        guard let amount = top.amount, let pan = strings.removeValue(forKey: "applicationPrimaryAccountNumber"),
            let expiry = strings.removeValue(forKey: "applicationExpirationDate"),
            let currency = strings.removeValue(forKey: "currencyCode"),
            let type = strings.removeValue(forKey: "paymentDataType")
        else { return nil }
        let credentials = top.credentials.map {
            DecryptedPayment.Credentials(onlinePaymentCryptogram: $0["onlinePaymentCryptogram"], eciIndicator: $0["eciIndicator"])
        }
        return DecryptedPayment.Fields(
            applicationPrimaryAccountNumber: pan, applicationExpirationDate: expiry, currencyCode: currency, transactionAmount: amount,
            cardholderName: strings["cardholderName"], deviceManufacturerIdentifier: strings["deviceManufacturerIdentifier"],
            paymentDataType: type, paymentData: credentials)
    }

    /// The keys the fast path must leave to JSONDecoder, whatever their value.
    private static func decoderOnly(_ key: String) -> Bool {
        key == "merchantTokenIdentifier" || key == "merchantTokenMetadata" || key == "authenticationResponses"
    }

    private mutating func object(nested: Bool) -> (strings: [String: String], amount: Int64?, credentials: [String: String]?)? {
        guard skipSpace() == UInt8(ascii: "{") else { return nil }
        cursor += 1
        var strings: [String: String] = [:]
        var amount: Int64?
        var credentials: [String: String]?
        if skipSpace() == UInt8(ascii: "}") {
            cursor += 1
            return (strings, amount, credentials)
        }
        while true {
            // A key seen before is a duplicate: left to JSONDecoder.
            guard let key = string(), strings[key] == nil, !Self.decoderOnly(key), skipSpace() == UInt8(ascii: ":") else { return nil }
            cursor += 1
            switch skipSpace() {
            case UInt8(ascii: "\"") where key != "paymentData" && key != "transactionAmount": strings[key] = string()
            case UInt8(ascii: "{") where nested && key == "paymentData" && credentials == nil:
                guard let inner = object(nested: false), inner.amount == nil, inner.credentials == nil else { return nil }
                credentials = inner.strings
            default:
                guard nested, key == "transactionAmount", amount == nil, let value = integer() else { return nil }
                amount = value
            }
            guard strings[key] != nil || key == "paymentData" || key == "transactionAmount" else { return nil }
            switch skipSpace() {
            case UInt8(ascii: ","): cursor += 1
            case UInt8(ascii: "}"):
                cursor += 1
                return (strings, amount, credentials)
            default: return nil
            }
        }
    }

    /// The next non-space byte, not consumed; nil at the end.
    private mutating func skipSpace() -> UInt8? {
        while cursor < bytes.count {
            switch bytes[cursor] {
            case 0x20, 0x09, 0x0A, 0x0D: cursor += 1
            default: return bytes[cursor]
            }
        }
        return nil
    }

    /// A string without escapes or control characters, valid UTF-8.
    private mutating func string() -> String? {
        guard skipSpace() == UInt8(ascii: "\"") else { return nil }
        let start = cursor + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
            guard bytes[end] >= 0x20, bytes[end] != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        cursor = end + 1
        return String(validating: bytes[start..<end], as: UTF8.self)
    }

    /// `-?(0|[1-9][0-9]*)` that fits an Int64; fractions and exponents are left to JSONDecoder.
    private mutating func integer() -> Int64? {
        var end = cursor
        if end < bytes.count, bytes[end] == UInt8(ascii: "-") { end += 1 }
        let digits = end
        while end < bytes.count, (0x30...0x39).contains(bytes[end]) { end += 1 }
        guard end > digits, end - digits == 1 || bytes[digits] != 0x30, end - digits <= 19 else { return nil }
        if end < bytes.count, bytes[end] == UInt8(ascii: ".") || bytes[end] | 0x20 == UInt8(ascii: "e") { return nil }
        guard let value = Int64(String(decoding: bytes[cursor..<end], as: UTF8.self)) else { return nil }
        cursor = end
        return value
    }
}

extension DecryptedPayment.Fields {
    init(
        applicationPrimaryAccountNumber: String, applicationExpirationDate: String, currencyCode: String, transactionAmount: Int64,
        cardholderName: String?, deviceManufacturerIdentifier: String?, paymentDataType: String, paymentData: DecryptedPayment.Credentials?
    ) {
        self.applicationPrimaryAccountNumber = applicationPrimaryAccountNumber
        self.applicationExpirationDate = applicationExpirationDate
        self.currencyCode = currencyCode
        self.transactionAmount = transactionAmount
        self.cardholderName = cardholderName
        self.deviceManufacturerIdentifier = deviceManufacturerIdentifier
        self.paymentDataType = paymentDataType
        self.paymentData = paymentData
        (merchantTokenIdentifier, merchantTokenMetadata, authenticationResponses) = (nil, nil, nil)
    }
}
