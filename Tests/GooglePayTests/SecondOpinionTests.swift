import Crypto
import Foundation
import GooglePay
import OrchardTesting
import Testing

/// Our minter's tokens opened by a second ECv2 implementation, PyPI's google-pay-token-decryption
/// (scripts/bootstrap installs it, --no-deps): the minter the stand-in `pay.js` and the tests will
/// use makes tokens as Google does, not only as our own reader expects.
@Suite("Google Pay ECv2: our minter's tokens opened by PyPI's google-pay-token-decryption")
struct SecondOpinionTests {
    static let script = #"""
        import json, sys
        from google_pay_token_decryption import GooglePayError, GooglePayTokenDecryptor
        given = json.load(sys.stdin)
        decryptor = GooglePayTokenDecryptor(given["roots"]["keys"], given["recipientId"], given["privateKey"])
        try:
            print(json.dumps(decryptor.decrypt_token(given["token"])))
        except GooglePayError as error:
            print(json.dumps({"refused": str(error)}))
        """#

    func open(_ token: [UInt8], minter: GooglePayMinter, recipientId: String, key: P256.KeyAgreement.PrivateKey) async throws
        -> [String: Any]
    {
        let input: [String: Any] = [
            "roots": try JSONSerialization.jsonObject(with: Data(minter.rootKeysJSON)), "recipientId": recipientId,
            "privateKey": key.derRepresentation.base64EncodedString(), "token": try JSONSerialization.jsonObject(with: Data(token)),
        ]
        let result = try await OrchardProcess.tool(
            "python3", ["-c", Self.script], stdin: Array(try JSONSerialization.data(withJSONObject: input)))
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
    }

    @Test("a minted CRYPTOGRAM_3DS token opens to the payload it carries; signed for another recipient, it is refused")
    func agrees() async throws {
        // Python's decryptor reads the wall clock: the token and its key expire an hour from now.
        let minter = GooglePayMinter(intermediateExpiration: Date().addingTimeInterval(3600))
        let key = P256.KeyAgreement.PrivateKey()
        let payload = GooglePayMinter.paymentData(
            pan: "5204240750197840", month: 7, year: 2031, cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=",
            expiration: Date().addingTimeInterval(3600))
        let token = try minter.mint(payload, recipientId: "merchant:12345678901234567890", to: key.publicKey)
        let opened = try await open(token, minter: minter, recipientId: "merchant:12345678901234567890", key: key)
        let details = try #require(opened["paymentMethodDetails"] as? [String: Any])
        #expect(details["pan"] as? String == "5204240750197840" && details["cryptogram"] as? String == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        #expect(details["authMethod"] as? String == "CRYPTOGRAM_3DS" && details["expirationMonth"] as? Int == 7)
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(opened["messageId"] as? String == expected["messageId"] as? String)

        let other = try await open(token, minter: minter, recipientId: "merchant:00000000000000000000", key: key)
        #expect(other["refused"] != nil, "\(other)")
    }
}
