import Foundation
import OrchardCore
import PostgresNIO

/// Claims in two round trips on one leased connection and no transaction: one statement reads
/// what ``PaymentClaimPolicy`` decides from, the policy decides in Swift, and one statement writes
/// the decision only if everything it relied on is still as read. A write that finds a change
/// reads and decides again.
extension PostgresStore {
    /// How often a claim reads and decides before it gives up with today's refusal: each retry
    /// means the order was written meanwhile, so a few suffice.
    static let claimAttempts = 3

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        forgetOrder(claim.draft.orderId)
        // The read and the write on one connection: one lease and one deadline for the claim.
        do {
            return try await claimOnOneConnection(claim)
        } catch {
            throw Self.storeError(error)
        }
    }

    private func claimOnOneConnection(_ claim: PaymentClaim) async throws -> PaymentRecord {
        try await pinned { [self] session in
            if let payment = try await claimFromBasis(claim, on: session) { return payment }
            for _ in 1...Self.claimAttempts {
                let read = try await claimSnapshot(claim, on: session)
                let decision = try PaymentClaimPolicy.decide(claim, read.snapshot)
                // `decide` refuses a claim without an order, so an allowed one has the order's row version.
                guard let version = read.version else { break }
                do {
                    if let payment = try await write(decision, of: claim, read: read.snapshot, version: version, on: session) {
                        return payment
                    }
                } catch let error as PSQLError where error.sqlState == "23505" {
                    // Another order's claim of the same transaction ID committed first (`payment_transactions`' key says so).
                    throw CoreError(.replayedPayment, "transaction \(claim.transactionId.prefix(16))… was already used")
                } catch let error as PSQLError where Self.isPartialMove(error) {
                    continue
                }
            }
            throw CoreError(.orderChanged, "order \(claim.draft.orderId) changed")
        }
    }

    /// The claim decided from what the engine's read of the order kept (``PaymentClaimBasis``) and
    /// written without a read: one round trip. Nil when it carries none, or a read one that is
    /// refused or that the write finds changed: the caller reads, and that read's decision is
    /// the one reported. A remembered one is never read again here: its refusal, or
    /// ``CoreError/Code/orderChanged`` when the write finds the order otherwise, has the engine
    /// decide again from a read.
    private func claimFromBasis(_ claim: PaymentClaim, on session: Pinned) async throws -> PaymentRecord? {
        guard let basis = claim.basis else { return nil }
        let decision: PaymentClaimDecision
        do {
            decision = try PaymentClaimPolicy.decide(claim, basis.snapshot)
        } catch {
            if basis.remembered { throw error }
            return nil
        }
        do {
            if let payment = try await write(decision, of: claim, read: basis.snapshot, version: basis.version, on: session) {
                return payment
            }
        } catch let error as PSQLError where error.sqlState == "23505" {
            throw CoreError(.replayedPayment, "transaction \(claim.transactionId.prefix(16))… was already used")
        } catch let error as PSQLError where Self.isPartialMove(error) {
            // Changed under the guess, and nothing written.
        }
        guard basis.remembered else { return nil }
        throw CoreError(.orderChanged, "order \(claim.draft.orderId) changed since this instance wrote it")
    }

    /// What the policy decides from, in one statement (one snapshot, no lock), and the order row's
    /// version (`xmin`, the transaction that last wrote it): the write requires it unchanged.
    private func claimSnapshot(_ claim: PaymentClaim, on session: Pinned) async throws
        -> (snapshot: PaymentClaimSnapshot, version: String?)
    {
        let orderId = claim.draft.orderId
        let row = try await session.rows(
            """
            SELECT o.state, o.price_version, o.expires_at, o.xmin::text AS version, o.merchant AS order_merchant,
            EXISTS (SELECT 1 FROM payment_transactions WHERE transaction_id = \(claim.transactionId)::text) AS used,
            (SELECT COUNT(*) FROM payments WHERE order_id = \(orderId)::text) AS n, u.id, u.sends, \(unescaped: Self.requestRead)
            FROM (SELECT 1) AS one LEFT JOIN orders o ON o.id = \(orderId)::text LEFT JOIN LATERAL (
                SELECT id, sends FROM payments WHERE order_id = \(orderId)::text AND state = 'unknown' ORDER BY created_at DESC, seq DESC
                LIMIT 1
            ) AS u ON true LEFT JOIN payment_requests r ON r.id = o.id
            """, prepared: Statements.ClaimRead.self
        ).first
        guard let row else { throw StoreError(code: .storage, message: "order \(orderId) could not be read") }
        let order: PaymentClaimSnapshot.Order?
        if let state = try row.optionalText("state") {
            guard let state = OrderRecord.State(rawValue: state) else {
                throw StoreError(code: .storage, message: "order \(orderId) has an unreadable state")
            }
            order = .init(
                state: state, priceVersion: Int(try row.integer("price_version")), expiresAt: try row.optionalDate("expires_at"))
        } else {
            order = nil
        }
        if order != nil {
            // What the order's moves report, kept for them (``MoveContext``).
            remember(try MoveContext(row), of: orderId)
        }
        let snapshot = PaymentClaimSnapshot(
            order: order, transactionUsed: try row.bool("used"),
            unknownAttempt: try row.optionalText("id").map { .init(id: $0, sends: Int(try row.optionalInteger("sends") ?? 1)) },
            attempts: Int(try row.integer("n")))
        return (snapshot, try row.optionalText("version"))
    }

    /// Writes `decision` in one statement; nil when the order had changed since `read` (the caller
    /// reads and decides again). The order's compare-and-set comes first and holds its row lock to
    /// the end, so claims and moves of one order take turns; it re-checks, on the newest row
    /// version if it had to wait for another writer:
    /// - the state and price version the policy decided from (a move, a repricing, an expiry);
    /// - the row version: any write to the order since the read. Every claim and move of the
    ///   order writes its row, so this also pins what the statement's own snapshot cannot see
    ///   after waiting: the payments committed in between (the reference `<order>-<n>`), the
    ///   unknown attempt's sends;
    /// - the number of payments and the transaction ID, as of the statement's snapshot (a
    ///   concurrent claim of the same ID on another order is left to `payment_transactions`' key: 23505).
    /// A re-send also re-checks the unknown attempt's state and sends in its own compare-and-set;
    /// if the order moved and that did not, the statement fails as a whole (``isPartialMove(_:)``).
    private func write(
        _ decision: PaymentClaimDecision, of claim: PaymentClaim, read: PaymentClaimSnapshot, version: String, on session: Pinned
    ) async throws -> PaymentRecord? {
        let orderId = claim.draft.orderId
        let query: PostgresQuery
        // Every value is cast: the statements are prepared (``Statements``) without parameter types.
        switch decision.attempt {
        case .first(let record):
            let links = try Self.json(record.links)
            let metadata = try record.merchantTokenMetadata.map(Self.json)
            query = """
                WITH \(movedOrder: decision, of: claim, read: read, version: version),
                attempt AS (
                    INSERT INTO payments (\(unescaped: Self.paymentColumns), retry_payload) SELECT
                    \(record.id)::text, \(record.orderId)::text, \(record.transactionId)::text, \(record.state.rawValue)::text,
                    \(record.amount)::bigint, \(record.currency)::text, \(record.network)::text, \(record.lastFour)::text,
                    \(record.processorReference)::text, \(record.createdAt)::timestamptz, \(record.processor)::text,
                    \(record.reference)::text, \(record.processorCode)::text, \(record.processorMessage)::text, \(links)::text,
                    \(record.updatedAt)::timestamptz, \(Int64(record.sends))::bigint, \(Int64(record.reconcileAttempts))::bigint,
                    \(record.nextReconcileAt)::timestamptz, \(record.mandateId)::text, \(record.merchantTokenIdentifier)::text,
                    \(metadata)::text, \(record.lastSentAt)::timestamptz, \(record.captureDueAt)::timestamptz,
                    \(Int64(record.captureAttempts))::bigint, \(record.amountCaptured)::bigint, \(claim.sealedRequest.bytea)::bytea
                    FROM moved_order RETURNING \(unescaped: Self.paymentColumns)),
                recorded AS (
                    INSERT INTO payment_transactions (transaction_id, payment_id, created_at)
                    SELECT \(claim.transactionId)::text, id, \(claim.draft.createdAt)::timestamptz FROM attempt RETURNING payment_id)
                \(unescaped: Self.partialGuard)
                """
            return try await session.statement(query, prepared: Statements.ClaimFirst.self).first.map(Self.payment)
        case .resend(let paymentId, let sends):
            let now = claim.draft.createdAt
            query = """
                WITH \(movedOrder: decision, of: claim, read: read, version: version),
                attempt AS (
                    UPDATE payments SET state = \(decision.move.to.rawValue)::text, sends = sends + 1,
                    retry_payload = \(claim.sealedRequest.bytea)::bytea, updated_at = \(now)::timestamptz, last_sent_at = \(now)::timestamptz
                    WHERE id = \(paymentId)::text AND order_id = \(orderId)::text AND state = \(decision.move.from?.rawValue ?? "")::text
                    AND sends = \(Int64(sends))::bigint AND EXISTS (SELECT 1 FROM moved_order)
                    RETURNING \(unescaped: Self.paymentColumns)),
                recorded AS (
                    INSERT INTO payment_transactions (transaction_id, payment_id, created_at)
                    SELECT \(claim.transactionId)::text, id, \(now)::timestamptz FROM attempt RETURNING payment_id)
                \(unescaped: Self.partialGuard)
                """
            return try await session.statement(query, prepared: Statements.ClaimResend.self).first.map(Self.payment)
        }
    }

    /// The main query of a statement that moves an order (`moved_order`) and its payment
    /// (`attempt`): the payment's row, or none when the order did not move. An order that moved
    /// without its payment fails the whole statement (a cast of a text naming it to an integer),
    /// so nothing of it is committed: the one way to roll back a single statement.
    static let partialGuard = """
        SELECT attempt.*, CASE WHEN attempt.id IS NULL THEN ('orchard: order ' || moved_order.id || ' moved without its payment')::integer
        END AS partial FROM moved_order LEFT JOIN attempt ON true
        """

    /// Whether `error` is ``partialGuard``'s: the statement changed nothing.
    static func isPartialMove(_ error: PSQLError) -> Bool {
        error.sqlState == "22P02" && (error.serverInfo?[.message]?.contains("moved without its payment") ?? false)
    }
}

extension PostgresQuery.StringInterpolation {
    /// `moved_order`, the order's compare-and-set both claim statements start with
    /// (``PostgresStore/write(_:of:read:version:)`` says what it re-checks): the order's ID when it
    /// moved, no row when anything it relied on changed. Written once, appended in place so that
    /// its values take their turn among the statement's parameters.
    mutating func appendInterpolation(
        movedOrder decision: PaymentClaimDecision, of claim: PaymentClaim, read: PaymentClaimSnapshot, version: String
    ) {
        let orderId = claim.draft.orderId
        appendLiteral("moved_order AS (\n    UPDATE orders SET state = ")
        appendInterpolation(decision.move.order.to.rawValue)
        appendLiteral("::text\n    WHERE id = ")
        appendInterpolation(orderId)
        appendLiteral("::text AND state = ")
        appendInterpolation(decision.move.order.from.rawValue)
        appendLiteral("::text\n    AND price_version = ")
        appendInterpolation(Int64(decision.priceVersion))
        appendLiteral("::bigint AND xmin = ")
        appendInterpolation(version)
        appendLiteral("::text::xid\n    AND (SELECT COUNT(*) FROM payments WHERE order_id = ")
        appendInterpolation(orderId)
        appendLiteral("::text) = ")
        appendInterpolation(Int64(read.attempts))
        appendLiteral("::bigint\n    AND NOT EXISTS (SELECT 1 FROM payment_transactions WHERE transaction_id = ")
        appendInterpolation(claim.transactionId)
        appendLiteral("::text)\n    RETURNING id)")
    }
}
