import Crypto
import Foundation
import OrchardTesting
import Testing
import X509
import _CryptoExtras

@testable import WalletOrders

@Suite("Order Type ID identity: known by its UID, usage and issuer, never by its name")
struct OrderTypeIdentityTests {
    let pki: TestPKI
    let issued: TestOrderTypeIdentity
    init() throws {
        pki = try TestPKI.make()
        issued = try pki.issueOrderTypeIdentity(orderTypeIdentifier: PackageFixture.orderType)
    }

    func load(
        _ certificate: Certificate? = nil, key: Certificate.PrivateKey? = nil, intermediates: [Certificate]? = nil,
        type: String = PackageFixture.orderType, at now: Date = Date()
    ) throws(WalletOrderError) -> OrderTypeIdentity {
        try OrderTypeIdentity(
            orderTypeIdentifier: type, certificate: certificate ?? issued.leaf.certificate, privateKey: key ?? issued.leaf.privateKey,
            intermediates: intermediates ?? [issued.intermediate.certificate], name: "order.pem", at: now)
    }

    func refusal(_ body: () throws(WalletOrderError) -> OrderTypeIdentity) -> WalletOrderError? {
        do {
            _ = try body()
            return nil
        } catch { return error }
    }

    @Test("the test PKI's certificate loads for its identifier")
    func loads() throws {
        let identity = try load()
        #expect(identity.orderTypeIdentifier == PackageFixture.orderType)
        #expect(OrderTypeIdentity.userID(of: identity.certificate) == PackageFixture.orderType)
    }

    @Test("another identifier's certificate is refused, naming the UID it has")
    func otherIdentifier() {
        let error = refusal { () throws(WalletOrderError) in try load(type: "order.com.other") }
        #expect(error?.kind == .notAnOrderTypeCertificate)
        #expect(error?.message.contains("its subject's UID is \(PackageFixture.orderType)") == true)
    }

    @Test("a merchant identity certificate is named as one, even with the UID set")
    func merchantIdentity() throws {
        let merchant = try pki.issueMerchantIdentity(merchantIdentifier: PackageFixture.orderType)
        let error = refusal { () throws(WalletOrderError) in
            try load(merchant.certificate, key: merchant.privateKey, intermediates: [pki.ca.certificate])
        }
        #expect(error?.kind == .notAnOrderTypeCertificate)
        #expect(error?.message.contains("this is an Apple Pay merchant certificate") == true)
    }

    @Test("a key that is not the certificate's, an expired certificate, a foreign intermediate: each refused with its fix")
    func refusals() throws {
        let otherKey = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        #expect(refusal { () throws(WalletOrderError) in try load(key: otherKey) }?.kind == .keyMismatch)
        let expired = try pki.issueOrderTypeIdentity(
            orderTypeIdentifier: PackageFixture.orderType, notValidBefore: Date().addingTimeInterval(-400 * 86_400),
            notValidAfter: Date().addingTimeInterval(-86_400))
        let expiredError = refusal { () throws(WalletOrderError) in
            try load(expired.leaf.certificate, key: expired.leaf.privateKey, intermediates: [expired.intermediate.certificate])
        }
        #expect(expiredError?.kind == .certificateExpired)
        #expect(expiredError?.message.contains("make a new one from a fresh CSR") == true)
        let foreign = try TestPKI.make().issueWWDRIntermediate()
        #expect(refusal { () throws(WalletOrderError) in try load(intermediates: [foreign.certificate]) }?.kind == .intermediate)
        #expect(refusal { () throws(WalletOrderError) in try load(intermediates: []) }?.kind == .intermediate)
        // The CA itself did not issue the leaf either: only the intermediate did.
        #expect(refusal { () throws(WalletOrderError) in try load(intermediates: [pki.ca.certificate]) }?.kind == .intermediate)
        // Time is the caller's: before the certificate starts.
        #expect(
            refusal { () throws(WalletOrderError) in try load(at: Date().addingTimeInterval(-86_400)) }?.kind == .certificateNotYetValid)
    }
}
