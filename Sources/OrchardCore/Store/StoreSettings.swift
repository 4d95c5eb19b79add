import Foundation

/// Which store the server and the command-line tools open: the configuration's `store`
/// section, checked. Adapters turn it into their own connections.
public enum StoreSettings: Sendable {
    /// SQLite, `orchard.sqlite` in the state folder: one instance (or processes of one machine).
    case sqlite
    /// A PostgreSQL database that several instances share.
    case postgres(PostgresSettings)
}

/// Where the PostgreSQL store connects, as whom and how securely.
public struct PostgresSettings: Sendable {
    /// TCP to a host, or a Unix socket on this machine.
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file's full path (`/var/run/postgresql/.s.PGSQL.5432`).
        case socket(path: String)
    }

    /// Named as libpq's `sslmode` values, which operators know.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP (a socket, or a private network).
        case disable
        /// Encrypted, the server's certificate not checked: stops eavesdroppers, not impostors.
        case require
        /// Encrypted, and the certificate must chain to `caPEM` (the system's roots when nil) and name the host.
        case verifyFull = "verify-full"
    }

    public var endpoint: Endpoint
    public var database: String
    public var user: String
    /// Nil for a login without one (peer or trust authentication over the socket).
    public var password: Secret?
    public var tls: TLSMode
    /// The PEM certificates to trust for `verify-full`; nil: the system's.
    public var caPEM: [UInt8]?
    /// Connections each instance opens at most.
    public var poolSize: Int
    /// How long opening one connection may take before it counts as failed.
    public var connectTimeout: Duration
    /// How long a request waits for a pooled connection before the store answers
    /// ``StoreError/Code/unavailable``: while the database is down, requests fail in this time
    /// instead of waiting for it to come back.
    public var acquireTimeout: Duration
    /// The bounds each pooled connection asks of the server, and the client's own on a call.
    public var limits: SessionLimits

    public static let defaultConnectTimeout = Duration.seconds(3)
    public static let defaultAcquireTimeout = Duration.seconds(3)

    /// What bounds a store call once it has its connection, whatever the network does. The server
    /// gives up on a statement or a lock wait, and ends a session left idle inside a transaction
    /// (freeing its row locks when the client vanished mid-transaction); TCP keepalive finds a
    /// silent peer on both ends; and the client closes a connection whose call outlasts
    /// `callTimeout`, which a dropped packet's answer never reaches.
    public struct SessionLimits: Sendable, Equatable {
        /// PostgreSQL's `statement_timeout`.
        public var statementTimeout: Duration
        /// PostgreSQL's `lock_timeout`: how long a statement waits for another transaction's row lock.
        public var lockTimeout: Duration
        /// PostgreSQL's `idle_in_transaction_session_timeout`.
        public var idleInTransactionTimeout: Duration
        /// How long one statement or transaction may take once it has its connection; past it the
        /// connection is closed and the call fails as ``StoreError/Code/unavailable``. Longer than
        /// `statementTimeout`, so that the server's own answer comes first when it can.
        public var callTimeout: Duration
        /// TCP keepalive on both ends: idle time before the first probe, then between probes, and
        /// how many unanswered probes end the connection.
        public var keepaliveIdle: Duration
        public var keepaliveInterval: Duration
        public var keepaliveCount: Int

        public init(
            statementTimeout: Duration = .seconds(5), lockTimeout: Duration = .seconds(3),
            idleInTransactionTimeout: Duration = .seconds(10), callTimeout: Duration = .seconds(8),
            keepaliveIdle: Duration = .seconds(10), keepaliveInterval: Duration = .seconds(5), keepaliveCount: Int = 3
        ) {
            self.statementTimeout = statementTimeout
            self.lockTimeout = lockTimeout
            self.idleInTransactionTimeout = idleInTransactionTimeout
            self.callTimeout = callTimeout
            self.keepaliveIdle = keepaliveIdle
            self.keepaliveInterval = keepaliveInterval
            self.keepaliveCount = keepaliveCount
        }

        /// How long unacknowledged data may wait before the kernel drops the connection (Linux's
        /// `TCP_USER_TIMEOUT`, PostgreSQL's `tcp_user_timeout`): as long as keepalive takes to give up.
        public var userTimeout: Duration { keepaliveIdle + keepaliveInterval * keepaliveCount }
    }

    public init(
        endpoint: Endpoint, database: String, user: String, password: Secret?, tls: TLSMode = .disable, caPEM: [UInt8]? = nil,
        poolSize: Int = 10, connectTimeout: Duration = defaultConnectTimeout, acquireTimeout: Duration = defaultAcquireTimeout,
        limits: SessionLimits = SessionLimits()
    ) {
        self.limits = limits
        self.endpoint = endpoint
        self.database = database
        self.user = user
        self.password = password
        self.tls = tls
        self.caPEM = caPEM
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.acquireTimeout = acquireTimeout
    }

    /// `host:port` or the socket's path, for messages.
    public var location: String {
        switch endpoint {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .socket(let path): path
        }
    }
}
