import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OrchardComposition
import OrchardConfigurationTesting
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// Core's refusals (one type, ``CoreError``, for the engine, the services and the business rules)
/// become HTTP answers in one place, ``OrchardError``: routes throw them as they are, and only the authorize route adds its
/// `completePayment` shape.
@Suite("Errors: Core's refusals mapped to HTTP once")
struct ErrorMappingTests {
    @Test("every Core code has its API code and status (those the routes answered before unchanged)")
    func table() {
        // The engine's, the services' and the business rules' codes before they were one type,
        // each with the answer it had then.
        let expected: [CoreError.Code: (OrchardError.Code, Int)] = [
            .notFound: (.notFound, 404), .orderNotOpen: (.orderNotOpen, 409), .orderChanged: (.orderChanged, 409),
            .invalidToken: (.invalidToken, 400), .paymentMismatch: (.paymentMismatch, 422), .replayedPayment: (.replayedPayment, 409),
            .declined: (.paymentFailed, 402), .processorRejected: (.processorRejected, 502), .paymentUnknown: (.paymentUnknown, 504),
            .invalidState: (.invalidState, 409), .refundTooLarge: (.refundTooLarge, 422), .idempotencyMismatch: (.idempotencyMismatch, 422),
            .storage: (.internalError, 500), .storeUnavailable: (.storeUnavailable, 503),
            .ordersUnavailable: (.ordersUnavailable, 404), .invalidRequest: (.invalidRequest, 400),
            .invalidCart: (.invalidCart, 400), .invalidAgreement: (.invalidAgreement, 400), .quoteFailed: (.quoteFailed, 502),
            .inconsistent: (.internalError, 500), .notConfigured: (.platformNotConfigured, 501),
            .identifierTaken: (.identifierTaken, 409), .domainTaken: (.domainTaken, 409), .invalidRegistration: (.invalidRegistration, 400),
            .unrecorded: (.internalError, 500), .paymentInProgress: (.paymentUnknown, 504), .limitReached: (.tooManyKeys, 422),
            .registrationBusy: (.registrationBusy, 409),
        ]
        #expect(expected.count == CoreError.Code.allCases.count)
        for code in CoreError.Code.allCases {
            let error = CoreError(code, "Core says \(code)")
            let mapped = OrchardError(mapping: error)
            #expect(mapped?.code == expected[code]?.0 && mapped?.message == error.message, "\(code)")
            #expect(Int(error.status.code) == expected[code]?.1, "\(code)")
        }
        let apple = RegistrationCallError(GatewayError(.rejected, "Apple says no", appleStatus: 400))
        let mapped = OrchardError(mapping: apple)
        #expect(mapped?.code == .registrationRejected && mapped?.upstreamStatus == 400 && apple.status == .badGateway)
        #expect(OrchardError(mapping: CancellationError()) == nil, "not a refusal: Hummingbird's bare 500")
        let away = OrchardError(mapping: StoreError(code: .unavailable, message: "no PostgreSQL connection within 3000 ms"))
        #expect(away?.code == .storeUnavailable && away?.status == .serviceUnavailable && away?.retryAfter == 5)
        #expect(away?.message.contains("PostgreSQL") == false, "the database's detail stays in the log")
        let broken = StoreError(code: .storage, message: "the PostgreSQL store failed: relation \"payments\" does not exist")
        #expect(OrchardError(mapping: broken) == nil && broken.status == .internalServerError)
        #expect(OrchardError(broken).message == "internal error", "a store's failure says nothing of its cause to callers")
    }

    @Test("an engine refusal on the authorize route keeps its status and code and is shaped for completePayment")
    func authorizeShape() async throws {
        try await RouterTests.withApp { client, _ in
            let json: HTTPFields = [.contentType: "application/json"]
            let created = try await client.execute(
                uri: "/api/orders", method: .post, headers: json,
                body: ByteBuffer(string: #"{"items": [{"productId": "apple", "quantity": 1}]}"#))
            let order = try #require(RouterTests.json(created))
            let id = try #require(order["orderId"] as? String)
            let request = try #require(order["paymentRequest"] as? [String: Any])
            let (bytes, _) = try AuthorizeBody.make(id, request, minter: TokenMinter(chain: TestConfiguration.tokenChain))
            var body = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            body["orderId"] = "no-such-order"
            let refused = try await client.execute(
                uri: "/api/apple-pay/authorize", method: .post, headers: json,
                body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
            #expect(refused.status == .notFound)
            let answer = try #require(RouterTests.json(refused))
            let error = answer["error"] as? [String: Any]
            #expect(error?["code"] as? String == "not_found" && error?["message"] as? String == "there is no such order")
            #expect(answer["status"] as? String == "failure")
            #expect((answer["errors"] as? [[String: Any]])?.first?["code"] as? String == "unknown")
            #expect(refused.headers[.xContentTypeOptions] == "nosniff", "the security headers on a mapped refusal too")
        }
    }

    @Test("a business rule's refusal from the store (the API-key cap) and an engine refusal on an admin route answer as mapped")
    func adminRefusals() async throws {
        try await OpenAPITests.withConfiguration { configuration in
            let dependencies = ApplicationDependencies(configuration: configuration, sessions: StubSessions(), store: InMemoryStore())
            let admin: HTTPFields = [.authorization: "Bearer \(MoreMerchants.adminToken)"]
            try await buildApplication(dependencies).test(.router) { client in
                let merchant = try #require(configuration.merchants.first?.merchantIdentifier)
                for _ in 0..<APIKeyRecord.maximumActive {
                    let key = try await client.execute(uri: "/admin/merchants/\(merchant)/api-keys", method: .post, headers: admin)
                    #expect(key.status == .created)
                }
                let over = try await client.execute(uri: "/admin/merchants/\(merchant)/api-keys", method: .post, headers: admin)
                #expect(over.status == .unprocessableContent)
                let error = RouterTests.json(over)?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "too_many_keys")
                #expect(error?["message"] as? String == "\(merchant) already has 2 active API keys: revoke one first")

                let settle = try await client.execute(uri: "/admin/payments/nope/settle", method: .post, headers: admin)
                #expect(settle.status == .notFound)
                #expect((RouterTests.json(settle)?["error"] as? [String: Any])?["code"] as? String == "not_found")
                #expect(RouterTests.json(settle)?["status"] == nil, "only the authorize route has the completePayment shape")
            }
        }
    }
}
