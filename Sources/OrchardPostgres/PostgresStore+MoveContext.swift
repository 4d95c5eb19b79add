import ApplePay
import OrchardCore
import PostgresNIO
import Synchronization

/// What a payment's move reports beside the payment: its order's merchant and payment request.
/// Both are fixed when the order is created (a request is inserted with its order, in one
/// transaction, and never updated), so a claim's read keeps them for the order's moves, and a move
/// written from the engine's payment needs no read. The move's compare-and-set re-checks them all
/// the same: the context is a guess, never the authority.
struct MoveContext: Sendable {
    var merchant: String
    var request: PaymentRequestRecord?
    /// The request's metadata as stored, compared as text.
    var requestMetadata: String?
}

extension MoveContext {
    /// From a row with ``PostgresStore/requestRead``'s columns and the order's merchant as `order_merchant`.
    init(_ row: PostgresRandomAccessRow) throws {
        merchant = try row.text("order_merchant")
        guard try row.optionalText("r_id") != nil else { return }
        let metadata = try row.text("r_metadata")
        requestMetadata = metadata
        request = PaymentRequestRecord(
            id: try row.text("r_id"), merchantIdentifier: try row.text("r_merchant"), reference: try row.text("r_reference"),
            metadata: try PostgresStore.decode([String: String].self, metadata),
            cart: try PostgresStore.decode(ShopCart.self, try row.text("r_cart")), idempotencyKey: try row.text("r_idempotency_key"),
            fingerprint: try row.bytes("r_fingerprint"), expiresAt: try row.date("r_expires_at"), createdAt: try row.date("r_created_at"))
    }
}

extension PostgresStore {
    /// The payment request's columns, as `r_<column>`, of a query joining it as `r`.
    static let requestRead = """
        r.id AS r_id, r.merchant AS r_merchant, r.reference AS r_reference, r.metadata AS r_metadata, r.cart AS r_cart, \
        r.idempotency_key AS r_idempotency_key, r.fingerprint AS r_fingerprint, r.expires_at AS r_expires_at, \
        r.created_at AS r_created_at
        """

    /// How many orders' contexts the store keeps: an authorization claims and moves within
    /// seconds, so this covers every order in flight at thousands per second; when it is full,
    /// it starts again empty (a move without its context reads it).
    static let moveContextLimit = 4096

    /// Keeps `context` for the moves of order `orderId`.
    func remember(_ context: MoveContext, of orderId: String) {
        moveContexts.withLock { contexts in
            if contexts.count >= Self.moveContextLimit, contexts[orderId] == nil { contexts.removeAll(keepingCapacity: true) }
            contexts[orderId] = context
        }
    }
}
