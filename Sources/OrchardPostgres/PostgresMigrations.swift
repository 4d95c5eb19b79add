import Logging
import NIOCore
import NIOPosix
import OrchardCore
import PostgresNIO

/// The schema, as numbered migrations. A database records the versions it has in
/// `schema_migrations`; at startup every one it lacks runs, in order, in one transaction, under
/// an advisory lock, so instances started together migrate once and the others wait for it. A
/// version this Orchard does not know means a newer Orchard wrote the schema: refused.
/// Append a migration for every change; never edit a released one.
enum PostgresMigrations {
    struct Migration {
        var version: Int
        var description: String
        var statements: [String]
        /// Refuses (throws) before the statements run when the data would break them, saying what to do.
        var check: (@Sendable (PostgresConnection, Logger) async throws -> Void)? = nil
    }

    /// Held (for the transaction) by whoever migrates: the bigint lock space, apart from the
    /// (int, int) locks the store takes on rows that do not exist yet.
    static let lockKey: Int64 = 0x6F72_6368_6172_6400  // "orchard\0"

    static let all: [Migration] = [
        Migration(version: 1, description: "orders, payments, registry, payments API and webhook outbox", statements: initial),
        Migration(version: 2, description: "mandates, and the merchant token a payment came with", statements: mandates),
        Migration(version: 3, description: "when each payment's and refund's reference was last sent", statements: lastSends),
        Migration(version: 4, description: "the token-event inbox: Apple's merchant token notifications", statements: tokenEvents),
        Migration(
            version: 5, description: "a settle or cancel holds its payment until it ends",
            statements: ["ALTER TABLE payments ADD COLUMN operation_until timestamptz"]),
        Migration(
            version: 6, description: "an order's price version: a payment is claimed for the price its token was checked against",
            statements: ["ALTER TABLE orders ADD COLUMN price_version bigint NOT NULL DEFAULT 1"]),
        Migration(
            version: 7, description: "the webhook lease reads each merchant's pending events in order, not the whole backlog",
            statements: [
                "CREATE INDEX webhook_events_pending ON webhook_events (merchant, next_attempt_at, seq) WHERE state = 'pending'",
                "DROP INDEX webhook_events_due",
            ]),
        Migration(
            version: 8, description: "the guard's records: what it watches, where each stands, when each is due", statements: guardRecords),
        Migration(
            version: 9,
            description: "one registered merchant per partner ID in any letter case, and a claim on a registration for calls to Apple",
            statements: [
                "ALTER TABLE registered_merchants ADD COLUMN claim text, ADD COLUMN claimed_until timestamptz",
                "CREATE UNIQUE INDEX registered_merchants_lower ON registered_merchants (lower(partner_id))",
            ], check: refuseCaseVariants),
        Migration(
            version: 10, description: "a payment costs fewer writes: two indexes nothing reads dropped", statements: leanerPayments),
        Migration(
            version: 11, description: "Wallet orders, the devices registered for them and the pushes owed them", statements: walletOrders),
        Migration(
            version: 12, description: "a mandate's MPAN expiry and last digits from Apple's verified token events",
            statements: ["ALTER TABLE mandates ADD COLUMN merchant_token text"]),
        Migration(
            version: 13, description: "merchants' usage keys and their merchant tokens' usage announcements", statements: merchantTokenUsage
        ),
        Migration(version: 14, description: "the event feed: each webhook event's writing transaction", statements: eventFeed),
        Migration(
            version: 15, description: "automatic capture: when each authorized payment's capture is next tried, and its refusals",
            statements: [
                "ALTER TABLE payments ADD COLUMN capture_due_at timestamptz, ADD COLUMN capture_attempts bigint NOT NULL DEFAULT 0",
                "CREATE INDEX payments_capture_due ON payments (capture_due_at) WHERE capture_due_at IS NOT NULL",
            ]),
        Migration(
            version: 16, description: "partial capture: what each payment's capture took",
            statements: ["ALTER TABLE payments ADD COLUMN amount_captured bigint"]),
        Migration(
            version: 17, description: "a refund of an uncaptured payment releases its amount",
            statements: ["ALTER TABLE refunds ADD COLUMN released boolean"]),
    ]

    /// The transaction that wrote each event (`PostgresStore.webhookEventFeed`). Rows from before
    /// take 0, a constant (no rewrite of the table), so they come first, in insertion order: the
    /// ALTER waited for every transaction writing them, so all are committed.
    static let eventFeed = [
        "ALTER TABLE webhook_events ADD COLUMN xid xid8 NOT NULL DEFAULT '0'",
        "ALTER TABLE webhook_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id()",
        "CREATE INDEX webhook_events_feed ON webhook_events (merchant, xid, seq)",
    ]

    /// One current usage key per merchant (a partial unique index); one announcement per
    /// (merchant, token), leased by due time; a mandate's payments, found for its usage information.
    static let merchantTokenUsage = [
        """
        CREATE TABLE usage_keys (
            id text PRIMARY KEY, merchant text NOT NULL, sealed bytea NOT NULL, created_at timestamptz NOT NULL, retired_at timestamptz)
        """,
        "CREATE UNIQUE INDEX usage_keys_current ON usage_keys (merchant) WHERE retired_at IS NULL",
        """
        CREATE TABLE usage_announcements (
            merchant text NOT NULL, merchant_token_id text NOT NULL, state text NOT NULL, due_at timestamptz, attempts bigint NOT NULL,
            token_hash bytea, previous_token_hash bytea, token_public_key text, key_id text, announced_at timestamptz,
            expires_at timestamptz, last_error text, version bigint NOT NULL, PRIMARY KEY (merchant, merchant_token_id))
        """,
        "CREATE INDEX usage_announcements_due ON usage_announcements (due_at) WHERE due_at IS NOT NULL",
        "CREATE INDEX usage_announcements_by_token ON usage_announcements (merchant_token_id)",
        "CREATE INDEX payments_by_mandate ON payments (mandate_id) WHERE mandate_id IS NOT NULL",
    ]

    /// One Wallet order per payment that has one, keyed as Wallet names it; the devices Wallet
    /// registered, found by order (to push) and by token (a 410 removes a token's); the push
    /// outbox, one row per (token, type), leased by due time.
    static let walletOrders = [
        """
        CREATE TABLE wallet_orders (
            order_type text NOT NULL, order_id text NOT NULL, merchant text NOT NULL, payment_id text NOT NULL UNIQUE,
            token_hash bytea NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version bigint NOT NULL,
            fulfillments text NOT NULL, PRIMARY KEY (order_type, order_id))
        """,
        """
        CREATE TABLE wallet_order_devices (
            device_id text NOT NULL, order_type text NOT NULL, order_id text NOT NULL, push_token text NOT NULL,
            created_at timestamptz NOT NULL, PRIMARY KEY (device_id, order_type, order_id))
        """,
        "CREATE INDEX wallet_order_devices_by_order ON wallet_order_devices (order_type, order_id)",
        "CREATE INDEX wallet_order_devices_by_token ON wallet_order_devices (push_token, order_type)",
        """
        CREATE TABLE wallet_order_pushes (
            seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, merchant text NOT NULL, order_type text NOT NULL,
            push_token text NOT NULL, attempts bigint NOT NULL, created_at timestamptz NOT NULL, next_attempt_at timestamptz NOT NULL,
            UNIQUE (push_token, order_type))
        """,
        "CREATE INDEX wallet_order_pushes_due ON wallet_order_pushes (next_attempt_at, seq)",
    ]

    /// Every payment's claim inserts its row and every move writes a new version of it (its state
    /// is in the queues' partial indexes, so no update is HOT), each time into every index.
    /// - `payments_transaction_id_key` repeats `payment_transactions`' key: the claim inserts the
    ///   first transaction ID into both in one statement, so that key alone refuses a reused one.
    /// - `payments_seq_key`: `seq` only breaks ties in orderings led by another column.
    static let leanerPayments = [
        "ALTER TABLE payments DROP CONSTRAINT payments_transaction_id_key",
        "ALTER TABLE payments DROP CONSTRAINT payments_seq_key",
    ]

    /// Refuses the case-insensitive index while partner IDs that differ only in letter case are
    /// registered (possible before it): which to keep is the operator's call, not a migration's.
    @Sendable static func refuseCaseVariants(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            SELECT string_agg(partner_id, ', ' ORDER BY partner_id) FROM registered_merchants
            GROUP BY lower(partner_id) HAVING count(*) > 1 ORDER BY 1
            """, logger: logger
        ).collect()
        let groups = try rows.map { try $0.makeRandomAccess()[0].decode(String.self) }
        guard !groups.isEmpty else { return }
        throw ConfigurationError(RegisteredMerchant.caseVariantsRefusal(groups))
    }

    /// One row per watched (merchant, check, target). The key's columns sort by byte (`C`), as the
    /// other stores list them, whatever the database's collation; the lease reads by due time.
    static let guardRecords = [
        """
        CREATE TABLE guard_records (
            merchant text COLLATE "C" NOT NULL, kind text COLLATE "C" NOT NULL, target text COLLATE "C" NOT NULL,
            state text NOT NULL, stage bigint NOT NULL, detail text NOT NULL, expires_at timestamptz, checked_at timestamptz,
            first_failure_at timestamptz, changed_at timestamptz, failures bigint NOT NULL, repairs bigint NOT NULL,
            next_check_at timestamptz NOT NULL, version bigint NOT NULL, PRIMARY KEY (merchant, kind, target))
        """,
        "CREATE INDEX guard_records_due ON guard_records (next_check_at)",
    ]

    /// Apple's notifications, one row per (merchant, event ID); leased by due time per source,
    /// counted per source while pending, and read per source once finished (its standing).
    static let tokenEvents = [
        """
        CREATE TABLE token_events (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, merchant text NOT NULL, event_id text NOT NULL,
            source text NOT NULL, state text NOT NULL, attempts bigint NOT NULL, created_at timestamptz NOT NULL,
            next_attempt_at timestamptz, finished_at timestamptz, last_error text, UNIQUE (merchant, event_id))
        """,
        "CREATE INDEX token_events_due ON token_events (next_attempt_at) WHERE state = 'pending'",
        "CREATE INDEX token_events_pending_by_source ON token_events (source) WHERE state = 'pending'",
        "CREATE INDEX token_events_finished_by_source ON token_events (source, state, finished_at) WHERE state <> 'pending'",
        "CREATE INDEX token_events_finished ON token_events (finished_at) WHERE state <> 'pending'",
    ]

    /// Rows from before keep NULL: the engine reads their last change instead.
    static let lastSends = [
        "ALTER TABLE payments ADD COLUMN last_sent_at timestamptz",
        "ALTER TABLE refunds ADD COLUMN last_sent_at timestamptz",
    ]

    static let mandates = [
        """
        ALTER TABLE payments ADD COLUMN mandate_id text, ADD COLUMN merchant_token_id text, ADD COLUMN merchant_token_metadata text
        """,
        """
        CREATE TABLE mandates (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, merchant text NOT NULL, kind text NOT NULL,
            payment_id text NOT NULL REFERENCES payments (id), order_id text NOT NULL, processor text NOT NULL, credential text NOT NULL,
            merchant_token_id text, merchant_token_metadata text, currency text NOT NULL, network text, last_four text NOT NULL,
            description text NOT NULL, state text NOT NULL, ended_reason text, created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL, ended_at timestamptz)
        """,
        "CREATE INDEX mandates_by_merchant ON mandates (merchant, created_at)",
        "CREATE INDEX mandates_by_token ON mandates (merchant_token_id)",
    ]

    /// Timestamps are `timestamptz` (microseconds); `seq` keeps insertion order where rows tie on time.
    static let initial = [
        """
        CREATE TABLE orders (
            id text PRIMARY KEY, merchant text NOT NULL, state text NOT NULL, priced text NOT NULL, application_data bytea NOT NULL,
            created_at timestamptz NOT NULL, expires_at timestamptz)
        """,
        "CREATE INDEX orders_by_expiry ON orders (expires_at) WHERE state = 'open'",
        """
        CREATE TABLE payments (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, order_id text NOT NULL REFERENCES orders (id),
            transaction_id text NOT NULL CONSTRAINT payments_transaction_id_key UNIQUE, state text NOT NULL, amount bigint NOT NULL,
            currency text NOT NULL, network text, last_four text NOT NULL, processor_reference text, created_at timestamptz NOT NULL,
            processor text NOT NULL, reference text NOT NULL, processor_code text, processor_message text, links text NOT NULL,
            updated_at timestamptz NOT NULL, sends bigint NOT NULL, reconcile_attempts bigint NOT NULL,
            next_reconcile_at timestamptz, retry_payload bytea)
        """,
        "CREATE INDEX payments_by_order ON payments (order_id)",
        "CREATE INDEX payments_by_state ON payments (state, created_at)",
        "CREATE INDEX payments_due ON payments (next_reconcile_at) WHERE state = 'unknown'",
        "CREATE INDEX payments_pending ON payments (updated_at) WHERE state = 'pending'",
        """
        CREATE TABLE payment_transactions (
            transaction_id text CONSTRAINT payment_transactions_pkey PRIMARY KEY, payment_id text NOT NULL REFERENCES payments (id),
            created_at timestamptz NOT NULL)
        """,
        """
        CREATE TABLE registered_merchants (
            partner_id text PRIMARY KEY, name text NOT NULL, encrypt_to text NOT NULL, merchant_url text,
            created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)
        """,
        """
        CREATE TABLE registered_domains (
            domain text CONSTRAINT registered_domains_pkey PRIMARY KEY,
            partner_id text NOT NULL REFERENCES registered_merchants (partner_id), position integer NOT NULL)
        """,
        """
        CREATE TABLE api_keys (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, merchant text NOT NULL, secret_hash bytea NOT NULL,
            created_at timestamptz NOT NULL, revoked_at timestamptz)
        """,
        "CREATE INDEX api_keys_by_merchant ON api_keys (merchant, created_at)",
        """
        CREATE TABLE payment_requests (
            id text PRIMARY KEY REFERENCES orders (id), merchant text NOT NULL, reference text NOT NULL, metadata text NOT NULL,
            cart text NOT NULL, idempotency_key text NOT NULL, fingerprint bytea NOT NULL, expires_at timestamptz NOT NULL,
            created_at timestamptz NOT NULL, UNIQUE (merchant, idempotency_key))
        """,
        """
        CREATE TABLE refunds (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, payment_id text NOT NULL REFERENCES payments (id),
            amount bigint NOT NULL, currency text NOT NULL, state text NOT NULL, reference text NOT NULL UNIQUE,
            idempotency_key text NOT NULL, sends bigint NOT NULL, processor_reference text, processor_code text,
            processor_message text, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, leased_until timestamptz,
            UNIQUE (payment_id, idempotency_key))
        """,
        "CREATE INDEX refunds_by_state ON refunds (state, updated_at)",
        "CREATE TABLE merchant_settings (partner_id text PRIMARY KEY, sealed bytea NOT NULL, updated_at timestamptz NOT NULL)",
        """
        CREATE TABLE webhook_events (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY, merchant text NOT NULL, type text NOT NULL,
            payload bytea NOT NULL, created_at timestamptz NOT NULL, state text NOT NULL, attempts bigint NOT NULL,
            next_attempt_at timestamptz, last_status bigint, last_error text, delivered_at timestamptz)
        """,
        "CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending'",
        "CREATE INDEX webhook_events_by_creation ON webhook_events (created_at, seq)",
    ]

    /// Brings the database to the newest version; returns the versions applied (empty when current).
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        do {
            return try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                    """, logger: logger)
                let rows = try await connection.query("SELECT version FROM schema_migrations", logger: logger).collect()
                let present = Set(try rows.map { try $0.makeRandomAccess()[0].decode(Int.self) })
                let newest = all.last?.version ?? 0
                if let unknown = present.subtracting(all.map(\.version)).max() {
                    throw ConfigurationError(
                        "the database's schema is version \(unknown), newer than this Orchard knows (\(newest)): run a newer Orchard")
                }
                // Every migration the database lacks, in order, whatever the highest it has: one
                // skipped (a gap left by a branch merged later, a row removed by hand) still runs.
                var applied: [Int] = []
                for migration in all where !present.contains(migration.version) {
                    try await migration.check?(connection, logger)
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, description) VALUES (\(migration.version), \(migration.description))",
                        logger: logger)
                    applied.append(migration.version)
                }
                return applied
            }
        } catch {
            throw PostgresStore.cause(error)
        }
    }
}

extension PostgresStore {
    /// What `orchard doctor` says of the database, read without changing anything: whether it
    /// answers, and its schema version beside this Orchard's.
    public static func inspect(
        _ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ConfigurationError) -> String {
        let connection = try await connectOnce(settings, logger: logger, eventLoops: eventLoops)
        let result: Result<String, ConfigurationError>
        do {
            result = .success(try await describeSchema(connection, settings: settings, logger: logger))
        } catch {
            result = .failure(error)
        }
        try? await connection.close()
        return try result.get()
    }

    /// The store on the database as it is, nothing created or migrated (`orchard doctor` reads the
    /// registered merchants' settings with it): nil when the database has no `merchant_settings`
    /// table yet (orchard serve creates it). Run it with ``withRunning(_:)``.
    public static func existing(
        _ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ConfigurationError) -> PostgresStore? {
        let connection = try await connectOnce(settings, logger: logger, eventLoops: eventLoops)
        let found: Bool?
        do {
            let rows = try await connection.query("SELECT to_regclass('merchant_settings') IS NOT NULL", logger: logger).collect()
            found = try rows.first?.makeRandomAccess()[0].decode(Bool.self)
        } catch {
            try? await connection.close()
            throw ConfigurationError(
                "\(settings.database) on \(settings.location) answers but whether it holds registered merchants' settings cannot be read: \(String(reflecting: error))"
            )
        }
        try? await connection.close()
        guard found == true else { return nil }
        return try client(settings, logger: logger, eventLoops: eventLoops)
    }

    private static func describeSchema(
        _ connection: PostgresConnection, settings: PostgresSettings, logger: Logger
    ) async throws(ConfigurationError) -> String {
        let place = "\(settings.database) on \(settings.location) (TLS \(settings.tls.rawValue))"
        let newest = PostgresMigrations.all.last?.version ?? 0
        let current: Int
        do {
            let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger).collect()
            guard try exists.first?.makeRandomAccess()[0].decode(Bool.self) == true else {
                return "\(place) answers; it has no Orchard tables yet (orchard serve creates them)"
            }
            let rows = try await connection.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", logger: logger).collect()
            current = try rows.first?.makeRandomAccess()[0].decode(Int.self) ?? 0
        } catch {
            throw ConfigurationError("\(place) answers but its schema cannot be read: \(String(reflecting: error))")
        }
        guard current <= newest else {
            throw ConfigurationError(
                "\(place): the schema is version \(current), newer than this Orchard knows (\(newest)): run a newer Orchard")
        }
        return current == newest
            ? "\(place) answers; schema version \(current), this Orchard's"
            : "\(place) answers; schema version \(current), orchard serve will migrate it to \(newest)"
    }
}
