import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardServer
import OrchardServices

/// `orchard doctor`'s look at the store as the file names it (when the whole configuration does
/// not load, the store is still checked on its own): see ``storeDoctorCheck(_:stateDirectory:)``.
public func storeDoctorCheck(_ file: ConfigurationFile, folder: String, environment: [String: String]) async -> DoctorCheck {
    do {
        let (store, stateDirectory) = try file.storeSettings(relativeTo: folder, environment: environment)
        return await storeDoctorCheck(store, stateDirectory: stateDirectory)
    } catch {
        return DoctorCheck(
            subject: "store", check: file.store?.postgres == nil ? "SQLite" : "PostgreSQL", passed: false, detail: error.message)
    }
}

/// The store's check, for `orchard doctor` and `GET /admin/doctor`: PostgreSQL answers with a
/// schema this Orchard can use, or SQLite's folder can be written. Nothing is created or migrated.
public func storeDoctorCheck(_ store: StoreSettings, stateDirectory: String) async -> DoctorCheck {
    let subject = "store"
    switch store {
    case .postgres(let settings):
        var logger = Logger(label: "orchard.doctor")
        logger.logLevel = .critical
        do {
            let detail = try await PostgresStore.inspect(settings, logger: logger)
            return DoctorCheck(subject: subject, check: "PostgreSQL", passed: true, detail: detail)
        } catch {
            // In serve's words (``ServerConfiguration/openStore(logger:)``).
            return DoctorCheck(subject: subject, check: "PostgreSQL", passed: false, detail: "store.postgres: \(error.message)")
        }
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
}
