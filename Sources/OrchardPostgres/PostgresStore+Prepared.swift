import PostgresNIO
import Synchronization

/// The statements every authorization sends, prepared once per connection (issue 24). Sent as
/// an unnamed statement, each was parsed, analysed and planned by the server on every call, and
/// their CTEs are large: that, not Orchard, bounded a PostgreSQL authorization. Prepared, the
/// server parses and analyses each once per connection and keeps its plan.
///
/// Every parameter of a prepared statement carries a cast (`$1::text`, `$2::bigint`): the
/// statement is prepared without parameter types, so the server takes each from its cast, and
/// postgres-nio binds each value in the binary format of that type (a `String` as `text`, an
/// `Int64` as `bigint`, a `Date` as `timestamptz`). Each is a lookup by primary key or an
/// indexed column, so the generic plan PostgreSQL may choose after five runs is the custom one.
protocol PreparedStatementName: SendableMetatype {
    /// The statement's name on each connection: unique among the store's statements.
    static var name: String { get }
}

/// One of the store's prepared statements with this call's values; its text is the one the
/// store's query builds (``PreparedTexts``).
struct Prepared<Name: PreparedStatementName>: PostgresPreparedStatement {
    typealias Row = PostgresRandomAccessRow
    static var name: String { Name.name }
    static var sql: String { PreparedTexts.text(of: Name.name) }
    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// The text of each prepared statement, as its query builds it: postgres-nio asks a prepared
/// statement's text of its type, while the store builds each query, values and all, by string
/// interpolation. A name is given one text for the life of the process; another is a defect.
enum PreparedTexts {
    private static let texts = Mutex<[String: String]>([:])

    static func register(_ sql: String, as name: String) {
        let earlier = texts.withLock { texts in
            if let earlier = texts[name] { return earlier }
            texts[name] = sql
            return sql
        }
        precondition(earlier == sql, "prepared statement \(name) was given two texts")
    }

    static func text(of name: String) -> String {
        texts.withLock { $0[name] } ?? ""
    }
}

/// The store's prepared statements.
enum Statements {
    enum OrderRead: PreparedStatementName { static let name = "order_read" }
    enum ClaimRead: PreparedStatementName { static let name = "claim_read" }
    enum ClaimableOrderRead: PreparedStatementName { static let name = "claimable_order_read" }
    enum ClaimFirst: PreparedStatementName { static let name = "claim_first" }
    enum ClaimResend: PreparedStatementName { static let name = "claim_resend" }
    enum MoveRead: PreparedStatementName { static let name = "move_read" }
    enum Move: PreparedStatementName { static let name = "move" }
}
