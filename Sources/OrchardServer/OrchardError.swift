import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore

/// An API error: a stable code, a message the caller can act on, and (in one place) its HTTP status.
public struct OrchardError: Error, Sendable, Equatable, HTTPResponseError {
    public enum Code: String, Sendable, CaseIterable {
        case invalidJSON = "invalid_json"
        case invalidValidationURL = "invalid_validation_url"
        case invalidRequest = "invalid_request"
        case unknownHost = "unknown_host"
        case notFound = "not_found"
        case payloadTooLarge = "payload_too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case gatewayRejected = "gateway_rejected"
        case gatewayUnavailable = "gateway_unavailable"
        case gatewayTimeout = "gateway_timeout"
        case internalError = "internal_error"
        case ordersUnavailable = "orders_unavailable"
        case invalidCart = "invalid_cart"
        case invalidAgreement = "invalid_agreement"
        case orderNotOpen = "order_not_open"
        case orderChanged = "order_changed"
        case invalidToken = "invalid_token"
        /// A token from the iOS Simulator, which has no real payment behind it.
        case simulatorToken = "simulator_token"
        case paymentMismatch = "payment_mismatch"
        case replayedPayment = "replayed_payment"
        case paymentFailed = "payment_failed"
        case paymentUnknown = "payment_unknown"
        case processorRejected = "processor_rejected"
        case invalidState = "invalid_state"
        case unauthorized = "unauthorized"
        case invalidRegistration = "invalid_registration"
        case domainTaken = "domain_taken"
        case identifierTaken = "identifier_taken"
        /// Another call to Apple for the same registered merchant is under way: repeat the call.
        case registrationBusy = "registration_busy"
        case registrationRejected = "registration_rejected"
        case platformNotConfigured = "platform_not_configured"
        case refundTooLarge = "refund_too_large"
        case idempotencyMismatch = "idempotency_mismatch"
        case tooManyKeys = "too_many_keys"
        case quoteFailed = "quote_failed"
        case rateLimited = "rate_limited"
        case upstreamBusy = "upstream_busy"
        /// The database could not be reached: nothing was changed; try again after `Retry-After`.
        case storeUnavailable = "store_unavailable"
    }

    public var code: Code
    public var message: String
    /// Set for the authorize endpoint: the body is then shaped for `completePayment`.
    public var isPaymentAnswer = false
    /// Apple's HTTP status, for registration calls Apple refused (shown to admins only).
    public var upstreamStatus: Int?
    /// Seconds the caller should wait before trying again, sent as `Retry-After` (429 and 503).
    public var retryAfter: Int?

    public init(_ code: Code, _ message: String, isPaymentAnswer: Bool = false, upstreamStatus: Int? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.isPaymentAnswer = isPaymentAnswer
        self.upstreamStatus = upstreamStatus
        self.retryAfter = retryAfter
    }

    /// Seconds a caller refused for a busy upstream is told to wait: the calls in flight take about that long.
    public static let busyRetryAfter = 2
    /// Seconds a caller is told to wait while the database cannot be reached: a failover takes 10–30 s.
    public static let storeRetryAfter = 5

    /// The store's failure as a route answers it: 503 `store_unavailable` while the database
    /// cannot be reached, else a bare internal error (the cause is in the operator's log only).
    public init(_ error: StoreError) {
        switch error.code {
        case .unavailable:
            self.init(
                .storeUnavailable, "the service cannot reach its database right now; nothing was changed, try again shortly",
                retryAfter: Self.storeRetryAfter)
        case .storage: self.init(.internalError, "internal error")
        }
    }

    /// The one mapping from error codes to HTTP statuses.
    public var status: HTTPResponse.Status {
        switch code {
        case .invalidJSON, .invalidValidationURL, .invalidRequest, .invalidRegistration: .badRequest
        case .unauthorized: .unauthorized
        case .domainTaken, .identifierTaken, .registrationBusy: .conflict
        case .registrationRejected, .quoteFailed: .badGateway
        case .platformNotConfigured: .notImplemented
        case .unknownHost: .misdirectedRequest
        case .notFound: .notFound
        case .ordersUnavailable: .notFound
        case .invalidCart, .invalidAgreement, .invalidToken, .simulatorToken: .badRequest
        case .orderNotOpen, .orderChanged, .replayedPayment: .conflict
        case .paymentMismatch, .refundTooLarge, .idempotencyMismatch, .tooManyKeys: .unprocessableContent
        case .paymentFailed: HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required")
        case .paymentUnknown: .gatewayTimeout
        case .processorRejected: .badGateway
        case .invalidState: .conflict
        case .payloadTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .gatewayRejected, .gatewayUnavailable: .badGateway
        case .gatewayTimeout: .gatewayTimeout
        case .internalError: .internalServerError
        case .rateLimited: .tooManyRequests
        case .upstreamBusy, .storeUnavailable: .serviceUnavailable
        }
    }

    /// Core's refusals, mapped once: a new refusal is one case in ``CoreError`` and one line here.
    public init(_ error: CoreError) {
        let code: Code =
            switch error.code {
            case .notFound: .notFound
            case .invalidRequest: .invalidRequest
            case .ordersUnavailable: .ordersUnavailable
            case .invalidCart: .invalidCart
            case .invalidAgreement: .invalidAgreement
            case .idempotencyMismatch: .idempotencyMismatch
            case .orderNotOpen: .orderNotOpen
            case .orderChanged: .orderChanged
            case .invalidState: .invalidState
            case .quoteFailed: .quoteFailed
            case .invalidToken: .invalidToken
            case .paymentMismatch: .paymentMismatch
            case .replayedPayment: .replayedPayment
            case .declined: .paymentFailed
            case .processorRejected: .processorRejected
            case .paymentUnknown, .paymentInProgress: .paymentUnknown
            case .refundTooLarge: .refundTooLarge
            case .limitReached: .tooManyKeys
            case .domainTaken: .domainTaken
            case .identifierTaken: .identifierTaken
            case .registrationBusy: .registrationBusy
            case .invalidRegistration: .invalidRegistration
            case .notConfigured: .platformNotConfigured
            case .unrecorded, .inconsistent, .storage: .internalError
            case .storeUnavailable: .storeUnavailable
            }
        self.init(code, error.message, retryAfter: code == .storeUnavailable ? Self.storeRetryAfter : nil)
    }

    /// A merchant session Apple did not give, worded for the shopper's page (Apple's own message
    /// stays in the operator's log).
    public init(session error: GatewayError) {
        switch error.kind {
        case .timedOut: self.init(.gatewayTimeout, "Apple Pay did not answer in time; please try again")
        case .unreachable: self.init(.gatewayUnavailable, "Apple Pay could not be reached; please try again")
        case .rejected:
            self.init(
                .gatewayRejected,
                "Apple Pay refused the merchant validation (HTTP \(error.appleStatus ?? 0)); the merchant's setup needs attention")
        case .unreadable: self.init(.gatewayRejected, "Apple Pay sent an unreadable merchant session")
        case .invalidRequest: self.init(.internalError, error.message)
        case .busy:
            self.init(.upstreamBusy, "Apple Pay is busy right now; please try again in a moment", retryAfter: Self.busyRetryAfter)
        }
    }

    /// A registration call Apple did not accept, for the admin (Apple's status and message included).
    public init(registration error: GatewayError) {
        switch error.kind {
        case .timedOut: self.init(.gatewayTimeout, "Apple's registration API did not answer in time")
        case .unreachable: self.init(.gatewayUnavailable, "Apple's registration API could not be reached (\(error.message))")
        case .rejected, .unreadable:
            self.init(.registrationRejected, "\(error.message). \(error.hint)", upstreamStatus: error.appleStatus)
        case .invalidRequest: self.init(.internalError, error.message)
        case .busy: self.init(.upstreamBusy, "\(error.message). \(error.hint)", retryAfter: Self.busyRetryAfter)
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(
            error: .init(code: code.rawValue, message: message, appleStatus: upstreamStatus),
            status: isPaymentAnswer ? "failure" : nil,
            errors: isPaymentAnswer ? [.init(code: "unknown", message: message)] : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(body)
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
        if code == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        // RFC 9110 §15.5.16: say which media type would have been taken.
        if code == .unsupportedMediaType { headers[.accept] = "application/json" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension OrchardError {
    /// The error body: `error`, and for the page's authorize call Apple Pay JS's `status` and `errors`.
    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var appleStatus: Int?
        }
        struct PaymentError: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
        var status: String?
        var errors: [PaymentError]?
    }

    /// Any of Orchard's typed refusals as the API answers it: the one place a route's error
    /// becomes a status, a code and a message. Nil for an error that is no refusal (a store's own
    /// failure, a bug), which Hummingbird answers with a bare 500.
    public init?(mapping error: any Error) {
        switch error {
        case let error as OrchardError: self = error
        case let error as CoreError: self = OrchardError(error)
        case let error as RegistrationCallError: self = OrchardError(registration: error.gateway)
        case let error as StoreError where error.code == .unavailable: self = OrchardError(error)
        default: return nil
        }
    }
}

/// Core's refusals thrown from a route answer as their ``OrchardError`` does: routes call the
/// services and the engine and need not catch.
extension CoreError: HTTPResponseError {
    public var status: HTTPResponse.Status { OrchardError(self).status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try OrchardError(self).response(from: request, context: context)
    }
}

extension StoreError: HTTPResponseError {
    public var status: HTTPResponse.Status { OrchardError(self).status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try OrchardError(self).response(from: request, context: context)
    }
}

extension RegistrationCallError: HTTPResponseError {
    public var status: HTTPResponse.Status { OrchardError(registration: gateway).status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try OrchardError(registration: gateway).response(from: request, context: context)
    }
}
