import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `store`: where orders, payments and the webhook outbox are kept. Absent (or without
    /// `postgres`): SQLite in the state folder.
    public struct Store: Codable, Sendable {
        public var postgres: Postgres?

        enum CodingKeys: String, CodingKey, CaseIterable { case postgres }

        public init(postgres: Postgres? = nil) {
            self.postgres = postgres
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            postgres = try container.decodeIfPresent(Postgres.self, forKey: .postgres)
        }
    }

    /// `store.postgres`: one database that every instance shares.
    public struct Postgres: Codable, Sendable {
        /// A host name or IP address; or `socket` instead.
        public var host: String?
        /// Default 5432; with `socket`, names the socket file in a socket folder.
        public var port: Int?
        /// A Unix socket: the socket file, or the folder holding `.s.PGSQL.<port>`.
        public var socket: String?
        public var database: String
        public var user: String
        /// `env:NAME` or a file holding the password, never the password itself; absent: none sent.
        public var password: String?
        public var tls: TLS?
        /// Connections each instance opens at most (default 10).
        public var poolSize: Int?
        /// How long opening a connection may take (default 3000).
        public var connectTimeoutMilliseconds: Int?
        /// How long a request waits for a pooled connection before it is answered 503 (default 3000).
        public var acquireTimeoutMilliseconds: Int?
        /// PostgreSQL's `statement_timeout` on every connection (default 5000).
        public var statementTimeoutMilliseconds: Int?
        /// PostgreSQL's `lock_timeout`: how long a statement waits for a row lock (default 3000).
        public var lockTimeoutMilliseconds: Int?
        /// PostgreSQL's `idle_in_transaction_session_timeout`: frees a vanished client's row locks (default 10000).
        public var idleInTransactionTimeoutMilliseconds: Int?
        /// How long a statement or transaction may take once it has its connection before the
        /// connection is closed and the request answered 503 (default 8000; more than the statement timeout).
        public var callTimeoutMilliseconds: Int?
        /// TCP keepalive on both ends: idle seconds before the first probe (default 10), seconds
        /// between probes (default 5), unanswered probes that end the connection (default 3).
        public var keepaliveIdleSeconds: Int?
        public var keepaliveIntervalSeconds: Int?
        public var keepaliveCount: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case host, port, socket, database, user, password, tls, poolSize, connectTimeoutMilliseconds, acquireTimeoutMilliseconds
            case statementTimeoutMilliseconds, lockTimeoutMilliseconds, idleInTransactionTimeoutMilliseconds, callTimeoutMilliseconds
            case keepaliveIdleSeconds, keepaliveIntervalSeconds, keepaliveCount
        }

        public init(
            host: String? = nil, port: Int? = nil, socket: String? = nil, database: String, user: String, password: String? = nil,
            tls: TLS? = nil, poolSize: Int? = nil, connectTimeoutMilliseconds: Int? = nil, acquireTimeoutMilliseconds: Int? = nil,
            statementTimeoutMilliseconds: Int? = nil, lockTimeoutMilliseconds: Int? = nil, idleInTransactionTimeoutMilliseconds: Int? = nil,
            callTimeoutMilliseconds: Int? = nil, keepaliveIdleSeconds: Int? = nil, keepaliveIntervalSeconds: Int? = nil,
            keepaliveCount: Int? = nil
        ) {
            self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
            self.lockTimeoutMilliseconds = lockTimeoutMilliseconds
            self.idleInTransactionTimeoutMilliseconds = idleInTransactionTimeoutMilliseconds
            self.callTimeoutMilliseconds = callTimeoutMilliseconds
            self.keepaliveIdleSeconds = keepaliveIdleSeconds
            self.keepaliveIntervalSeconds = keepaliveIntervalSeconds
            self.keepaliveCount = keepaliveCount
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.acquireTimeoutMilliseconds = acquireTimeoutMilliseconds
            self.host = host
            self.port = port
            self.socket = socket
            self.database = database
            self.user = user
            self.password = password
            self.tls = tls
            self.poolSize = poolSize
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            host = try container.decodeIfPresent(String.self, forKey: .host)
            port = try container.decodeIfPresent(Int.self, forKey: .port)
            socket = try container.decodeIfPresent(String.self, forKey: .socket)
            database = try container.decode(String.self, forKey: .database)
            user = try container.decode(String.self, forKey: .user)
            password = try container.decodeIfPresent(String.self, forKey: .password)
            tls = try container.decodeIfPresent(TLS.self, forKey: .tls)
            poolSize = try container.decodeIfPresent(Int.self, forKey: .poolSize)
            connectTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .connectTimeoutMilliseconds)
            acquireTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .acquireTimeoutMilliseconds)
            statementTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .statementTimeoutMilliseconds)
            lockTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .lockTimeoutMilliseconds)
            idleInTransactionTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .idleInTransactionTimeoutMilliseconds)
            callTimeoutMilliseconds = try container.decodeIfPresent(Int.self, forKey: .callTimeoutMilliseconds)
            keepaliveIdleSeconds = try container.decodeIfPresent(Int.self, forKey: .keepaliveIdleSeconds)
            keepaliveIntervalSeconds = try container.decodeIfPresent(Int.self, forKey: .keepaliveIntervalSeconds)
            keepaliveCount = try container.decodeIfPresent(Int.self, forKey: .keepaliveCount)
        }
    }

    /// `store.postgres.tls`.
    public struct TLS: Codable, Sendable {
        /// `disable`, `require` (encrypted, certificate unchecked) or `verify-full`. Default:
        /// `disable` for localhost, 127.0.0.1 and ::1, `verify-full` for any other host.
        public var mode: String?
        /// PEM certificates to trust for `verify-full` instead of the system's.
        public var caFile: String?

        enum CodingKeys: String, CodingKey, CaseIterable { case mode, caFile }

        public init(mode: String? = nil, caFile: String? = nil) {
            self.mode = mode
            self.caFile = caFile
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            mode = try container.decodeIfPresent(String.self, forKey: .mode)
            caFile = try container.decodeIfPresent(String.self, forKey: .caFile)
        }
    }
}

extension ServerConfiguration {
    /// `store`: SQLite unless `store.postgres` is given; then its endpoint, login, TLS and pool, checked.
    static func resolveStore(_ file: ConfigurationFile.Store?, values: ConfigurationValues) throws(ConfigurationError) -> StoreSettings {
        guard let postgres = file?.postgres else { return .sqlite }
        let label = "store.postgres"
        let port = postgres.port ?? 5432
        guard (1...65_535).contains(port) else { throw ConfigurationError("\(label).port must be 1–65535") }
        let endpoint: PostgresSettings.Endpoint
        switch (postgres.host?.trimmingCharacters(in: .whitespaces), postgres.socket) {
        case (let host?, nil) where !host.isEmpty:
            endpoint = .tcp(host: host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host, port: port)
        case (nil, let socket?) where !socket.isEmpty:
            var path = values.path(socket)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
                path = URL(fileURLWithPath: path).appendingPathComponent(".s.PGSQL.\(port)").path
            }
            endpoint = .socket(path: path)
        default:
            throw ConfigurationError("\(label): give either host (and port) or socket (a Unix socket file or its folder)")
        }
        for (key, value) in [("database", postgres.database), ("user", postgres.user)]
        where value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigurationError("\(label).\(key) must not be empty")
        }
        let poolSize = postgres.poolSize ?? defaultPoolSize(cores: ProcessInfo.processInfo.activeProcessorCount)
        guard (1...100).contains(poolSize) else { throw ConfigurationError("\(label).poolSize must be 1–100") }
        func timeout(_ key: String, _ value: Int?, default fallback: Duration) throws(ConfigurationError) -> Duration {
            guard let value else { return fallback }
            guard (100...60_000).contains(value) else { throw ConfigurationError("\(label).\(key) must be 100–60000") }
            return .milliseconds(value)
        }
        let connectTimeout = try timeout(
            "connectTimeoutMilliseconds", postgres.connectTimeoutMilliseconds, default: PostgresSettings.defaultConnectTimeout)
        let acquireTimeout = try timeout(
            "acquireTimeoutMilliseconds", postgres.acquireTimeoutMilliseconds, default: PostgresSettings.defaultAcquireTimeout)
        let limits = try resolveSessionLimits(postgres, label: label)
        let (mode, caPEM) = try resolveStoreTLS(postgres.tls, endpoint: endpoint, label: "\(label).tls", values: values)
        let password = try postgres.password.map { reference throws(ConfigurationError) in
            let text = String(decoding: try values.read(reference, what: "\(label).password (env:NAME or a file)"), as: UTF8.self)
                .trimmingCharacters(in: .newlines)
            guard !text.isEmpty else { throw ConfigurationError("\(values.describe(reference)): \(label).password is empty") }
            return Secret(text)
        }
        return .postgres(
            PostgresSettings(
                endpoint: endpoint, database: postgres.database, user: postgres.user, password: password, tls: mode, caPEM: caPEM,
                poolSize: poolSize, connectTimeout: connectTimeout, acquireTimeout: acquireTimeout, limits: limits))
    }

    /// The server's statement, lock and idle-in-transaction timeouts, the client's call deadline
    /// and TCP keepalive, each in its range; the call deadline outlasts the statement timeout.
    private static func resolveSessionLimits(_ postgres: ConfigurationFile.Postgres, label: String) throws(ConfigurationError)
        -> PostgresSettings.SessionLimits
    {
        var limits = PostgresSettings.SessionLimits()
        func value(_ key: String, _ value: Int?, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
            guard let value else { return nil }
            guard range.contains(value) else { throw ConfigurationError("\(label).\(key) must be \(range.lowerBound)–\(range.upperBound)") }
            return value
        }
        let milliseconds = 100...60_000
        if let v = try value("statementTimeoutMilliseconds", postgres.statementTimeoutMilliseconds, milliseconds) {
            limits.statementTimeout = .milliseconds(v)
        }
        if let v = try value("lockTimeoutMilliseconds", postgres.lockTimeoutMilliseconds, milliseconds) {
            limits.lockTimeout = .milliseconds(v)
        }
        if let v = try value("idleInTransactionTimeoutMilliseconds", postgres.idleInTransactionTimeoutMilliseconds, milliseconds) {
            limits.idleInTransactionTimeout = .milliseconds(v)
        }
        if let v = try value("callTimeoutMilliseconds", postgres.callTimeoutMilliseconds, milliseconds) {
            limits.callTimeout = .milliseconds(v)
        }
        if let v = try value("keepaliveIdleSeconds", postgres.keepaliveIdleSeconds, 1...7200) { limits.keepaliveIdle = .seconds(v) }
        if let v = try value("keepaliveIntervalSeconds", postgres.keepaliveIntervalSeconds, 1...600) {
            limits.keepaliveInterval = .seconds(v)
        }
        if let v = try value("keepaliveCount", postgres.keepaliveCount, 1...30) { limits.keepaliveCount = v }
        guard limits.callTimeout > limits.statementTimeout else {
            throw ConfigurationError(
                "\(label).callTimeoutMilliseconds must be more than statementTimeoutMilliseconds (\(limits.statementTimeout)), "
                    + "so that the server gives up first and says why")
        }
        return limits
    }

    /// `store.postgres.poolSize` when the file gives none: two connections per core of this
    /// instance, 4 to 32. The database's cores are not knowable from here; this instance's are
    /// what bounds how many of its requests can be at the database at once: with two per core,
    /// each core can run one request while another's statement is at the database. More only adds
    /// PostgreSQL backends (each a process) that compete for the database's own cores, and every
    /// instance's pool counts against the server's `max_connections` (100 by default).
    public static func defaultPoolSize(cores: Int) -> Int {
        min(max(cores, 2), 16) * 2
    }

    private static func resolveStoreTLS(
        _ tls: ConfigurationFile.TLS?, endpoint: PostgresSettings.Endpoint, label: String, values: ConfigurationValues
    ) throws(ConfigurationError) -> (PostgresSettings.TLSMode, [UInt8]?) {
        let mode: PostgresSettings.TLSMode
        if let name = tls?.mode {
            guard let named = PostgresSettings.TLSMode(rawValue: name) else {
                throw ConfigurationError("\(label).mode must be disable, require or verify-full")
            }
            mode = named
        } else if case .tcp(let host, _) = endpoint, !["localhost", "127.0.0.1", "::1"].contains(host.lowercased()) {
            mode = .verifyFull
        } else {
            mode = .disable
        }
        if case .socket = endpoint, mode != .disable {
            throw ConfigurationError("\(label).mode: TLS does not apply to a Unix socket; use disable, or connect by host")
        }
        guard let caFile = tls?.caFile else { return (mode, nil) }
        guard mode == .verifyFull else { throw ConfigurationError("\(label).caFile is read only with mode verify-full") }
        let bytes = try values.read(caFile, what: "\(label).caFile")
        guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigurationError("\(values.describe(caFile)): \(label).caFile holds no PEM certificate")
        }
        return (mode, bytes)
    }
}

extension ConfigurationFile {
    /// The `store` section, checked (what `orchard doctor` connects to), and the SQLite folder
    /// used when there is none.
    public func storeSettings(relativeTo folder: String, environment: [String: String]) throws(ConfigurationError) -> (
        store: StoreSettings, stateDirectory: String
    ) {
        let values = ConfigurationValues(folder: folder, environment: environment)
        return (try ServerConfiguration.resolveStore(store, values: values), values.path(stateDirectory ?? "state"))
    }
}
