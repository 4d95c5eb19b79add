import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import OrchardCore
import PostgresNIO

/// The configuration's settings as postgres-nio's, and connection failures as one line.
extension PostgresStore {
    static func tlsConfiguration(_ settings: PostgresSettings) throws(ConfigurationError) -> TLSConfiguration? {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch settings.tls {
        case .disable:
            return nil
        case .require:
            // libpq's `require`: encrypted, whoever answers.
            tls.certificateVerification = .none
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            if let pem = settings.caPEM {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pem))
                } catch {
                    throw ConfigurationError("store.postgres.tls.caFile: the certificates cannot be read (\(error))")
                }
            }
        }
        return tls
    }

    /// The first, lone connection's configuration (migrations).
    static func connectionConfiguration(_ settings: PostgresSettings) throws(ConfigurationError) -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch settings.endpoint {
        case .tcp(let host, let port):
            var tls = PostgresConnection.Configuration.TLS.disable
            if let context = try tlsConfiguration(settings) {
                do {
                    tls = .require(try NIOSSLContext(configuration: context))
                } catch {
                    throw ConfigurationError("store.postgres.tls: TLS cannot be set up (\(error))")
                }
            }
            configuration = .init(
                host: host, port: port, username: settings.user, password: settings.password?.value, database: settings.database, tls: tls)
        case .socket(let path):
            configuration = .init(
                unixSocketPath: path, username: settings.user, password: settings.password?.value, database: settings.database)
        }
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// One connection outside the pool (migrations, the doctor's look); a failure is one line naming what to fix.
    static func connectOnce(_ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup) async throws(ConfigurationError)
        -> PostgresConnection
    {
        do {
            return try await PostgresConnection.connect(
                on: eventLoops.any(), configuration: try connectionConfiguration(settings), id: 0, logger: logger)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(connectFailure(error, settings: settings))
        }
    }

    /// The pool's configuration: up to `poolSize` connections, none kept open when idle.
    static func clientConfiguration(_ settings: PostgresSettings) throws(ConfigurationError) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch settings.endpoint {
        case .tcp(let host, let port):
            configuration = .init(
                host: host, port: port, username: settings.user, password: settings.password?.value, database: settings.database,
                tls: try tlsConfiguration(settings).map { .require($0) } ?? .disable)
        case .socket(let path):
            configuration = .init(
                unixSocketPath: path, username: settings.user, password: settings.password?.value, database: settings.database)
        }
        configuration.options.maximumConnections = settings.poolSize
        configuration.options.connectTimeout = settings.connectTimeout
        configuration.options.additionalStartupParameters = sessionParameters(settings.limits, endpoint: settings.endpoint)
        return configuration
    }

    /// The bounds each pooled connection asks of the server in its startup message, so they hold
    /// from its first statement without a round trip: the statement, lock and idle-in-transaction
    /// timeouts (the last ends a session whose client vanished mid-transaction, freeing its row
    /// locks), and, over TCP, the server's keepalive and user timeout on its end of the socket.
    static func sessionParameters(_ limits: PostgresSettings.SessionLimits, endpoint: PostgresSettings.Endpoint) -> [(String, String)] {
        var parameters = [
            ("statement_timeout", "\(limits.statementTimeout.milliseconds)"),
            ("lock_timeout", "\(limits.lockTimeout.milliseconds)"),
            ("idle_in_transaction_session_timeout", "\(limits.idleInTransactionTimeout.milliseconds)"),
        ]
        if case .tcp = endpoint {
            parameters += [
                ("tcp_keepalives_idle", "\(limits.keepaliveIdle.components.seconds)"),
                ("tcp_keepalives_interval", "\(limits.keepaliveInterval.components.seconds)"),
                ("tcp_keepalives_count", "\(limits.keepaliveCount)"),
                ("tcp_user_timeout", "\(limits.userTimeout.milliseconds)"),
            ]
        }
        return parameters
    }

    /// `cannot connect to host:port: reason`, or the server's own refusal (a wrong password, an
    /// unknown database), one line, never the password.
    static func connectFailure(_ error: any Error, settings: PostgresSettings) -> String {
        guard let failure = error as? PSQLError else {
            return "cannot connect to \(settings.location): \(error)"
        }
        if let message = failure.serverInfo?[.message] {
            switch failure.sqlState {
            case "28P01", "28000":
                return "\(settings.location) refused the login: \(message)"
            case "3D000":
                return "\(settings.location): \(message) (create it, or fix store.postgres.database)"
            default:
                return "\(settings.location) refused the connection: \(message)" + (failure.sqlState.map { " (SQLSTATE \($0))" } ?? "")
            }
        }
        switch failure.code {
        case .sslUnsupported:
            return "\(settings.location) does not offer TLS; turn it on there, or set store.postgres.tls.mode to disable"
        case .authMechanismRequiresPassword:
            return "\(settings.location) asks user \(settings.user) for a password; set store.postgres.password"
        case .connectionError, .failedToAddSSLHandler:
            return "cannot connect to \(settings.location): \(failure.underlying.map(reason) ?? "\(failure.code)")"
        default:
            return "cannot connect to \(settings.location): \(describe(failure))"
        }
    }

    /// A socket or TLS failure in words.
    static func reason(_ error: any Error) -> String {
        // IOError's own description nests NIO's reason in unbalanced parentheses
        // ("connection reset (error set): Connection refused) (errno: 111)"): the system's words only.
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        if let tls = error as? NIOSSLExtraError, tls == .failedToValidateHostname {
            return "the server's TLS certificate does not name this host (store.postgres.host must be a name the certificate holds)"
        }
        if let tls = error as? NIOSSLError, case .handshakeFailed = tls {
            return "the TLS handshake failed: the server's certificate does not chain to store.postgres.tls.caFile "
                + "(or the system's CAs when there is none), or it has expired (\(tls))"
        }
        if let connect = error as? NIOConnectionError {
            return connect.connectionErrors.first.map { reason($0.error) } ?? "\(connect)"
        }
        return "\(error)"
    }
}
