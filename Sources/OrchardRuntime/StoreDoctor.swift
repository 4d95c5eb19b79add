import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardServer
import OrchardServices

/// `orchard doctor`'s look at the store: PostgreSQL answers with a schema this Orchard can use,
/// or SQLite's folder can be written. Nothing is created or migrated.
public func storeDoctorCheck(_ file: ConfigurationFile, folder: String, environment: [String: String]) async -> DoctorCheck {
    let subject = "store"
    do {
        let (store, stateDirectory) = try file.storeSettings(relativeTo: folder, environment: environment)
        switch store {
        case .postgres(let settings):
            var logger = Logger(label: "orchard.doctor")
            logger.logLevel = .critical
            let detail = try await PostgresStore.inspect(settings, logger: logger)
            return DoctorCheck(subject: subject, check: "PostgreSQL", passed: true, detail: detail)
        case .sqlite:
            var folder = stateDirectory
            while !FileManager.default.fileExists(atPath: folder), folder != "/" {
                folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
            }
            let writable = access(folder, W_OK | X_OK) == 0
            return DoctorCheck(
                subject: subject, check: "SQLite", passed: writable,
                detail: writable
                    ? "\(stateDirectory)/orchard.sqlite (\(folder == stateDirectory ? "the folder is writable" : "\(folder) is writable; the folder is created at start"))"
                    : "\(folder) cannot be written by this user: orchard serve could not keep its database in \(stateDirectory)")
        }
    } catch {
        return DoctorCheck(
            subject: subject, check: file.store?.postgres == nil ? "SQLite" : "PostgreSQL", passed: false, detail: error.message)
    }
}
