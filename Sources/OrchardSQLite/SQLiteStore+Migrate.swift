import Foundation

extension SQLiteStore {
    /// Opens (creating) the database at `path`, brings its schema up to date and closes it: what
    /// `orchard migrate` runs (opening the store does the same). Returns what it created, in the
    /// form `table orders`, `column orders.price_version`, `index orders_by_expiry`: none when
    /// the schema was current.
    public static func migrate(path: String) throws -> [String] {
        let database = try SQLiteDatabase(path: path)
        let before = try SchemaObjects(database)
        try migrate(database)
        return try SchemaObjects(database).added(since: before)
    }

    /// The store at `path` as it is, nothing created or migrated (`orchard doctor`): nil when there
    /// is no file yet, or the file has no `merchant_settings` table yet (serve creates both).
    public static func existing(path: String) throws -> SQLiteStore? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let database = try SQLiteDatabase(path: path)
        let registry = try database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'merchant_settings'")
        return registry.isEmpty ? nil : SQLiteStore(database: database)
    }

    /// The tables (with their columns) and indexes a database holds.
    struct SchemaObjects {
        var tables: [String: Set<String>] = [:]
        var indexes: Set<String> = []

        init(_ database: SQLiteDatabase) throws {
            let rows = try database.query("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
            for row in rows where row.text("type") == "index" { indexes.insert(row.text("name")) }
            for row in rows where row.text("type") == "table" {
                let table = row.text("name")
                tables[table] = Set(try database.query("PRAGMA table_info(\(unescaped: table))").map { $0.text("name") })
            }
        }

        /// What this holds and `before` did not, sorted: new tables, columns added to old ones, new indexes.
        func added(since before: SchemaObjects) -> [String] {
            var added: [String] = []
            for (table, columns) in tables.sorted(by: { $0.key < $1.key }) {
                guard let old = before.tables[table] else {
                    added.append("table \(table)")
                    continue
                }
                added += columns.subtracting(old).sorted().map { "column \(table).\($0)" }
            }
            return added + indexes.subtracting(before.indexes).sorted().map { "index \($0)" }
        }
    }
}
