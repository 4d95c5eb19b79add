import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// How the mock processors answer the next authorization requests.
public enum MockProcessorBehaviour: Sendable, Equatable {
    case authorize
    case refuse(code: String, description: String)
    /// Answer with this HTTP status and an error body (5xx: the outcome is unknown to the caller).
    case status(Int)
    /// Authorize, but answer only after this long.
    case delay(Duration)
    /// Record the authorization, then reset the connection without answering.
    case dropAfterCharge
}

/// A Worldpay Access account the mock accepts.
public struct MockWorldpayAccount: Sendable {
    public var entity: String
    public var username: String
    public var password: String

    public init(entity: String, username: String, password: String) {
        self.entity = entity
        self.username = username
        self.password = password
    }
}

/// A Worldline Direct account the mock accepts.
public struct MockWorldlineAccount: Sendable {
    public var merchantId: String
    public var apiKeyId: String
    public var secretApiKey: String

    public init(merchantId: String, apiKeyId: String, secretApiKey: String) {
        self.merchantId = merchantId
        self.apiKeyId = apiKeyId
        self.secretApiKey = secretApiKey
    }
}

/// A payment the mock has taken: one per idempotency reference, whatever the retries.
public struct MockCharge: Sendable, Equatable {
    public enum State: String, Sendable { case authorized, refused, settled, cancelled }
    public var processor: String
    public var reference: String
    public var id: String
    public var amount: Int64
    public var currency: String
    public var state: State
    /// Worldline: `encrypted` or `decrypted`; Worldpay: `walletToken`.
    public var mode: String
}

/// A request the mock received.
public struct MockProcessorRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Stand-ins for Worldpay Access and Worldline Direct on one loopback HTTPS port. They check
/// what the real APIs check (Basic credentials or the v1HMAC signature and its date, media
/// types, required fields, integer minor-unit amounts, ISO currency codes), keep payments
/// idempotent by reference, and answer as told by ``behaviour``.
public final class MockProcessors: Sendable {
    public let worldpay: MockWorldpayAccount
    public let worldline: MockWorldlineAccount
    let logger: Logger
    private let sslContext: NIOSSLContext
    private let host: String
    private let requestedPort: Int
    private let state: Mutex<State>

    private struct State {
        var behaviour: MockProcessorBehaviour = .authorize
        var charges: [MockCharge] = []
        var answers: [String: (status: Int, body: [UInt8])] = [:]
        var received: [MockProcessorRequest] = []
    }
    private let channels = ChannelTracker()

    public init(
        serverIdentity: TestCertificate, worldpay: MockWorldpayAccount, worldline: MockWorldlineAccount, host: String = "127.0.0.1",
        port: Int = 0, logger: Logger = Logger(label: "orchard.mock-processors")
    ) throws {
        self.worldpay = worldpay
        self.worldline = worldline
        self.host = host
        self.requestedPort = port
        self.logger = logger
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(serverIdentity.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverIdentity.keyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        sslContext = try NIOSSLContext(configuration: tls)
        state = Mutex(State())
    }

    /// How the next authorizations are answered.
    public var behaviour: MockProcessorBehaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    /// Every payment taken, oldest first.
    public var charges: [MockCharge] { state.withLock { $0.charges } }

    /// Every request received, oldest first.
    public var received: [MockProcessorRequest] { state.withLock { $0.received } }

    public var port: Int { channels.port }
    public var baseURL: String { "https://\(host):\(port)" }

    @discardableResult
    public func start() async throws -> Int {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    channels.track(channel)
                    let reset = ConnectionResetHandler()
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(reset)
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(MockProcessorHandler(mock: self, reset: reset))
                }
            }
        let channel = try await bootstrap.bind(host: host, port: requestedPort).get()
        channels.listening(on: channel)
        logger.info("mock processors listening", metadata: ["url": "https://\(host):\(channel.localAddress?.port ?? 0)"])
        return channel.localAddress?.port ?? 0
    }

    public func stop() async {
        await channels.closeAll()
    }

    // MARK: Answers

    /// What to do with one request: answer, or drop the connection.
    enum Reply {
        case answer(status: Int, body: [UInt8], headers: [(String, String)])
        case drop
        case delayed(Duration, status: Int, body: [UInt8])
    }

    func handle(_ request: MockProcessorRequest) -> Reply {
        state.withLock { $0.received.append(request) }
        let path = request.path
        if path == "/payments/authorizations" && request.method == "POST" { return worldpayAuthorize(request) }
        if path.hasPrefix("/payments/settlements/full/") || path.hasPrefix("/payments/authorizations/cancellations/") {
            return worldpayAction(request)
        }
        let prefix = "/v2/\(worldline.merchantId)/payments"
        if path == prefix && request.method == "POST" { return worldlineCreate(request) }
        if path.hasPrefix(prefix + "/") && request.method == "POST" { return worldlineAction(request, prefix: prefix) }
        if path.hasPrefix("/v2/") {
            return Self.reply(404, ["errorId": UUID().uuidString, "errors": [["code": "9007", "message": "UNKNOWN_MERCHANT"]]])
        }
        return Self.reply(404, ["errorName": "urlNotFound", "message": "no such resource"])
    }

    static func reply(_ status: Int, _ object: [String: Any], headers: [(String, String)] = []) -> Reply {
        .answer(status: status, body: body(object), headers: headers)
    }

    static func body(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// An integer JSON number (not a bool, not a fraction).
    static func integer(_ value: Any?) -> Int64? {
        // JSON true/false arrive as NSNumber too, with the C type "c".
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        let double = number.doubleValue
        guard double == double.rounded(), double >= 0, double < 1e15 else { return nil }
        return number.int64Value
    }

    static func isCurrency(_ value: Any?) -> Bool {
        guard let code = value as? String else { return false }
        return code.utf8.count == 3 && code.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }

    /// Runs one authorization under the current behaviour: a known reference gets its first answer again.
    private func authorization(
        reference: String, charge: MockCharge, authorized: [UInt8], authorizedStatus: Int, refused: (String, String) -> (Int, [UInt8]),
        errorBody: (Int) -> [UInt8], replayHeaders: [(String, String)]
    ) -> Reply {
        let behaviour = state.withLock { $0.behaviour }
        if case .status(let status) = behaviour { return .answer(status: status, body: errorBody(status), headers: []) }
        let outcome: (status: Int, body: [UInt8], replayed: Bool) = state.withLock { state in
            if let previous = state.answers[reference] { return (previous.status, previous.body, true) }
            var taken = charge
            let answer: (Int, [UInt8])
            if case .refuse(let code, let description) = behaviour {
                taken.state = .refused
                answer = refused(code, description)
            } else {
                answer = (authorizedStatus, authorized)
            }
            state.charges.append(taken)
            state.answers[reference] = answer
            return (answer.0, answer.1, false)
        }
        switch behaviour {
        case .dropAfterCharge: return .drop
        case .delay(let duration): return .delayed(duration, status: outcome.status, body: outcome.body)
        default: return .answer(status: outcome.status, body: outcome.body, headers: outcome.replayed ? replayHeaders : [])
        }
    }

    // MARK: Worldpay Access

    private func worldpayError(_ status: Int, _ name: String, _ message: String) -> Reply {
        Self.reply(status, ["errorName": name, "message": message])
    }

    private func worldpayAuthorized(_ request: MockProcessorRequest) -> Reply? {
        let expected = "Basic " + Data("\(worldpay.username):\(worldpay.password)".utf8).base64EncodedString()
        guard request.header("Authorization") == expected else {
            return worldpayError(401, "accessDenied", "Access to the requested resource has been denied")
        }
        return nil
    }

    private func worldpayAuthorize(_ request: MockProcessorRequest) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payments-v7+json"
        guard request.header("Content-Type") == mediaType else {
            return worldpayError(415, "headerHasInvalidValue", "Content-Type must be \(mediaType)")
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return worldpayError(400, "bodyIsNotJson", "The body is not JSON")
        }
        var problems: [String] = []
        let reference = body["transactionReference"] as? String ?? ""
        if reference.isEmpty || reference.count > 64 { problems.append("transactionReference: 1–64 characters") }
        if (body["merchant"] as? [String: Any])?["entity"] as? String != worldpay.entity {
            problems.append("merchant.entity: not configured")
        }
        let instruction = body["instruction"] as? [String: Any] ?? [:]
        let line1 = (instruction["narrative"] as? [String: Any])?["line1"] as? String ?? ""
        if line1.isEmpty || line1.count > 24 { problems.append("instruction.narrative.line1: 1–24 characters") }
        let value = instruction["value"] as? [String: Any] ?? [:]
        if !Self.isCurrency(value["currency"]) { problems.append("instruction.value.currency: ISO 4217 code") }
        let amount = Self.integer(value["amount"])
        if amount == nil { problems.append("instruction.value.amount: an integer in minor units") }
        let instrument = instruction["paymentInstrument"] as? [String: Any] ?? [:]
        if instrument["type"] as? String != "card/wallet+applepay" { problems.append("paymentInstrument.type: card/wallet+applepay") }
        let wallet = (instrument["walletToken"] as? String).flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        if wallet == nil || ["version", "data", "signature", "header"].contains(where: { wallet?[$0] == nil }) {
            problems.append("paymentInstrument.walletToken: the Apple Pay paymentData as a JSON string")
        }
        guard problems.isEmpty, let amount else {
            return Self.reply(
                400,
                [
                    "errorName": "bodyDoesNotMatchSchema", "message": "The json body provided does not match the expected schema",
                    "validationErrors": problems.map { ["errorName": "fieldIsInvalid", "message": $0] },
                ])
        }
        let key = Data(reference.utf8).base64EncodedString().replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "+", with: "-")
        let base = "https://\(host):\(port)"
        let authorized = Self.body([
            "outcome": "authorized",
            "paymentInstrument": ["type": "card/network+masked", "card": ["brand": "visa", "fundingType": "debit"]],
            "_links": [
                "payments:cancel": ["href": "\(base)/payments/authorizations/cancellations/\(key)"],
                "payments:settle": ["href": "\(base)/payments/settlements/full/\(key)"],
                "payments:events": ["href": "\(base)/payments/events/\(key)"],
            ],
        ])
        return authorization(
            reference: "worldpay:" + reference,
            charge: MockCharge(
                processor: "worldpay", reference: reference, id: key, amount: amount, currency: value["currency"] as? String ?? "",
                state: .authorized, mode: "walletToken"),
            authorized: authorized, authorizedStatus: 201,
            refused: { code, description in (201, Self.body(["outcome": "refused", "code": code, "description": description])) },
            errorBody: { status in Self.body(["errorName": "internalErrorOccurred", "message": "Injected fault \(status)"]) },
            replayHeaders: [])
    }

    private func worldpayAction(_ request: MockProcessorRequest) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let settle = request.path.hasPrefix("/payments/settlements/full/")
        let key = String(request.path.split(separator: "/").last ?? "")
        return state.withLock { state in
            guard let index = state.charges.firstIndex(where: { $0.processor == "worldpay" && $0.id == key }) else {
                return Self.reply(404, ["errorName": "urlNotFound", "message": "no such payment"])
            }
            guard state.charges[index].state == .authorized else {
                return Self.reply(
                    409, ["errorName": "entityIsInWrongState", "message": "the payment is \(state.charges[index].state.rawValue)"])
            }
            state.charges[index].state = settle ? .settled : .cancelled
            return Self.reply(202, ["_links": [:]])
        }
    }

    // MARK: Worldline Direct

    private func worldlineError(_ status: Int, _ id: String, _ message: String, property: String? = nil) -> Reply {
        var error: [String: Any] = ["errorCode": "50001111", "id": id, "message": message, "httpStatusCode": status]
        if let property { error["propertyName"] = property }
        return Self.reply(status, ["errorId": UUID().uuidString, "errors": [error]])
    }

    /// Recomputes the v1HMAC signature from the request as received.
    private func worldlineSignatureValid(_ request: MockProcessorRequest) -> Bool {
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("GCS v1HMAC:") else { return false }
        let parts = authorization.dropFirst("GCS v1HMAC:".count).split(separator: ":", maxSplits: 1)
        guard parts.count == 2, parts[0] == worldline.apiKeyId else { return false }
        let gcs = request.headers.filter { $0.name.lowercased().hasPrefix("x-gcs") }
            .map { "\($0.name.lowercased()):\($0.value.trimmingCharacters(in: .whitespaces))" }.sorted()
        let lines = [request.method, request.header("Content-Type") ?? "", request.header("Date") ?? ""] + gcs + [request.path]
        let subject = lines.map { $0 + "\n" }.joined()
        let expected = HMAC<SHA256>.authenticationCode(
            for: Array(subject.utf8), using: SymmetricKey(data: Array(worldline.secretApiKey.utf8)))
        guard let presented = Data(base64Encoded: String(parts[1])) else { return false }
        return presented == Data(expected)
    }

    private func worldlineDateFresh(_ request: MockProcessorRequest) -> Bool {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = request.header("Date").flatMap(formatter.date(from:)) else { return false }
        return abs(date.timeIntervalSinceNow) <= 15 * 60
    }

    private func worldlineCreate(_ request: MockProcessorRequest) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        guard request.header("Content-Type")?.hasPrefix("application/json") == true else {
            return worldlineError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json")
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return worldlineError(400, "INVALID_JSON", "the body is not JSON")
        }
        let money = (body["order"] as? [String: Any])?["amountOfMoney"] as? [String: Any] ?? [:]
        guard let amount = Self.integer(money["amount"]) else {
            return worldlineError(
                400, "PARAMETER_NOT_FOUND_IN_REQUEST", "amount must be an integer", property: "order.amountOfMoney.amount")
        }
        guard Self.isCurrency(money["currencyCode"]) else {
            return worldlineError(400, "INVALID_VALUE", "currencyCode must be ISO 4217", property: "order.amountOfMoney.currencyCode")
        }
        let input = body["mobilePaymentMethodSpecificInput"] as? [String: Any] ?? [:]
        guard Self.integer(input["paymentProductId"]) == 302 else {
            return worldlineError(400, "INVALID_VALUE", "paymentProductId must be 302 (Apple Pay)", property: "paymentProductId")
        }
        let mode = input["authorizationMode"] as? String ?? ""
        guard ["FINAL_AUTHORIZATION", "SALE", "PRE_AUTHORIZATION"].contains(mode) else {
            return worldlineError(400, "INVALID_VALUE", "authorizationMode is invalid", property: "authorizationMode")
        }
        let encrypted = input["encryptedPaymentData"] as? String
        let decrypted = input["decryptedPaymentData"] as? [String: Any]
        guard (encrypted == nil) != (decrypted == nil) else {
            return worldlineError(400, "INVALID_VALUE", "send encryptedPaymentData or decryptedPaymentData, not both or neither")
        }
        if encrypted != nil && (input["ephemeralKey"] as? String == nil || input["publicKeyHash"] as? String == nil) {
            return worldlineError(
                400, "PARAMETER_NOT_FOUND_IN_REQUEST", "ephemeralKey and publicKeyHash are required", property: "ephemeralKey")
        }
        if let decrypted {
            let dpan = decrypted["dpan"] as? String ?? ""
            let expiry = Array((decrypted["expiryDate"] as? String ?? "").utf8)
            let month = expiry.count == 4 ? Int(String(decoding: expiry[0..<2], as: UTF8.self)) ?? 0 : 0
            guard (12...19).contains(dpan.count), dpan.allSatisfy(\.isNumber), (1...12).contains(month),
                expiry.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), !(decrypted["cryptogram"] as? String ?? "").isEmpty
            else {
                return worldlineError(400, "INVALID_VALUE", "decryptedPaymentData needs dpan, cryptogram and expiryDate MMYY")
            }
        }
        guard let key = request.header("X-GCS-Idempotence-Key"), !key.isEmpty else {
            return worldlineError(400, "PARAMETER_NOT_FOUND_IN_REQUEST", "this mock requires X-GCS-Idempotence-Key")
        }
        let id = "\(3_000_000_000 + Int64(state.withLock { $0.charges.count }))_0"
        let status = mode == "SALE" ? "CAPTURED" : "PENDING_CAPTURE"
        let authorized = Self.body([
            "creationOutput": ["isNewToken": false],
            "payment": [
                "id": id, "status": status,
                "statusOutput": [
                    "statusCategory": mode == "SALE" ? "COMPLETED" : "PENDING_MERCHANT", "statusCode": mode == "SALE" ? 9 : 5,
                ],
            ],
        ])
        return authorization(
            reference: "worldline:" + key,
            charge: MockCharge(
                processor: "worldline", reference: key, id: id, amount: amount, currency: money["currencyCode"] as? String ?? "",
                state: .authorized, mode: encrypted != nil ? "encrypted" : "decrypted"),
            authorized: authorized, authorizedStatus: 201,
            refused: { code, description in
                (
                    402,
                    Self.body([
                        "errorId": UUID().uuidString, "errors": [["errorCode": code, "id": "PAYMENT_REJECTED", "message": description]],
                        "paymentResult": [
                            "payment": [
                                "id": id, "status": "REJECTED", "statusOutput": ["statusCategory": "UNSUCCESSFUL", "statusCode": 2],
                            ]
                        ],
                    ])
                )
            },
            errorBody: { status in
                Self.body([
                    "errorId": UUID().uuidString,
                    "errors": [["errorCode": "9999", "id": "SERVER_ERROR", "message": "Injected fault \(status)"]],
                ])
            },
            replayHeaders: [("X-GCS-Idempotence-Request-Timestamp", String(Int(Date().timeIntervalSince1970 * 1000)))])
    }

    private func worldlineAction(_ request: MockProcessorRequest, prefix: String) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        let rest = request.path.dropFirst(prefix.count + 1).split(separator: "/")
        guard rest.count == 2, ["capture", "cancel"].contains(rest[1]) else { return worldlineError(404, "NOT_FOUND", "no such action") }
        let id = String(rest[0])
        let capture = rest[1] == "capture"
        return state.withLock { state in
            guard let index = state.charges.firstIndex(where: { $0.processor == "worldline" && $0.id == id }) else {
                return Self.reply(
                    404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_PAYMENT_ID", "message": "no such payment"]]])
            }
            guard state.charges[index].state == .authorized else {
                return Self.reply(
                    409,
                    [
                        "errorId": UUID().uuidString,
                        "errors": [["id": "INVALID_STATUS", "message": "the payment is \(state.charges[index].state)"]],
                    ])
            }
            state.charges[index].state = capture ? .settled : .cancelled
            return Self.reply(200, capture ? ["id": id, "status": "CAPTURE_REQUESTED"] : ["payment": ["id": id, "status": "CANCELLED"]])
        }
    }
}

/// Reads a request, asks ``MockProcessors`` and answers, delays or drops the connection.
final class MockProcessorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let mock: MockProcessors
    let reset: ConnectionResetHandler
    private var collector = RequestCollector(limit: 256 * 1024)

    init(mock: MockProcessors, reset: ConnectionResetHandler) {
        self.mock = mock
        self.reset = reset
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, body, tooLarge) = collector.consume(unwrapInboundIn(data)) else { return }
        guard !tooLarge else { return respond(413, MockProcessors.body(["message": "the body is too large"]), [], head, context) }
        let request = MockProcessorRequest(
            method: head.method.rawValue, path: String(head.uri.split(separator: "?").first ?? ""),
            headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body)
        switch mock.handle(request) {
        case .answer(let status, let body, let headers):
            respond(status, body, headers, head, context)
        case .drop:
            reset.reset()
        case .delayed(let duration, let status, let body):
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) {
                self.respond(status, body, [], head, context)
            }
        }
    }

    private func respond(
        _ status: Int, _ body: [UInt8], _ extra: [(String, String)], _ request: HTTPRequestHead, _ context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .init(statusCode: status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
