import ApplePay
import Crypto
import Foundation
import OrchardTesting
import Testing
import _CryptoExtras

@Suite("Minted tokens round-trip through the real verifier and decryptor")
struct TokenMinterTests {
    static let chain = try! TestAppleChain.make()
    static let merchant = "merchant.dev.orchard.test"
    let minter = TokenMinter(chain: Self.chain)
    var verifier: TokenVerifier { TokenVerifier(root: Self.chain.root.certificate) }

    @Test("EC_v1 with a leading-zero shared secret and applicationData")
    func ecLeadingZero() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let payload = TokenMinter.samplePayload(amount: 1234)
        let applicationDataHash = Array(SHA256.hash(data: Array("order-42".utf8)))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try minter.mintEC(
            payload: payload, to: key.publicKey, merchantIdentifier: Self.merchant, applicationDataHash: applicationDataHash,
            signingTime: now, leadingZeroSecret: true)

        let ephemeral = try P256.KeyAgreement.PublicKey(derRepresentation: Data(base64Encoded: token.header.ephemeralPublicKey!)!)
        let secret = try key.sharedSecretFromKeyAgreement(with: ephemeral).withUnsafeBytes { Array($0) }
        #expect(secret.count == 32)
        #expect(secret[0] == 0)

        let verified = try verifier.verify(token, at: now.addingTimeInterval(10))
        #expect(verified.decoded.applicationData == applicationDataHash)
        let decrypted = try TokenDecryptor(keys: [
            try ProcessingKey(privateKeyPEM: key.pemRepresentation, merchantIdentifier: Self.merchant)
        ])
        .decrypt(verified.decoded)
        #expect(decrypted.json == payload)
        #expect(decrypted.fields.transactionAmount == 1234)

        var tampered = token
        tampered.header.applicationData = Hex.encode(SHA256.hash(data: Array("order-43".utf8)))
        #expect(throws: ApplePayError.self) { _ = try verifier.verify(tampered, at: now) }
    }

    @Test("a merchant-token payment decrypts with its token identifier and card metadata; a metadata shape not known is left out")
    func merchantToken() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let decryptor = TokenDecryptor(keys: [
            try ProcessingKey(privateKeyPEM: key.pemRepresentation, merchantIdentifier: Self.merchant)
        ])
        let payload = TokenMinter.merchantTokenPayload(amount: 1250, merchantTokenIdentifier: "DNITHE302308980427388297")
        let token = try minter.mintEC(payload: payload, to: key.publicKey, merchantIdentifier: Self.merchant)
        let decrypted = try decryptor.decrypt(try verifier.verify(token, at: Date()).decoded)
        #expect(decrypted.fields.merchantTokenIdentifier == "DNITHE302308980427388297")
        #expect(decrypted.fields.merchantTokenMetadata?.cardMetadata?.fpanSuffix == "4242")
        #expect(decrypted.fields.merchantTokenMetadata?.cardArt?.first?.type == "image/png")
        #expect(!decrypted.description.contains("5204240750197840") && decrypted.description.contains("merchant token"))

        var odd = String(decoding: payload, as: UTF8.self)
        odd = odd.replacingOccurrences(of: "\"cardArt\":[", with: "\"cardArt\":{\"list\":[").replacingOccurrences(
            of: "}],\"cardMetadata\"", with: "}]},\"cardMetadata\"")
        let oddToken = try minter.mintEC(payload: Array(odd.utf8), to: key.publicKey, merchantIdentifier: Self.merchant)
        let tolerated = try decryptor.decrypt(try verifier.verify(oddToken, at: Date()).decoded)
        #expect(tolerated.fields.merchantTokenIdentifier == "DNITHE302308980427388297")
        #expect(tolerated.fields.merchantTokenMetadata == nil, "cardArt as an object is not Apple's documented shape")
        #expect(decrypted.fields.authenticationResponses == nil)

        let multi = String(decoding: payload, as: UTF8.self).replacingOccurrences(
            of: "\"merchantTokenIdentifier\"",
            with:
                #""authenticationResponses":[{"merchantIdentifier":"merchant.sub","authenticationData":"AAEC","transactionAmount":"250"},{"merchantIdentifier":"merchant.other","authenticationData":"AwQF","transactionAmount":1000}],"merchantTokenIdentifier""#
        )
        let multiToken = try minter.mintEC(payload: Array(multi.utf8), to: key.publicKey, merchantIdentifier: Self.merchant)
        let responses = try decryptor.decrypt(try verifier.verify(multiToken, at: Date()).decoded).fields.authenticationResponses
        #expect(responses?.map(\.merchantIdentifier) == ["merchant.sub", "merchant.other"])
        #expect(responses?.map(\.transactionAmount) == [250, 1000], "a number or a string")
    }

    @Test("RSA_v1 without applicationData")
    func rsa() throws {
        let key = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
        let payload = TokenMinter.samplePayload(amount: 500, currencyCode: "392")
        let token = try minter.mintRSA(payload: payload, to: key.publicKey)
        #expect(token.header.applicationData == nil)
        let verified = try verifier.verify(token, at: Date())
        let decrypted = try TokenDecryptor(keys: [
            try ProcessingKey(privateKeyPEM: key.pemRepresentation, merchantIdentifier: Self.merchant)
        ])
        .decrypt(verified.decoded)
        #expect(decrypted.json == payload)
    }

    @Test("production verification refuses minted tokens: only Apple's root is trusted by default")
    func appleRootRefusesTestChain() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let token = try minter.mintEC(payload: TokenMinter.samplePayload(amount: 1), to: key.publicKey, merchantIdentifier: Self.merchant)
        #expect {
            _ = try TokenVerifier().verify(token, at: Date())
        } throws: { ($0 as? ApplePayError)?.code == .untrustedCertificateChain }
    }

    @Test("unknown fields in the token JSON and in the decrypted payload are tolerated")
    func unknownFields() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let payload = Array(
            """
            {"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"291231","currencyCode":"978",\
            "transactionAmount":100,"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure",\
            "paymentData":{"onlinePaymentCryptogram":"AA==","eciIndicator":"7"},"merchantTokenIdentifier":"DNITHE123",\
            "merchantTokenMetadata":{"cardArtImage":"x"},"somethingNew":[1,2,3]}
            """.utf8)
        let data = try minter.mintEC(payload: payload, to: key.publicKey, merchantIdentifier: Self.merchant)
        var object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(PaymentToken(paymentData: data))) as! [String: Any]
        object["futureField"] = ["x": 1]
        var paymentData = object["paymentData"] as! [String: Any]
        paymentData["extra"] = true
        object["paymentData"] = paymentData
        let token = try PaymentToken.parse(Array(try JSONSerialization.data(withJSONObject: object)))
        let verified = try verifier.verify(token.paymentData, at: Date())
        let decrypted = try TokenDecryptor(keys: [
            try ProcessingKey(privateKeyPEM: key.pemRepresentation, merchantIdentifier: Self.merchant)
        ])
        .decrypt(verified.decoded)
        #expect(decrypted.json == payload)
        #expect(decrypted.fields.transactionAmount == 100)
    }
}
