import Foundation
import Testing

@testable import ApplePay

@Suite("The token path's shortcuts decide as the slow path does")
struct TokenFastPathTests {
    static let base =
        #"{"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"251231","currencyCode":"840","#
        + #""transactionAmount":1000,"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure","#
        + #""paymentData":{"onlinePaymentCryptogram":"AgAAAAAABk4DWZ4C28yUQAAAAAA=","eciIndicator":"7"}}"#

    static let readable: [String] = {
        var samples: [String] = [base, " \n" + base + "\n", base.replacingOccurrences(of: "1000", with: "-0")]
        samples.append(
            base.replacingOccurrences(of: #""currencyCode""#, with: #""cardholderName":"Zoë Ünal","unknown":"x","currencyCode""#))
        let credentials = #","paymentData":{"onlinePaymentCryptogram":"AgAAAAAABk4DWZ4C28yUQAAAAAA=","eciIndicator":"7"}"#
        samples.append(base.replacingOccurrences(of: credentials, with: ""))
        samples.append(base.replacingOccurrences(of: #"{"onlinePaymentCryptogram""#, with: #"{ "onlinePaymentCryptogram""#))
        return samples
    }()

    static let others: [String] = {
        var samples: [String] = ["1000.0", "1e3", "01000", #""1000""#, "99999999999999999999"].map {
            base.replacingOccurrences(of: "1000", with: $0)
        }
        samples += [#""8\u00340""#, "null", "840"].map { base.replacingOccurrences(of: #""840""#, with: $0) }
        let currency = #""currencyCode":"840","#
        samples += ["", #""currencyCode":"840","currencyCode":"978","#].map { base.replacingOccurrences(of: currency, with: $0) }
        samples += [#""merchantTokenIdentifier":"DNITHE1","currencyCode""#, #""unknown":[1],"currencyCode""#].map {
            base.replacingOccurrences(of: #""currencyCode""#, with: $0)
        }
        samples.append(base.replacingOccurrences(of: #"{"onlinePaymentCryptogram""#, with: #"{"x":1,"onlinePaymentCryptogram""#))
        samples.append(base.replacingOccurrences(of: #""paymentData":{"#, with: #""paymentData":"x","p":{"#))
        samples += [base + "x", String(base.dropLast()), "[]", ""]
        return samples
    }()

    static func decoded(_ json: String) -> DecryptedPayment.Fields? {
        try? JSONDecoder().decode(DecryptedPayment.Fields.self, from: Data(json.utf8))
    }

    static func same(_ a: DecryptedPayment.Fields, _ b: DecryptedPayment.Fields) -> Bool {
        let strings: [(String?, String?)] = [
            (a.applicationPrimaryAccountNumber, b.applicationPrimaryAccountNumber),
            (a.applicationExpirationDate, b.applicationExpirationDate),
            (a.currencyCode, b.currencyCode), (a.cardholderName, b.cardholderName), (a.paymentDataType, b.paymentDataType),
            (a.deviceManufacturerIdentifier, b.deviceManufacturerIdentifier),
            (a.paymentData?.onlinePaymentCryptogram, b.paymentData?.onlinePaymentCryptogram),
            (a.paymentData?.eciIndicator, b.paymentData?.eciIndicator),
        ]
        let none = b.merchantTokenIdentifier == nil && b.merchantTokenMetadata == nil && b.authenticationResponses == nil
        return strings.allSatisfy { $0.0 == $0.1 } && a.transactionAmount == b.transactionAmount
            && (a.paymentData == nil) == (b.paymentData == nil) && none
    }

    @Test(
        "the direct reader reads what JSONDecoder reads, identically",
        arguments: Self.readable)
    func agrees(json: String) throws {
        let direct = try #require(PlaintextReader.fields(Array(json.utf8)))
        let decoder = try #require(Self.decoded(json))
        #expect(Self.same(direct, decoder))
    }

    @Test(
        "anything else is left to JSONDecoder",
        arguments: Self.others)
    func fallsBack(json: String) {
        #expect(PlaintextReader.fields(Array(json.utf8)) == nil)
        // And the decrypted payment is still what JSONDecoder makes of it (or refused, as before).
        let payment = try? DecryptedPayment(json: Array(json.utf8))
        #expect((payment == nil) == (Self.decoded(json) == nil))
    }

    @Test("a known chain is found only by the same bytes; the cache stays bounded")
    func chainCache() throws {
        let verifier = TokenVerifier()
        let data = try Vector.gala.token.paymentData
        _ = try verifier.verify(data, at: try Vector.gala.signingTime.addingTimeInterval(30))
        #expect(verifier.verifiedChains.count == 1)
        // The same certificates with one bit of the intermediate's signature changed: a miss, and refused.
        var bytes = [UInt8](Data(base64Encoded: data.signature)!)
        let cms = try CMSSignedData(ber: bytes)
        try #require(cms.certificates.count == 2)
        bytes[cms.certificates[1].endIndex - 10] ^= 0x01  // inside the second certificate's signature
        var altered = data
        altered.signature = Data(bytes).base64EncodedString()
        #expect(throws: ApplePayError.self) { _ = try verifier.verify(altered, at: try Vector.gala.signingTime.addingTimeInterval(30)) }
        #expect(verifier.verifiedChains.count == 1)

        let cache = ChainCache()
        let chain = try #require(verifier.verifiedChains[ChainCache.Key(bytes: Array(cms.certificates.joined()))])
        for index in 0..<(ChainCache.limit + 5) { cache[ChainCache.Key(bytes: [UInt8(index & 0xFF), 1])] = chain }
        #expect(cache.count <= ChainCache.limit)
        #expect(cache[ChainCache.Key(bytes: [0, 1, 0])] == nil)
    }

    @Test("signingTime by arithmetic is Calendar's date", arguments: ["491231235959Z", "500101000000Z", "240229120000Z", "210901190306Z"])
    func utcTime(text: String) throws {
        let der = [0x17, UInt8(text.utf8.count)] + Array(text.utf8)
        let cms = CMSSignedDataTimeProbe(bytes: der)
        var components = DateComponents()
        components.timeZone = TimeZone(identifier: "UTC")
        let digits = Array(text.utf8).map { Int($0) - 0x30 }
        let year = digits[0] * 10 + digits[1]
        components.year = year >= 50 ? 1900 + year : 2000 + year
        (components.month, components.day) = (digits[2] * 10 + digits[3], digits[4] * 10 + digits[5])
        (components.hour, components.minute, components.second) = (
            digits[6] * 10 + digits[7], digits[8] * 10 + digits[9], digits[10] * 10 + digits[11]
        )
        #expect(try cms.time() == Calendar(identifier: .gregorian).date(from: components))
    }

    @Test(
        "impossible times and malformed BER are malformed", arguments: ["230230000000Z", "231301000000Z", "230101240000Z", "2301010000Z"])
    func badTime(text: String) {
        #expect(throws: BERReader.Failure.self) {
            try CMSSignedDataTimeProbe(bytes: [0x17, UInt8(text.utf8.count)] + Array(text.utf8)).time()
        }
    }

    @Test("BER: indefinite lengths end at their end-of-contents; trailing bytes and missing ends are refused")
    func ber() throws {
        let indefinite: [UInt8] = [0x30, 0x80, 0x04, 0x01, 0xAA, 0x24, 0x80, 0x04, 0x01, 0xBB, 0x00, 0x00, 0x00, 0x00]
        let reader = BERReader(bytes: indefinite)
        let root = try reader.root()
        try reader.check(root, depth: 1)
        let parts = try reader.children(of: root, tag: 0x30)
        #expect(parts.count == 2)
        #expect(try reader.octets(parts[1]) == [0xBB])
        #expect(throws: BERReader.Failure.self) { try BERReader(bytes: indefinite + [0]).root() }
        #expect(throws: BERReader.Failure.self) { try BERReader(bytes: Array(indefinite.dropLast(2))).root() }
        #expect(throws: BERReader.Failure.self) {
            try BERReader(bytes: [0x06, 0x02, 0x80, 0x01]).objectIdentifier(try BERReader(bytes: [0x06, 0x02, 0x80, 0x01]).root())
        }
    }
}

/// A signingTime value alone, read as the verifier reads one.
struct CMSSignedDataTimeProbe {
    let bytes: [UInt8]

    func time() throws(BERReader.Failure) -> Date {
        let reader = BERReader(bytes: bytes)
        return try CMSSignedData.time(try reader.root(), in: reader)
    }
}
