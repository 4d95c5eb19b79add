import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardInMemory

/// The engine over a store, a processor double and a hand-moved clock. The store is in memory
/// for the engine's rules; a test about what survives a crash passes an opener of a real store
/// from its own target (a SQLite file, say), so this library links no adapter. "Restart" makes a
/// new engine on a store the opener opens again (for SQLite, a new connection to the same file
/// and vault, as a new process would open; nothing the engine held in memory survives).
public struct EngineBench: Sendable {
    /// The merchant every order and token of the bench is for.
    public static let merchant = TestMaterial.merchantIdentifier
    /// The demo catalogue the bench's orders are priced from.
    public static let catalogue = TestRecords.catalogue
    /// The test Apple chain the bench's tokens are signed under, and the engine trusts.
    public static let tokenChain = try! TestAppleChain.make()
    /// The merchant's processing key the bench's tokens are encrypted to.
    public static let processingKey = P256.KeyAgreement.PrivateKey()

    /// Opens the bench's store, at the start and at each restart.
    public typealias Opener = @Sendable () throws -> any OrchardStore

    /// The engine's and the processor's time, moved by the test.
    public let clock = ManualClock()
    /// Seals retry requests; kept across restarts, as a configured vault key is.
    public let vault = PaymentVault.ephemeral()
    /// The merchant's processor; its records survive restarts, as a real processor's do.
    public let processor: SimulatedProcessor
    /// Mints the shopper's tokens.
    public let minter = TokenMinter(chain: EngineBench.tokenChain)
    /// The engine's timing policy, kept across restarts.
    public let policy: PaymentsEngine.Policy
    private let opening: Opener
    /// The store as opened: what a test reads and seeds directly.
    public private(set) var store: any OrchardStore
    /// The engine's repositories: the store's, its payments behind ``payments``.
    public private(set) var repositories: Repositories
    /// The engine's payments: set `failing` and the write of a processor's answer fails.
    public private(set) var payments: FailingOrderPayments
    /// The engine under test; replaced at each restart.
    public private(set) var engine: PaymentsEngine

    /// A bench over the store `opening` opens (a fresh in-memory store, kept across restarts, when nil).
    public init(
        inProgressIsRejection: Bool = false, policy: PaymentsEngine.Policy = .init(staleAfter: 30), opening: Opener? = nil
    ) throws {
        processor = SimulatedProcessor(clock: clock, inProgressIsRejection: inProgressIsRejection)
        self.policy = policy
        let memory = InMemoryStore()
        self.opening = opening ?? { memory }
        (store, repositories, payments) = try Self.open(self.opening)
        engine = Self.engine(repositories: repositories, processor: processor, vault: vault, clock: clock, policy: policy)
    }

    /// The bench's store, and its repositories with the payments behind a decorator that can fail their moves.
    private static func open(_ opening: Opener) throws -> (any OrchardStore, Repositories, FailingOrderPayments) {
        let store = try opening()
        var repositories = Repositories(store)
        let payments = FailingOrderPayments(store)
        repositories.orderPayments = payments
        return (store, repositories, payments)
    }

    /// An engine over `repositories` with the bench's merchant, trust root and processing key (or `key`).
    public static func engine(
        repositories: Repositories, processor: SimulatedProcessor, vault: PaymentVault, clock: ManualClock,
        policy: PaymentsEngine.Policy,
        logHandler: (any LogHandler)? = nil, key: ProcessingKey = orchardHeldKey
    ) -> PaymentsEngine {
        var logger = logHandler.map { handler in Logger(label: "engine-test") { _ in handler } } ?? Logger(label: "engine-test")
        logger.logLevel = logHandler == nil ? .critical : .info
        return PaymentsEngine(
            orderPayments: repositories.orderPayments, refunds: repositories.refunds, mandates: repositories.mandates,
            processors: PaymentProcessors(byMerchant: [merchant: processor]),
            verifier: TokenVerifier(root: tokenChain.root.certificate), decryptors: [merchant: TokenDecryptor(keys: [key])],
            vault: vault, time: clock.source, policy: policy, logger: logger)
    }

    /// The bench's processing key, which Orchard holds.
    public static let orchardHeldKey = try! ProcessingKey(
        privateKeyPEM: processingKey.pemRepresentation, merchantIdentifier: merchant)

    /// As after kill -9: a new engine on a store opened again (for SQLite, a new connection on the
    /// same file); nothing the engine held in memory survives. `key` replaces the bench's processing key.
    public mutating func restart(logHandler: (any LogHandler)? = nil, key: ProcessingKey = orchardHeldKey) throws {
        (store, repositories, payments) = try Self.open(opening)
        engine = Self.engine(
            repositories: repositories, processor: processor, vault: vault, clock: clock, policy: policy, logHandler: logHandler, key: key)
    }

    /// An open order of 9.90 EUR, captured as `capture` says (nil: manually).
    public func order(capture: CaptureMode? = nil) async throws -> OrderRecord {
        let id = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var priced = try Pricing.price(items: [CartItem(productId: "apple", quantity: 2)], catalogue: Self.catalogue, at: clock.now)
        priced.capture = capture
        let order = OrderRecord(
            id: id, merchantIdentifier: Self.merchant, state: .open, priced: priced, applicationData: Array("orchard-order:\(id)".utf8),
            createdAt: clock.now)
        try await store.insert(order)
        return order
    }

    /// A fresh token for the order (a new transaction ID), signed now on the bench's clock.
    public func token(for order: OrderRecord, amount: Int = 990) throws -> PaymentToken {
        PaymentToken(
            paymentData: try minter.mintEC(
                payload: TokenMinter.samplePayload(amount: amount), to: Self.processingKey.publicKey,
                merchantIdentifier: Self.merchant, applicationDataHash: Array(SHA256.hash(data: order.applicationData)),
                signingTime: clock.now))
    }

    /// The shopper taps Pay with a fresh token.
    public func tap(_ order: OrderRecord) async throws -> Result<PaymentRecord, CoreError> {
        let token = try token(for: order)
        do {
            return .success(try await engine.authorize(.init(merchantIdentifier: Self.merchant, orderId: order.id, token: token)))
        } catch {
            return .failure(error)
        }
    }
}

extension Result where Failure == CoreError {
    /// The refusal's code; nil for a success.
    public var failureCode: CoreError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
