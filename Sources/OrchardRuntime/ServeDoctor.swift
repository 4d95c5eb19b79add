import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServices

/// `orchard doctor`'s first lines: whether `orchard serve` would start, decided by serve's own
/// code. The configuration is loaded by ``ServerConfiguration/load(path:environment:)``, the
/// function `serve` calls (every processor driver, the trace-export check); then what serve opens
/// before it listens is looked at as far as it can be without serving: the store and the
/// registered merchants' settings it holds (nothing created or migrated) and the payment vault's
/// key file (read, never created).
public func serveDoctorChecks(path: String, environment: [String: String]) async -> [DoctorCheck] {
    let configuration: ServerConfiguration
    do {
        configuration = try ServerConfiguration.load(path: path, environment: environment)
    } catch {
        var checks = [DoctorCheck(subject: "configuration", check: "load", passed: false, detail: error.message)]
        // The store on its own, when the file at least decodes: one broken piece hides no other.
        if let file = try? ConfigurationFile.load(path: path) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            checks.append(await storeDoctorCheck(file, folder: folder, environment: environment))
        }
        return checks
    }
    return await serveDoctorChecks(loaded: configuration)
}

/// The same lines for a configuration already loaded; `store` is the running server's own
/// (`GET /admin/doctor`), else the registered merchants' settings are read from the configured
/// store opened as it is. When the store itself fails, serve stops there: no settings line.
public func serveDoctorChecks(loaded configuration: ServerConfiguration, store: (any MerchantRegistry)? = nil) async -> [DoctorCheck] {
    let storeCheck = await storeDoctorCheck(configuration.store, stateDirectory: configuration.stateDirectory)
    var checks = [configurationCheck(configuration), storeCheck]
    if storeCheck.passed {
        checks.append(await registeredSettingsDoctorCheck(configuration, store: store))
    }
    return checks + [vaultDoctorCheck(configuration)]
}

/// The ✓ line of a configuration `serve` accepts.
func configurationCheck(_ configuration: ServerConfiguration) -> DoctorCheck {
    let merchants = configuration.merchants.count
    let platform = configuration.platform.map { ", platform integrator \($0.merchantIdentifier)" } ?? ""
    return DoctorCheck(
        subject: "configuration", check: "load", passed: true,
        detail:
            "orchard serve accepts it: \(merchants) merchant\(merchants == 1 ? "" : "s")\(platform); it listens on \(configuration.host):\(configuration.port)"
    )
}

/// The payment vault's key as serve opens it (``ServerConfiguration/openPaymentVault()``),
/// without creating the file serve would create at first start.
func vaultDoctorCheck(_ configuration: ServerConfiguration) -> DoctorCheck {
    let subject = "payments"
    let check = "vault key"
    if configuration.vault != nil {
        return DoctorCheck(subject: subject, check: check, passed: true, detail: "payments.vaultKey is set and reads as 64 hex digits")
    }
    let path = configuration.vaultKeyPath
    do {
        let existing = try PaymentVault.existing(path: path)
        return DoctorCheck(
            subject: subject, check: check, passed: true,
            detail: existing == nil
                ? "\(path) does not exist yet: orchard serve creates it at first start (back it up then)"
                : "\(path) holds a 32-byte key")
    } catch {
        return DoctorCheck(subject: subject, check: check, passed: false, detail: error.message)
    }
}
