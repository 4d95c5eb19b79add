import Foundation
import OrchardCore

/// The store's schema in one place: tables as the first release created them, the columns added
/// since (added in place, so an existing database keeps its rows), then the indexes.
extension SQLiteStore {
    static let tables = """
        CREATE TABLE IF NOT EXISTS orders (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, state TEXT NOT NULL, priced TEXT NOT NULL,
            application_data BLOB NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS payments (
            id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id), transaction_id TEXT NOT NULL UNIQUE,
            state TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL, network TEXT, last_four TEXT NOT NULL,
            processor_reference TEXT, created_at INTEGER NOT NULL);
        -- Every token's transaction ID, the first send's and each retry's: a replay of any loses.
        CREATE TABLE IF NOT EXISTS payment_transactions (
            transaction_id TEXT PRIMARY KEY, payment_id TEXT NOT NULL REFERENCES payments(id), created_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS api_keys (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, secret_hash BLOB NOT NULL, created_at INTEGER NOT NULL,
            revoked_at INTEGER);
        CREATE TABLE IF NOT EXISTS payment_requests (
            id TEXT PRIMARY KEY REFERENCES orders(id), merchant TEXT NOT NULL, reference TEXT NOT NULL, metadata TEXT NOT NULL,
            cart TEXT NOT NULL, idempotency_key TEXT NOT NULL, fingerprint BLOB NOT NULL, expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL, UNIQUE (merchant, idempotency_key));
        CREATE TABLE IF NOT EXISTS refunds (
            id TEXT PRIMARY KEY, payment_id TEXT NOT NULL REFERENCES payments(id), amount INTEGER NOT NULL,
            currency TEXT NOT NULL, state TEXT NOT NULL, reference TEXT NOT NULL UNIQUE, idempotency_key TEXT NOT NULL,
            sends INTEGER NOT NULL, processor_reference TEXT, processor_code TEXT, processor_message TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (payment_id, idempotency_key));
        CREATE TABLE IF NOT EXISTS merchant_settings (partner_id TEXT PRIMARY KEY, sealed BLOB NOT NULL, updated_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS webhook_events (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, type TEXT NOT NULL, payload BLOB NOT NULL, created_at INTEGER NOT NULL,
            state TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at INTEGER, last_status INTEGER, last_error TEXT,
            delivered_at INTEGER);
        CREATE TABLE IF NOT EXISTS mandates (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, kind TEXT NOT NULL, payment_id TEXT NOT NULL REFERENCES payments(id),
            order_id TEXT NOT NULL, processor TEXT NOT NULL, credential TEXT NOT NULL, merchant_token_id TEXT,
            merchant_token_metadata TEXT, currency TEXT NOT NULL, network TEXT, last_four TEXT NOT NULL, description TEXT NOT NULL,
            state TEXT NOT NULL, ended_reason TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, ended_at INTEGER);
        CREATE TABLE IF NOT EXISTS token_events (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, event_id TEXT NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,
            attempts INTEGER NOT NULL, created_at INTEGER NOT NULL, next_attempt_at INTEGER, finished_at INTEGER, last_error TEXT,
            UNIQUE (merchant, event_id));
        CREATE TABLE IF NOT EXISTS registered_merchants (
            partner_id TEXT PRIMARY KEY, name TEXT NOT NULL, encrypt_to TEXT NOT NULL, merchant_url TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS registered_domains (
            domain TEXT PRIMARY KEY, partner_id TEXT NOT NULL REFERENCES registered_merchants(partner_id), position INTEGER NOT NULL);
        -- The guard's records: one per watched (merchant, check, target), listed in that order.
        CREATE TABLE IF NOT EXISTS guard_records (
            merchant TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, state TEXT NOT NULL, stage INTEGER NOT NULL,
            detail TEXT NOT NULL, expires_at INTEGER, checked_at INTEGER, first_failure_at INTEGER, changed_at INTEGER,
            failures INTEGER NOT NULL, repairs INTEGER NOT NULL, next_check_at INTEGER NOT NULL, version INTEGER NOT NULL,
            PRIMARY KEY (merchant, kind, target));
        -- Wallet orders: one per payment that has one; the devices registered for each; the pushes owed.
        CREATE TABLE IF NOT EXISTS wallet_orders (
            order_type TEXT NOT NULL, order_id TEXT NOT NULL, merchant TEXT NOT NULL, payment_id TEXT NOT NULL UNIQUE,
            token_hash BLOB NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, version INTEGER NOT NULL,
            fulfillments TEXT NOT NULL, PRIMARY KEY (order_type, order_id));
        CREATE TABLE IF NOT EXISTS wallet_order_devices (
            device_id TEXT NOT NULL, order_type TEXT NOT NULL, order_id TEXT NOT NULL, push_token TEXT NOT NULL,
            created_at INTEGER NOT NULL, PRIMARY KEY (device_id, order_type, order_id));
        CREATE TABLE IF NOT EXISTS wallet_order_pushes (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, order_type TEXT NOT NULL, push_token TEXT NOT NULL,
            attempts INTEGER NOT NULL, created_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, UNIQUE (push_token, order_type));
        -- Merchants' usage keys (sealed), and where each merchant token's usage information stands with Apple.
        CREATE TABLE IF NOT EXISTS usage_keys (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL, sealed BLOB NOT NULL, created_at INTEGER NOT NULL, retired_at INTEGER);
        CREATE TABLE IF NOT EXISTS usage_announcements (
            merchant TEXT NOT NULL, merchant_token_id TEXT NOT NULL, state TEXT NOT NULL, due_at INTEGER, attempts INTEGER NOT NULL,
            token_hash BLOB, previous_token_hash BLOB, token_public_key TEXT, key_id TEXT, announced_at INTEGER, expires_at INTEGER,
            last_error TEXT, version INTEGER NOT NULL, PRIMARY KEY (merchant, merchant_token_id));
        -- Empty but while the readiness check writes one page-sized row and deletes it again.
        CREATE TABLE IF NOT EXISTS store_probe (id INTEGER PRIMARY KEY, filler BLOB NOT NULL);
        """

    /// Columns added after the first release, by table.
    static let addedColumns: [(table: String, columns: [(name: String, definition: String)])] = [
        (
            "payments",
            [
                ("processor", "TEXT NOT NULL DEFAULT 'record'"), ("reference", "TEXT NOT NULL DEFAULT ''"), ("processor_code", "TEXT"),
                ("processor_message", "TEXT"), ("links", "TEXT NOT NULL DEFAULT '{}'"), ("updated_at", "INTEGER NOT NULL DEFAULT 0"),
                ("sends", "INTEGER NOT NULL DEFAULT 1"), ("reconcile_attempts", "INTEGER NOT NULL DEFAULT 0"),
                ("next_reconcile_at", "INTEGER"), ("retry_payload", "BLOB"), ("mandate_id", "TEXT"), ("merchant_token_id", "TEXT"),
                ("merchant_token_metadata", "TEXT"), ("last_sent_at", "INTEGER"), ("operation_until", "INTEGER"),
                // While an automatic capture is owed: when it is next tried, and the refusals so far.
                ("capture_due_at", "INTEGER"), ("capture_attempts", "INTEGER NOT NULL DEFAULT 0"),
                // What a (partial) capture took; NULL before, and for payments captured whole before it was kept.
                ("amount_captured", "INTEGER"),
            ]
        ),
        ("orders", [("expires_at", "INTEGER"), ("price_version", "INTEGER NOT NULL DEFAULT 1")]),
        // Until when a reconciler holds the refund (another process passes it by), and when its
        // reference was last sent (older rows read their last change).
        ("refunds", [("leased_until", "INTEGER"), ("last_sent_at", "INTEGER"), ("released", "INTEGER")]),
        // Who holds a registration for calls to Apple (the guard's repair, an unregistration), until when.
        ("registered_merchants", [("claim", "TEXT"), ("claimed_until", "INTEGER")]),
        // The MPAN's expiry and last digits from Apple's last verified token event (JSON).
        ("mandates", [("merchant_token", "TEXT")]),
        // The event feed's order (`SQLiteStore.insertEvent`); rows written without it (by an
        // Orchard from before it) are numbered after the others, in rowid order, at startup.
        ("webhook_events", [("seq", "INTEGER")]),
    ]

    static let indexes = """
        CREATE INDEX IF NOT EXISTS payments_by_order ON payments(order_id);
        CREATE INDEX IF NOT EXISTS payments_by_state ON payments(state, created_at);
        CREATE INDEX IF NOT EXISTS orders_by_expiry ON orders(state, expires_at);
        CREATE INDEX IF NOT EXISTS refunds_by_state ON refunds(state, updated_at);
        DROP INDEX IF EXISTS webhook_events_due;
        CREATE INDEX IF NOT EXISTS webhook_events_pending ON webhook_events(state, merchant, next_attempt_at);
        UPDATE webhook_events SET seq = rowid + (SELECT COALESCE(MAX(seq), 0) FROM webhook_events) WHERE seq IS NULL;
        CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_seq ON webhook_events(seq);
        CREATE INDEX IF NOT EXISTS webhook_events_feed ON webhook_events(merchant, seq);
        CREATE INDEX IF NOT EXISTS mandates_by_merchant ON mandates(merchant, created_at);
        CREATE INDEX IF NOT EXISTS mandates_by_token ON mandates(merchant_token_id);
        CREATE INDEX IF NOT EXISTS token_events_due ON token_events(state, next_attempt_at);
        CREATE INDEX IF NOT EXISTS token_events_by_source ON token_events(source, state, finished_at);
        CREATE INDEX IF NOT EXISTS guard_records_due ON guard_records(next_check_at);
        CREATE INDEX IF NOT EXISTS wallet_order_devices_by_order ON wallet_order_devices(order_type, order_id);
        CREATE INDEX IF NOT EXISTS wallet_order_devices_by_token ON wallet_order_devices(push_token, order_type);
        CREATE INDEX IF NOT EXISTS wallet_order_pushes_due ON wallet_order_pushes(next_attempt_at);
        CREATE UNIQUE INDEX IF NOT EXISTS usage_keys_current ON usage_keys(merchant) WHERE retired_at IS NULL;
        CREATE INDEX IF NOT EXISTS usage_announcements_due ON usage_announcements(due_at) WHERE due_at IS NOT NULL;
        CREATE INDEX IF NOT EXISTS usage_announcements_by_token ON usage_announcements(merchant_token_id);
        CREATE INDEX IF NOT EXISTS payments_by_mandate ON payments(mandate_id) WHERE mandate_id IS NOT NULL;
        CREATE INDEX IF NOT EXISTS payments_capture_due ON payments(capture_due_at) WHERE capture_due_at IS NOT NULL;
        CREATE UNIQUE INDEX IF NOT EXISTS registered_merchants_lower ON registered_merchants(lower(partner_id));
        """

    /// Creates what is missing; leaves every row in place.
    static func migrate(_ database: SQLiteDatabase) throws {
        let hadTransactions = !(try database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'payment_transactions'"))
            .isEmpty
        try database.executeScript(tables)
        for (table, columns) in addedColumns {
            let existing = Set(try database.query("PRAGMA table_info(\(unescaped: table))").map { $0.text("name") })
            for column in columns where !existing.contains(column.name) {
                try database.execute("ALTER TABLE \(unescaped: table) ADD COLUMN \(unescaped: column.name) \(unescaped: column.definition)")
            }
        }
        try refuseCaseVariants(database)
        try database.executeScript(indexes)
        if !hadTransactions {
            try database.execute("INSERT OR IGNORE INTO payment_transactions SELECT transaction_id, id, created_at FROM payments")
        }
        // Unknown payments from before the reconciler are due for it now.
        try database.execute("UPDATE payments SET next_reconcile_at = updated_at WHERE state = 'unknown' AND next_reconcile_at IS NULL")
    }

    /// Refuses the case-insensitive index while partner IDs that differ only in letter case are
    /// registered (possible before it): which to keep is the operator's call, not a migration's.
    static func refuseCaseVariants(_ database: SQLiteDatabase) throws {
        let groups = try database.query(
            """
            SELECT group_concat(partner_id, ', ') AS ids FROM (SELECT partner_id FROM registered_merchants ORDER BY partner_id)
            GROUP BY lower(partner_id) HAVING count(*) > 1 ORDER BY 1
            """
        ).map { $0.text("ids") }
        guard !groups.isEmpty else { return }
        throw ConfigurationError(RegisteredMerchant.caseVariantsRefusal(groups))
    }
}
